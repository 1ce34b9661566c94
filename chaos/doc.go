// Package chaos runs txlog the way a user does: as txlogd processes on this machine,
// driven by signals and HTTP. It owns the process launcher used by `txlog local`, by
// the integration tests of other packages and by the chaos verifier.
//
// # The verifier
//
// [Run] is `txlog chaos` (docs/chaos.md): it launches a local cluster (with
// [StartCluster], a [Redis] and a [Network] of fault proxies on the Raft links) or
// drives an existing one through command templates ([Commands]), runs clients that
// record every operation in a [History], injects faults on a seeded [Schedule], and
// then runs the checkers: [CheckNoLostWrites], [CheckPendingResolved],
// [CheckNoDuplicates], [CheckLogsIdentical], [CheckLinearizable] (porcupine),
// [CheckAvailability] and [CheckRestarts], and with the lease workload
// (lease_workload.go: contender processes, [ContenderMain], campaigning with
// lease.Elector and making fenced writes; the pause-holder fault SIGSTOPs a
// holder) [CheckLeases]. Each checker is a pure function of the
// history and the logs (or the faults), so its tests feed it broken histories. The
// result is a [Report], written as text, JSON and HTML. The powerloss fault serves
// each local node's data dir through chaos/lazyfs (powerloss.go).
//
// A [Process] is one node's program across its runs: Start launches it in its own
// process group with stdout and stderr appended to <LogDir>/<ID>.log, and Kill, Stop,
// Pause, Resume, Wait and HTTPAddr act on the current run. A [Cluster] is N such
// processes bootstrapped together with --cluster:
//
//	c, err := chaos.StartCluster(ctx, chaos.ClusterConfig{Bin: txlogd, Dir: t.TempDir()})
//	if err != nil { ... }
//	defer c.Close(context.Background())
//	leader, err := c.Leader(ctx)
//	c.Kill(leader)
//	c.Restart(ctx, leader)
//
// StartCluster reserves free loopback ports for Raft (or takes ClusterConfig's base
// ports), lets each node bind HTTP port 0 and reads the bound address back from
// <data dir>/http.addr, which txlogd writes once it listens. A cluster whose killed
// nodes must come back on the same ports takes an address of its own in 127.0.0.0/8
// (ClusterConfig.Host from PrivateLoopback): a killed node's port is then not free
// for other programs on 127.0.0.1 to take, as it was when a chaos run in CI lost a
// node that could not bind its port again. BuildBinaries builds txlogd for tests and
// for `txlog local`.
//
// Everything that waits polls with a deadline taken from its ctx; nothing sleeps for a
// fixed time.
//
// # Children and an abruptly dying parent
//
// Children run in their own process group, so a Ctrl-C on the terminal reaches only
// the parent, which then decides how to stop them (Cluster.Close). On Linux each child
// also gets SIGKILL when its parent dies (PR_SET_PDEATHSIG), so a crashed or killed
// test binary or `txlog local` leaves no nodes behind. Two limits:
//   - Linux ties that signal to the OS thread that forked the child, not to the
//     process. Go keeps its threads alive, except that a goroutine locked with
//     runtime.LockOSThread that returns without unlocking takes its thread down. Do not
//     call Process.Start from such a goroutine, or its children die with it.
//   - On other Unix systems there is no such signal: children of a parent that dies
//     without running Close keep running and keep their ports.
//
// The package builds on Unix only (it needs SIGSTOP and SIGCONT).
//
// # Imports
//
// chaos imports only client, api/wire, txid, lease (the client's Elector,
// which the lease workload's contenders run) and its own chaos/procstat (what
// /proc says of a process) and chaos/lazyfs (the FUSE file system of the
// powerloss fault, which serves each node's data dir from
// <dir>/cluster/nN.disk) from txlog. It never imports the server (api,
// api/fastpath), node, replication, store or wal: it must see txlog only
// through processes, signals and HTTP.
//
// Must not import: github.com/txlog/txlog/api, github.com/txlog/txlog/api/fastpath, github.com/txlog/txlog/node, github.com/txlog/txlog/replication, github.com/txlog/txlog/store, github.com/txlog/txlog/wal
package chaos
