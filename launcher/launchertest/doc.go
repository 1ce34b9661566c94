// Package launchertest starts a txlogd cluster for a test with the launcher:
// on an address of its own in 127.0.0.0/8 with fixed HTTP ports chosen at run
// time, stopped in t.Cleanup with each node's log tail printed when the test
// failed (StartCluster waits for a leader and readiness; Launch does not).
// The process-level tests (systemtest) and the examples' tests use it.
//
// For the tests of a tool that runs against the cluster (the examples'), it
// also builds the tool beside txlogd (BuildWithTxlogd), starts instances of
// it that end with the test (StartProcess), reads their JSON logs (ReadLog,
// Last, LogRecord) and tells from them which instance holds a lease
// (Holder); WaitFor polls a condition until a deadline.
//
// It imports only launcher from txlog.
//
// Must not import: github.com/txlog/txlog/api, github.com/txlog/txlog/api/fastpath, github.com/txlog/txlog/client, github.com/txlog/txlog/node/..., github.com/txlog/txlog/replication, github.com/txlog/txlog/store, github.com/txlog/txlog/wal
package launchertest
