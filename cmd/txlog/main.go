// Command txlog is the command-line tool of txlog.
//
//	txlog local   run a three-node cluster on this machine, until Ctrl-C
//	txlog submit  run a transaction:  txlog submit greeting '"hello"'
//	txlog get     read a key:         txlog get greeting
//	txlog status  show every node's view of the cluster
//	txlog log     print committed transactions, with --follow as they commit
//	txlog lease   acquire|renew|release|get|list|watch a lease
//	txlog exclusive --lease NAME --ttl 5s -- CMD ARGS...
//	              run CMD only while holding the lease (lease.go)
//
// submit, get, status, log, lease and exclusive talk to the nodes in --targets (default the
// TXLOG_TARGETS environment variable, else the three nodes of `txlog local`)
// through client.Client, which moves on to another node when one is down. Against a
// secured cluster (`txlog local --tls`) they take --token, --cacert, --cert and --key
// (TXLOG_TOKEN, TXLOG_CACERT, TXLOG_CERT, TXLOG_KEY; run.go, credentialFlags).
//
// Exit status: 0 on success, 1 on an error, 2 on a bad command line.
// `txlog help` and `txlog CMD -h` describe each command.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
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

// report prints err, if any, and returns the exit status for it.
func report(err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if _, ok := errors.AsType[*usageError](err); ok {
		fmt.Fprintf(stderr, "txlog: %v (see txlog help)\n", err)
		return 2
	}
	fmt.Fprintf(stderr, "txlog: %v\n", err)
	return 1
}
