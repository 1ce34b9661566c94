package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/lease"
)

const leaseUsage = `usage: txlog lease SUBCOMMAND [flags] NAME

Subcommands:
  acquire [--holder H] [--ttl 5s] NAME            take the lease if it is free
  renew   [--holder H] --token N [--ttl 5s] NAME  extend it
  release [--holder H] --token N NAME             give it back
  get     [--wait 30s --after-token N] NAME       show it (long-poll with --wait)
  list    [-o json|table]                         show every live lease
  (get and list take --consistency linearizable|leader|stale; stale answers
  from the node's own view while the cluster has no leader)
  watch   NAME                                    print each change of holder

The holder defaults to $TXLOG_LEASE_HOLDER, else USER@HOST, the same on every
call, so that one person's acquire, renew and release match. A lease held by
another exits 3, as does a renewal or release whose holder or token does not
match (the message says which).
`

// Environment of the command that txlog exclusive runs.
const (
	envLeaseToken = "TXLOG_LEASE_TOKEN"
	envLeaseName  = "TXLOG_LEASE_NAME"
)

// holderEnv overrides the default holder of lease and exclusive.
const holderEnv = "TXLOG_LEASE_HOLDER"

// defaultHolder names whoever runs txlog, the same on every call:
// $TXLOG_LEASE_HOLDER, else USER@HOST.
func (c *cli) defaultHolder() string {
	if h, _ := c.lookupEnv(holderEnv); strings.TrimSpace(h) != "" {
		return strings.TrimSpace(h)
	}
	name, _ := c.lookupEnv("USER")
	if name == "" {
		if u, err := user.Current(); err == nil {
			name = u.Username
		}
	}
	if name == "" {
		name = "txlog"
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return name + "@" + host
}

func (c *cli) lease(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(c.stderr, leaseUsage)
		return usagef("lease: no subcommand given")
	}
	sub, rest := args[0], args[1:]
	cmd := c.command("lease "+sub, "[flags] NAME")
	var holder *string
	var ttl, wait *time.Duration
	var token, after *uint64
	var out, consistency *string
	switch sub {
	case "acquire", "renew", "release":
		holder = cmd.String("holder", c.defaultHolder(), "who holds the lease, 1 to 128 bytes (env "+holderEnv+"; default USER@HOST)")
		if sub != "release" {
			ttl = cmd.Duration("ttl", lease.DefaultTTL, "time to live, 1s to 1h")
		}
		if sub != "acquire" {
			token = cmd.Uint64("token", 0, "the holder's token (required)")
		}
	case "get":
		wait = cmd.Duration("wait", 0, "long-poll up to this long for a change")
		after = cmd.Uint64("after-token", 0, "with --wait: answer once the token passes this or the lease is free")
		consistency = consistencyFlag(cmd)
	case "list":
		out = cmd.output(outputJSON)
		consistency = consistencyFlag(cmd)
	case "watch":
	case "help", "-h", "--help":
		fmt.Fprint(c.stdout, leaseUsage)
		return nil
	default:
		return usagef("lease: unknown subcommand %q", sub)
	}
	targets := cmd.targets() // after --token: the bearer token is then --auth-token
	pos, err := cmd.parse(rest)
	if err != nil {
		return err
	}
	switch {
	case sub == "list" && len(pos) != 0:
		return usagef("lease list takes no arguments, got %q", pos)
	case sub != "list" && len(pos) != 1:
		return usagef("lease %s takes one NAME, got %d arguments", sub, len(pos))
	case token != nil && *token == 0:
		return usagef("lease %s: --token is required", sub)
	case ttl != nil && (*ttl < wire.MinLeaseTTL || *ttl > wire.MaxLeaseTTL):
		return usagef("--ttl %v: want %v to %v", *ttl, wire.MinLeaseTTL, wire.MaxLeaseTTL)
	case out != nil && checkOutput(*out) != nil:
		return checkOutput(*out)
	case consistency != nil && checkConsistency(*consistency) != nil:
		return checkConsistency(*consistency)
	}
	var ro wire.ReadOptions
	if consistency != nil {
		ro.Consistency = *consistency
	}
	cl, err := cmd.newClient(*targets)
	if err != nil {
		return err
	}
	var name string
	if len(pos) == 1 {
		name = pos[0]
	}
	switch sub {
	case "acquire":
		res, err := cl.AcquireLease(ctx, name, *holder, *ttl)
		return c.leaseAnswer(res, err)
	case "renew":
		res, err := cl.RenewLease(ctx, name, *holder, *token, *ttl)
		return c.leaseAnswer(res, fencedWhy(err, name, *holder, *token))
	case "release":
		if err := cl.ReleaseLease(ctx, name, *holder, *token); err != nil {
			return c.leaseAnswer(wire.LeaseResult{}, fencedWhy(err, name, *holder, *token))
		}
		return printJSON(c.stdout, wire.LeaseReleased{Name: name, Released: true})
	case "get":
		l, err := cl.LeaseWith(ctx, name, *wait, *after, ro)
		if err != nil {
			return about(fmt.Sprintf("lease %q", name), noLeader(cl, err))
		}
		return printJSON(c.stdout, l)
	case "list":
		ls, err := cl.Leases(ctx, ro)
		if err != nil {
			return fmt.Errorf("list leases: %w", noLeader(cl, err))
		}
		if ls == nil {
			ls = []wire.Lease{}
		}
		if *out == outputTable {
			return printTable(c.stdout, []string{"NAME", "HOLDER", "TOKEN", "TTL", "EXPIRES IN"}, len(ls), func(i int) []string {
				l := ls[i]
				return []string{l.Name, l.Holder, strconv.FormatUint(l.Token, 10), l.TTL, l.ExpiresIn}
			})
		}
		return printJSON(c.stdout, wire.LeaseList{Leases: ls})
	}
	return c.watchLease(ctx, cl, name, *cmd.timeout)
}

// watchLease prints the lease now, then each change of holder, until ctx
// ends; it fails once no node has answered for timeout. Each long poll
// waits up to timeout, so that a node that stops answering is noticed.
func (c *cli) watchLease(ctx context.Context, cl *client.Client, name string, timeout time.Duration) error {
	var after uint64
	first := true
	since := time.Now()
	var last error
	for {
		wait := timeout
		if first {
			wait = 0
		}
		pctx, cancel := context.WithDeadline(ctx, since.Add(timeout+wait))
		l, err := cl.Lease(pctx, name, wait, after)
		cancel()
		if ctx.Err() != nil {
			return nil // Ctrl-C ends watch
		}
		switch {
		case errors.Is(err, wire.ErrNotFound):
			l = wire.Lease{Name: name, ExpiresIn: "0s"}
		case err != nil:
			last = err
			if time.Since(since) >= timeout {
				return fmt.Errorf("lease watch %q: no node answered for %v: %w", name, timeout, last)
			}
			if sleepCtx(ctx, 100*time.Millisecond) != nil {
				return nil
			}
			continue
		}
		since = time.Now()
		if first || l.Token != after {
			if err := printJSON(c.stdout, l); err != nil {
				return err
			}
		}
		first, after = false, l.Token
	}
}

// fencedWhy says, for a renewal or release refused as fenced, whether the
// holder or the token did not match, or the lease is no longer held.
func fencedWhy(err error, name, holder string, token uint64) error {
	le, ok := errors.AsType[*wire.LeaseError](err)
	if !ok || le.Code != wire.CodeFenced {
		return err
	}
	l := le.Lease
	var why string
	switch {
	case l.Token == 0 || l.Holder == "":
		why = "the lease is free (it expired or was released)"
	case l.Holder == holder && l.Token == token:
		why = "the lease expired"
	case l.Holder != holder && l.Token != token:
		why = fmt.Sprintf("neither the holder nor the token matches: %q holds it with token %d", l.Holder, l.Token)
	case l.Holder != holder:
		why = fmt.Sprintf("the holder does not match: %q holds it (token %d); --holder %q", l.Holder, l.Token, holder)
	default:
		why = fmt.Sprintf("the token does not match: the lease's token is %d, --token %d", l.Token, token)
	}
	return fmt.Errorf("lease %q: %w: %s", name, err, why)
}

// leaseAnswer prints a lease write's answer: the lease, or for a refusal the
// lease as it is and the error.
func (c *cli) leaseAnswer(res wire.LeaseResult, err error) error {
	if le, ok := errors.AsType[*wire.LeaseError](err); ok {
		if perr := printJSON(c.stdout, le.Lease); perr != nil {
			return perr
		}
	}
	if err != nil {
		return err
	}
	return printJSON(c.stdout, res)
}

// exclusive runs a command only while this process holds a lease.
func (c *cli) exclusive(ctx context.Context, args []string) error {
	cmd := c.command("exclusive", "--lease NAME [flags] -- CMD [ARGS...]")
	targets := cmd.targets()
	name := cmd.String("lease", "", "the lease's name (required)")
	holder := cmd.String("holder", c.defaultHolder(), "who holds the lease, 1 to 128 bytes (env "+holderEnv+"; default USER@HOST)")
	ttl := cmd.Duration("ttl", lease.DefaultTTL, "time to live, 1s to 1h; renewed every ttl/3")
	margin := cmd.Duration("margin", 0, "stop the command this long before the lease could run out when renewals fail (default ttl/5)")
	grace := cmd.Duration("grace", 10*time.Second, "after SIGTERM, the time the command has to exit before SIGKILL; at most margin/2 when the lease is lost")
	pos, argv, err := cmd.parseSplit(args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) != 0:
		return usagef("exclusive: put the command after --, got %q before it", pos)
	case len(argv) == 0:
		return usagef("exclusive: no command given after --")
	case *name == "":
		return usagef("exclusive: --lease is required")
	}
	// Before campaigning: a command that cannot run must not take the lease.
	if _, err := exec.LookPath(argv[0]); err != nil {
		return exitWith(exitNotFound, fmt.Errorf("exclusive: %w", err))
	}
	cl, err := cmd.newClient(*targets)
	if err != nil {
		return err
	}
	w := newWatchdog(cl, *cmd.timeout)
	e, err := lease.New(lease.Config{Client: w, Name: *name, Holder: *holder, TTL: *ttl, Margin: *margin})
	if err != nil {
		return usagef("exclusive: %v", err)
	}
	m := *margin
	if m == 0 {
		m = *ttl / 5
	}
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	w.start(cancel)
	err = e.Run(cctx, func(ctx context.Context, token uint64) error {
		w.stop() // campaigning is over: the Elector handles renewals that fail
		return c.runExclusive(ctx, argv, *name, token, *grace, m)
	})
	if cause := context.Cause(cctx); errors.Is(cause, errNoAnswer) && ctx.Err() == nil {
		return fmt.Errorf("exclusive: campaign for lease %q: %w", *name, cause)
	}
	return err
}

// exitNotFound is the exit status of exclusive for a command it cannot
// find, as a shell's.
const exitNotFound = 127

// errNoAnswer is the cause of a campaign that no node answered for --timeout.
var errNoAnswer = errors.New("no node answered")

// watchdog is the lease.Client of exclusive's Elector: it ends the campaign
// (through the cancel given to start) once no node has answered for
// timeout. A lease held by another, or a long poll that ends, is an answer:
// the campaign then waits as long as the lease is held.
type watchdog struct {
	lease.Client
	timeout time.Duration

	mu      sync.Mutex
	timer   *time.Timer // nil before start and after stop
	last    error       // the last failure, for the message
	stopped bool
}

func newWatchdog(cl lease.Client, timeout time.Duration) *watchdog {
	return &watchdog{Client: cl, timeout: timeout}
}

// start arms the watchdog.
func (w *watchdog) start(cancel context.CancelCauseFunc) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.timer = time.AfterFunc(w.timeout, func() {
		w.mu.Lock()
		last := w.last
		w.mu.Unlock()
		if last != nil {
			cancel(fmt.Errorf("%w for %v: %w", errNoAnswer, w.timeout, last))
			return
		}
		cancel(fmt.Errorf("%w for %v", errNoAnswer, w.timeout))
	})
}

// stop disarms the watchdog for good.
func (w *watchdog) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	if w.timer != nil {
		w.timer.Stop()
	}
}

// heard records the result of a call: an answer resets the time.
func (w *watchdog) heard(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err == nil || errors.Is(err, wire.ErrLeaseHeld) || errors.Is(err, wire.ErrNotFound) {
		if !w.stopped && w.timer != nil {
			w.timer.Reset(w.timeout)
		}
		return
	}
	w.last = err
}

func (w *watchdog) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (wire.LeaseResult, error) {
	res, err := w.Client.AcquireLease(ctx, name, holder, ttl)
	w.heard(err)
	return res, err
}

func (w *watchdog) Lease(ctx context.Context, name string, wait time.Duration, afterToken uint64) (wire.Lease, error) {
	l, err := w.Client.Lease(ctx, name, wait, afterToken)
	w.heard(err)
	return l, err
}

// sleepCtx waits d, or until ctx ends (its error).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// childExit is the result of exclusive for its command's end: nil for
// status 0, else an error that exits with the command's status, 128+N after
// signal N.
func childExit(name string, err error) error {
	ee, ok := errors.AsType[*exec.ExitError](err)
	if !ok {
		if err != nil {
			return fmt.Errorf("exclusive: %s: %w", name, err)
		}
		return nil
	}
	code := ee.ExitCode()
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	if code <= 0 {
		code = exitFailed
	}
	return exitWith(code, fmt.Errorf("exclusive: %s: %w", name, err))
}

// runExclusive runs argv until it exits or ctx ends; then it sends SIGTERM,
// and SIGKILL after grace (after margin/2 at most when the lease was lost).
func (c *cli) runExclusive(ctx context.Context, argv []string, name string, token uint64, grace, margin time.Duration) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), envLeaseToken+"="+strconv.FormatUint(token, 10), envLeaseName+"="+name)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, c.stdout, c.stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("exclusive: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		return childExit(argv[0], err)
	case <-ctx.Done():
	}
	lost := errors.Is(context.Cause(ctx), lease.ErrLost)
	if lost {
		grace = min(grace, margin/2)
		fmt.Fprintf(c.stderr, "txlog: lease %q lost; stopping %s\n", name, argv[0])
	}
	cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	var werr error
	select {
	case werr = <-exited:
	case <-t.C:
		cmd.Process.Kill()
		werr = <-exited
	}
	if lost || werr == nil {
		return context.Cause(ctx)
	}
	// Stopped because txlog was (Ctrl-C, SIGTERM): exit as the command did.
	return childExit(argv[0], werr)
}
