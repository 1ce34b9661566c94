// Package chaos runs txlog the way a user does: as txlogd processes on this machine,
// driven by signals and HTTP, and checks what the clients saw. Its checkers are also
// what the process-level tests (systemtest) check their histories with.
//
// # The verifier
//
// [Run] is `txlog chaos` (docs/chaos.md): it launches a local cluster (with
// launcher.StartCluster, a launcher.Redis and a [Network] of fault proxies on the Raft links) or
// drives an existing one through command templates ([Commands]), runs clients that
// record every operation in a [History], injects faults on a seeded [Schedule], and
// then runs the checkers: [CheckNoLostWrites], [CheckPendingResolved],
// [CheckNoDuplicates], [CheckLogsIdentical], [CheckLinearizable] (porcupine),
// [CheckAvailability] and [CheckRestarts], and with the lease workload
// (lease_workload.go: contender processes, [ContenderMain], campaigning with
// lease.Elector and making fenced writes; the pause-holder fault SIGSTOPs a
// holder) [CheckLeases], and with the consumer workload (consumer_workload.go:
// consumer processes, [ConsumerProcMain], projecting the clients' writes with
// consumer.ExactlyOnce; the pause-consumer fault SIGSTOPs the one that holds the
// group's lease) [CheckConsumer]. Both workloads' child processes share child.go
// ([CheckVersionChains] is for the process-level tests' logs). Each checker is a pure function of the
// history and the logs (or the faults), so its tests feed it broken histories. The
// result is a [Report], written as text, JSON and HTML. The powerloss fault serves
// each local node's data dir through chaos/lazyfs (powerloss.go).
//
// A run against a secured cluster ([Config].TLS for a local one, launched with
// launcher.SecureConfig; [Config].Credentials for a deployment) gives every
// client of the run the same [Credentials] (creds.go): the workload, the
// monitor, the checks' reads, and the contenders and consumers, which take
// the TLS files as flags and the token from their environment ([TokenEnv]).
//
// The processes come from the launcher package (launcher.StartCluster,
// launcher.StartRedis), which chaos uses as `txlog local` and the process-level
// tests do. Everything that waits polls with a deadline taken from its ctx;
// nothing sleeps for a fixed time. The package builds on Unix only.
//
// # Imports
//
// chaos imports only client, api/wire, txid, launcher, lease (the client's
// Elector, which the lease workload's contenders run), consumer (which the
// consumer workload's processes run) and its own
// chaos/procstat (what /proc says of a process) and chaos/lazyfs (the FUSE
// file system of the powerloss fault, which serves each node's data dir from
// <dir>/cluster/nN.disk) from txlog. It never imports the server (api,
// api/fastpath), node, replication, store or wal: it must see txlog only
// through processes, signals and HTTP.
//
// Must not import: github.com/txlog/txlog/api, github.com/txlog/txlog/api/fastpath, github.com/txlog/txlog/node, github.com/txlog/txlog/replication, github.com/txlog/txlog/store, github.com/txlog/txlog/wal
package chaos
