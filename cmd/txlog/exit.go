package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/txlog/txlog/api/wire"
)

// Exit statuses of txlog, documented in docs/operations.md ("Exit statuses of
// txlog"). A script tells the outcome of a write by them alone.
const (
	exitOK       = 0 // done; a transaction committed
	exitFailed   = 1 // anything else: a node refused, none answered, a bad file
	exitUsage    = 2 // a bad command line
	exitRejected = 3 // a conflict: --if-version failed, a lease held or fenced, a member that exists
	exitPending  = 4 // accepted, not yet committed (202, --ack accepted)
	exitUnknown  = 5 // the outcome of a write is unknown: look it up by its idempotency key
)

// exitError ends txlog with status code; err is the line printed for it.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func (e *exitError) Unwrap() error { return e.err }

// exitWith returns err as an error that ends txlog with status code.
func exitWith(code int, err error) error { return &exitError{code: code, err: err} }

// exitCode returns the exit status for err, the result of a command.
func exitCode(err error) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if e, ok := errors.AsType[*exitError](err); ok {
		return e.code
	}
	if _, ok := errors.AsType[*usageError](err); ok {
		return exitUsage
	}
	if errors.Is(err, wire.ErrUnknownOutcome) {
		return exitUnknown
	}
	if isConflict(err) {
		return exitRejected
	}
	return exitFailed
}

// isConflict reports whether err is a node's answer 409: the request was
// refused for the state it found (a lease held or fenced, a member or node
// number taken).
func isConflict(err error) bool {
	if errors.Is(err, wire.ErrLeaseHeld) || errors.Is(err, wire.ErrFenced) || errors.Is(err, wire.ErrTxIDConflict) {
		return true
	}
	if e, ok := errors.AsType[*wire.Error](err); ok {
		status, _ := wire.Status(e.Code)
		return status == http.StatusConflict
	}
	return false
}

// report prints err, if any, as one line on stderr and returns the exit
// status for it.
func report(err error, stderr io.Writer) int {
	code := exitCode(err)
	if code == exitOK {
		return code
	}
	msg := strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " ")
	if code == exitUsage {
		fmt.Fprintf(stderr, "txlog: %s (see txlog help)\n", msg)
		return code
	}
	fmt.Fprintf(stderr, "txlog: %s\n", msg)
	return code
}

// about wraps err, the failure of op (such as `get "k"`), with op, but
// for a node's 404: its message names the kind and the id that is missing,
// and op would say it twice.
func about(op string, err error) error {
	if errors.Is(err, wire.ErrNotFound) {
		return err
	}
	return fmt.Errorf("%s: %w", op, err)
}
