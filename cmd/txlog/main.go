// Command txlog is the command-line tool of txlog. `txlog help` lists its
// commands, from the one command table in run.go (commands), which also
// dispatches them and feeds the shell completion (completion.go):
//
//	txlog local   run a three-node cluster on this machine, until Ctrl-C
//	txlog submit  run a transaction:  txlog submit greeting '"hello"'
//	txlog get     read a key:         txlog get greeting
//	txlog watch   print the changes of a key or prefix as they commit
//	txlog status  show every node's view of the cluster
//	txlog log     print committed transactions, with --follow as they commit
//	txlog member  list|add|remove|replace; txlog leader transfer [ID] (member.go)
//	txlog lease   acquire|renew|release|get|list|watch a lease
//	txlog exclusive --lease NAME --ttl 5s -- CMD ARGS...
//	              run CMD only while holding the lease (lease.go)
//	txlog restore FILE --data-dir DIR --id ID
//	              seed an empty data dir from a backup offline, as txlogd
//	              --restore does (restore.go; the one command that imports node)
//
// The commands that talk to nodes use the nodes in --targets (default the
// TXLOG_TARGETS environment variable, else the three nodes of `txlog local`)
// through client.Client, which moves on to another node when one is down,
// trying the nodes not seen failing first (endpoints.go), each call bounded by
// --timeout. Against a secured cluster (`txlog local --tls`) they take --token,
// --cacert, --cert and --key (TXLOG_TOKEN, TXLOG_CACERT, TXLOG_CERT,
// TXLOG_KEY; run.go, credentialFlags).
//
// Exit statuses (exit.go, docs/operations.md): 0 done (committed), 1 failed,
// 2 a bad command line, 3 rejected (a conflict), 4 pending, 5 unknown outcome;
// exclusive exits with its command's status.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// After the first signal the default handling comes back, so a second Ctrl-C
	// ends txlog at once (its nodes then die with it where Linux allows; see chaos).
	context.AfterFunc(ctx, stop)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(report(err, os.Stderr))
}
