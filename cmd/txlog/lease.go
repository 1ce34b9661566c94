package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/lease"
)

const leaseUsage = `usage: txlog lease SUBCOMMAND [flags] NAME

Subcommands:
  acquire --holder H --ttl 5s NAME            take the lease if it is free
  renew   --holder H --token N --ttl 5s NAME  extend it
  release --holder H --token N NAME           give it back
  get     [--wait 30s --after-token N] NAME   show it (long-poll with --wait)
  list                                        show every live lease
  watch   NAME                                print each change of holder
`

// Environment of the command that txlog exclusive runs.
const (
	envLeaseToken = "TXLOG_LEASE_TOKEN"
	envLeaseName  = "TXLOG_LEASE_NAME"
)

// defaultHolder names this process: host:pid.
func defaultHolder() string {
	host, err := os.Hostname()
	if err != nil {
		host = "txlog"
	}
	return host + ":" + strconv.Itoa(os.Getpid())
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
	switch sub {
	case "acquire", "renew", "release":
		holder = cmd.String("holder", defaultHolder(), "who holds the lease, 1 to 128 bytes")
		if sub != "release" {
			ttl = cmd.Duration("ttl", lease.DefaultTTL, "time to live, 1s to 1h")
		}
		if sub != "acquire" {
			token = cmd.Uint64("token", 0, "the holder's token (required)")
		}
	case "get":
		wait = cmd.Duration("wait", 0, "long-poll up to this long for a change")
		after = cmd.Uint64("after-token", 0, "with --wait: answer once the token passes this or the lease is free")
	case "list", "watch":
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
		return c.leaseAnswer(res, err)
	case "release":
		if err := cl.ReleaseLease(ctx, name, *holder, *token); err != nil {
			return c.leaseAnswer(wire.LeaseResult{}, err)
		}
		return printJSON(c.stdout, wire.LeaseReleased{Name: name, Released: true})
	case "get":
		l, err := cl.Lease(ctx, name, *wait, *after)
		if err != nil {
			return fmt.Errorf("lease %q: %w", name, err)
		}
		return printJSON(c.stdout, l)
	case "list":
		ls, err := cl.Leases(ctx)
		if err != nil {
			return fmt.Errorf("list leases: %w", err)
		}
		return printJSON(c.stdout, wire.LeaseList{Leases: ls})
	}
	// watch
	e, err := lease.New(lease.Config{Client: cl, Name: name, Holder: "watch"})
	if err != nil {
		return err
	}
	for l := range e.Observe(ctx) {
		if err := printJSON(c.stdout, l); err != nil {
			return err
		}
	}
	return nil
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
	holder := cmd.String("holder", defaultHolder(), "who holds the lease, 1 to 128 bytes")
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
	cl, err := cmd.newClient(*targets)
	if err != nil {
		return err
	}
	e, err := lease.New(lease.Config{Client: cl, Name: *name, Holder: *holder, TTL: *ttl, Margin: *margin})
	if err != nil {
		return usagef("exclusive: %v", err)
	}
	m := *margin
	if m == 0 {
		m = *ttl / 5
	}
	return e.Run(ctx, func(ctx context.Context, token uint64) error {
		return c.runExclusive(ctx, argv, *name, token, *grace, m)
	})
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
		if err != nil {
			return fmt.Errorf("exclusive: %s: %w", argv[0], err)
		}
		return nil
	case <-ctx.Done():
	}
	if errors.Is(context.Cause(ctx), lease.ErrLost) {
		grace = min(grace, margin/2)
		fmt.Fprintf(c.stderr, "txlog: lease %q lost; stopping %s\n", name, argv[0])
	}
	cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-exited:
	case <-t.C:
		cmd.Process.Kill()
		<-exited
	}
	return context.Cause(ctx)
}
