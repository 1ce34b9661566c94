// Package systemtest holds the process-level tests of txlog: each test starts
// real txlogd processes (built once per run by TestMain with
// launcher.BuildBinaries) on loopback ports chosen at run time, often with a
// real redis-server (node/parking/redistest), and drives them the way an
// operator or a client does, over HTTP and with signals. Failovers, the ack
// levels, lost disks (amnesia), disk faults, forwarding, idempotency keys,
// leases and their holders, membership changes, the store's commit interval,
// the debug listener, the hostile-input table of the client port (raw
// TCP exchanges: request smuggling, malformed lines, slow and stalled
// clients, --max-streams) and declared lengths on the peer link (propose
// streams, internal requests, Raft's messages) are tested here; what the nodes answered and logged
// is checked with the chaos checkers (chaos.CheckNoLostWrites,
// CheckPendingResolved, CheckNoDuplicates, CheckLogsIdentical,
// CheckVersionChains).
//
// The package has no code besides this file and its tests. Run it with
//
//	go test -count=1 ./systemtest/
//
// (several minutes; -run selects tests, -race works but is slower). It needs
// the go command on PATH (to build txlogd) and redis-server for the tests
// with Redis, which skip without one unless CI is set, and Debian's chromium
// for the dashboard test, which fails without it (scripts/test.sh installs
// both). TXLOG_SCREENSHOT=file also saves that test's screenshot there;
// TestDashboardHealth saves one per state in its artifact directory (go test
// -artifacts -outputdir DIR keeps them; the log names them). TXLOG_TEST_DIR, when
// set, puts the clusters' data dirs and logs there instead of a temporary
// directory, to look at them after a run.
//
// TestThreeHosts (Linux only) runs deploy/compose.yaml's three nodes and its
// Redis each on a host of its own: a network namespace with the service's
// address, joined to the others by a bridge in a namespace of its own, with
// the command line the compose file gives (read with go.yaml.in/yaml/v3, so
// the two cannot drift). It needs root, ip (iproute2) and redis-server; it
// skips without them, or fails when CI is set. The host's own network is
// never changed: the test's sockets are opened inside the namespaces, each
// by a locked thread that enters one for the dial and goes back before it is
// unlocked, and the namespaces are deleted when the test ends.
//
// TestDocsExecuted runs every curl example of README.md and docs/*.md against
// a real cluster and compares each answer with the doc's, field by field
// (internal/docexec; the convention is in docs/style.md, "Examples that run").
//
// Like chaos, the tests see txlog only from the outside: they import the
// launcher, chaos's checkers, api/wire, the client, chromedp, lease (the Elector that
// the lease tests' holder processes run), txid and alert (the webhook body
// the alert test's receiver decodes), internal/docexec, and never the server (api,
// api/fastpath), node, replication, store or wal. This file imports nothing;
// TestImports checks the tests' own dependencies.
//
// Must not import: github.com/txlog/txlog/api, github.com/txlog/txlog/api/fastpath, github.com/txlog/txlog/node, github.com/txlog/txlog/replication, github.com/txlog/txlog/store, github.com/txlog/txlog/wal
package systemtest
