package command

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

// Run is a program's body: it reads args (without the program name), writes
// its results to stdout and its flag errors and progress to stderr, and
// returns when ctx ends at the latest.
type Run func(ctx context.Context, args []string, stdout, stderr io.Writer) error

// Main calls run with os.Args[1:], os.Stdout and os.Stderr and a context that
// ends on SIGINT or SIGTERM, and exits: 0 when run returns nil or
// flag.ErrHelp (after -h, whose usage the flag set printed), else 1 after a
// line "name: error" on stderr. Signals after the first are caught too, so
// run gets to stop what it started.
func Main(name string, run Run) { main(name, run, false) }

// MainOnce is Main whose context catches only the first signal: after it the
// default handling comes back, so a second Ctrl-C ends the program at once.
func MainOnce(name string, run Run) { main(name, run, true) }

func main(name string, run Run, once bool) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	if once {
		context.AfterFunc(ctx, stop)
	}
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}
