// Package launcher runs txlog's programs as processes on this machine: it
// builds txlogd, starts, stops, kills, pauses and restarts txlogd processes and
// clusters of them on loopback ports chosen at run time, and runs a real
// redis-server. `txlog local`, `txlog bench --local`, the chaos verifier, the
// process-level tests (systemtest), the examples' tests and tools/ use it. It
// owns the one free-port helper ([FreePorts], [FreeRange], [PrivateLoopback])
// and the one set of process attributes for children ([SysProcAttr]).
//
// A [Process] is one program across its runs: Start launches it in its own
// process group with stdout and stderr appended to <LogDir>/<ID>.log, and Kill,
// Stop, Pause, Resume, Wait and HTTPAddr act on the current run. A [Cluster] is
// N such processes bootstrapped together with --cluster:
//
//	c, err := launcher.StartCluster(ctx, launcher.ClusterConfig{Bin: txlogd, Dir: t.TempDir()})
//	if err != nil { ... }
//	defer c.Close(context.Background())
//	leader, err := c.Leader(ctx)
//	c.Kill(leader)
//	c.Restart(ctx, leader)
//
// StartCluster reserves free loopback ports for Raft (or takes ClusterConfig's
// base ports), lets each node bind HTTP port 0 and reads the bound address back
// from <data dir>/http.addr, which txlogd writes once it listens. A cluster
// whose killed nodes must come back on the same ports takes an address of its
// own in 127.0.0.0/8 (ClusterConfig.Host from PrivateLoopback): a killed node's
// port is then not free for other programs on 127.0.0.1 to take, as it was when
// a chaos run in CI lost a node that could not bind its port again.
// [BuildBinaries] builds txlogd for tests and for `txlog local`. A [Redis] is a
// redis-server with an append-only file fsynced on every write, on a port that
// stays the same across its restarts. launchertest starts a cluster for a test
// and stops it in t.Cleanup.
//
// Cluster's methods are split by job onto part types it embeds, so callers call
// them on *Cluster: nodeControl (nodecontrol.go) has Kill, Stop, Pause, Resume,
// Restart and Close; clusterView (clusterview.go) has Leader, WaitReady and the
// status polls they make.
//
// A secured cluster (ClusterConfig.Secure, secure.go) gets a throwaway CA and
// a certificate per node (IP SANs of its loopback host) under <Dir>/tls,
// client TLS on the HTTP ports (mutual when asked), mutual peer TLS on the
// Raft ports and an auth file with an admin token; [Cluster.Security] gives a
// test the CA, a client certificate, the token and a way to add lines to the
// auth file.
//
// Everything that waits polls with a deadline taken from its ctx ([Poll]);
// nothing sleeps for a fixed time.
//
// # Children and an abruptly dying parent
//
// Children run in their own process group, so a Ctrl-C on the terminal reaches
// only the parent, which then decides how to stop them (Cluster.Close). On Linux
// each child also gets SIGKILL when its parent dies (PR_SET_PDEATHSIG), so a
// crashed or killed test binary or `txlog local` leaves no nodes behind. Two
// limits:
//   - Linux ties that signal to the OS thread that forked the child, not to the
//     process. Go keeps its threads alive, except that a goroutine locked with
//     runtime.LockOSThread that returns without unlocking takes its thread down.
//     Do not call Process.Start from such a goroutine, or its children die with
//     it.
//   - On other Unix systems there is no such signal: children of a parent that
//     dies without running Close keep running and keep their ports.
//
// The package builds on Unix only (it needs SIGSTOP and SIGCONT).
//
// # Imports
//
// launcher imports only api/wire (the answer of GET /v1/cluster), txid and
// internal/certgen (the throwaway CA of a secured cluster) from txlog. It never imports the server (api, api/fastpath), the client, node,
// replication, store or wal: it runs txlogd as a process and sees it only
// through signals, files and HTTP.
//
// Must not import: github.com/txlog/txlog/api, github.com/txlog/txlog/api/fastpath, github.com/txlog/txlog/client, github.com/txlog/txlog/node/..., github.com/txlog/txlog/replication, github.com/txlog/txlog/store, github.com/txlog/txlog/wal
package launcher
