package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/api/wire"
)

// fakeLeases is a fakeBackend with one lease table in memory: grants when
// free, lease_held otherwise, renewals and releases by holder and token, and
// fenced renewals once fenceRenewals is set. Expiry is not modelled.
type fakeLeases struct {
	fakeBackend
	mu            sync.Mutex
	changed       chan struct{} // closed and replaced at each change
	next          uint64
	leases        map[string]wire.Lease
	fenceRenewals bool
	renewals      int
}

func newFakeLeases() *fakeLeases {
	return &fakeLeases{next: 10, leases: map[string]wire.Lease{}, changed: make(chan struct{})}
}

// change wakes the long polls; the caller holds f.mu.
func (f *fakeLeases) change() {
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeLeases) AcquireLease(_ context.Context, req wire.LeaseRequest, _ bool) (wire.LeaseResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, held := f.leases[req.Name]
	if req.Token != 0 {
		f.renewals++
		if !held || l.Token != req.Token || l.Holder != req.Holder || f.fenceRenewals {
			return wire.LeaseResult{}, &wire.LeaseError{Code: wire.CodeFenced, Message: "fenced", Lease: l}
		}
		return wire.LeaseResult{Lease: l}, nil
	}
	switch {
	case held && l.Holder == req.Holder:
		return wire.LeaseResult{Lease: l}, nil
	case held:
		return wire.LeaseResult{}, &wire.LeaseError{Code: wire.CodeLeaseHeld, Message: "held by " + l.Holder, Lease: l}
	}
	f.next++
	l = wire.Lease{Name: req.Name, Holder: req.Holder, Token: f.next, TTL: req.TTL.String(), ExpiresIn: req.TTL.String()}
	f.leases[req.Name] = l
	f.change()
	return wire.LeaseResult{Lease: l, Acquired: true}, nil
}

func (f *fakeLeases) ReleaseLease(_ context.Context, name, holder string, token uint64, _ bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, held := f.leases[name]
	if held && (l.Holder != holder || l.Token != token) {
		return &wire.LeaseError{Code: wire.CodeFenced, Message: "fenced", Lease: l}
	}
	delete(f.leases, name)
	f.change()
	return nil
}

// Lease long-polls as a node does: with wait, while the lease is free (after
// 0) or held with a token up to after.
func (f *fakeLeases) Lease(ctx context.Context, name string, wait time.Duration, after uint64, _ wire.ReadOptions) (wire.Lease, error) {
	deadline := time.After(wait)
	for {
		f.mu.Lock()
		l, ok := f.leases[name]
		changed := f.changed
		f.mu.Unlock()
		done := wait <= 0 || (after == 0 && ok) || (after > 0 && !(ok && l.Token <= after))
		if !done {
			select {
			case <-changed:
				continue
			case <-ctx.Done():
				return wire.Lease{}, ctx.Err()
			case <-deadline:
			}
		}
		if !ok {
			return wire.Lease{}, wire.ErrNotFound
		}
		return l, nil
	}
}

func (f *fakeLeases) Leases(context.Context, wire.ReadOptions) ([]wire.Lease, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []wire.Lease
	for _, l := range f.leases {
		out = append(out, l)
	}
	return out, nil
}

// state returns the number of leases held and of renewals asked.
func (f *fakeLeases) state() (int, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.leases), f.renewals
}

func serveLeases(t *testing.T, f *fakeLeases) string {
	t.Helper()
	srv := httptest.NewServer(api.NewServer(api.Config{}, f))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestLeaseUsage(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"no subcommand", []string{"lease"}, "no subcommand"},
		{"unknown subcommand", []string{"lease", "steal", "l"}, `unknown subcommand "steal"`},
		{"no name", []string{"lease", "acquire"}, "takes one NAME"},
		{"two names", []string{"lease", "get", "a", "b"}, "takes one NAME"},
		{"ttl too short", []string{"lease", "acquire", "--ttl", "100ms", "l"}, "--ttl 100ms"},
		{"renew without token", []string{"lease", "renew", "l"}, "--token is required"},
		{"release without token", []string{"lease", "release", "l"}, "--token is required"},
		{"list with args", []string{"lease", "list", "x"}, "takes no arguments"},
		{"exclusive without command", []string{"exclusive", "--lease", "l"}, "no command given"},
		{"exclusive without lease", []string{"exclusive", "--", "true"}, "--lease is required"},
		{"exclusive command before --", []string{"exclusive", "--lease", "l", "true"}, "put the command after --"},
		{"exclusive bad ttl", []string{"exclusive", "--lease", "l", "--ttl", "2h", "--", "true"}, "TTL 2h0m0s"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, testCtx(t), nil, tt.args...)
			if r.code != 2 || !strings.Contains(r.stderr, tt.want) {
				t.Fatalf("exit %d, stderr %q; want 2 with %q", r.code, r.stderr, tt.want)
			}
		})
	}
}

func TestLeaseCommands(t *testing.T) {
	f := newFakeLeases()
	env := map[string]string{targetsEnv: serveLeases(t, f)}
	ctx := testCtx(t)
	r := runCLI(t, ctx, env, "lease", "acquire", "--holder", "a", "--ttl", "5s", "jobs/settle")
	res := decodeOut[wire.LeaseResult](t, r)
	if r.code != 0 || !res.Acquired || res.Token != 11 || res.Holder != "a" {
		t.Fatalf("acquire: exit %d %+v; stderr %s", r.code, res, r.stderr)
	}
	r = runCLI(t, ctx, env, "lease", "acquire", "--holder", "b", "jobs/settle")
	if l := decodeOut[wire.Lease](t, r); r.code != exitRejected || l.Holder != "a" || !strings.Contains(r.stderr, "lease_held") {
		t.Fatalf("acquire by b: exit %d %+v; stderr %s", r.code, l, r.stderr)
	}
	if r = runCLI(t, ctx, env, "lease", "renew", "--holder", "a", "--token", "11", "jobs/settle"); r.code != 0 {
		t.Fatalf("renew: exit %d; stderr %s", r.code, r.stderr)
	}
	if r = runCLI(t, ctx, env, "lease", "get", "jobs/settle"); r.code != 0 || decodeOut[wire.Lease](t, r).Token != 11 {
		t.Fatalf("get: exit %d %s; stderr %s", r.code, r.stdout, r.stderr)
	}
	if r = runCLI(t, ctx, env, "lease", "list"); r.code != 0 || len(decodeOut[wire.LeaseList](t, r).Leases) != 1 {
		t.Fatalf("list: exit %d %s; stderr %s", r.code, r.stdout, r.stderr)
	}
	if r = runCLI(t, ctx, env, "lease", "release", "--holder", "a", "--token", "10", "jobs/settle"); r.code != exitRejected || !strings.Contains(r.stderr, "fenced") ||
		!strings.Contains(r.stderr, "the token does not match") {
		t.Fatalf("stale release: exit %d; stderr %s", r.code, r.stderr)
	}
	if r = runCLI(t, ctx, env, "lease", "renew", "--holder", "z", "--token", "11", "jobs/settle"); r.code != exitRejected || !strings.Contains(r.stderr, "the holder does not match") {
		t.Fatalf("renew by another holder: exit %d; stderr %s", r.code, r.stderr)
	}
	if r = runCLI(t, ctx, env, "lease", "release", "--holder", "a", "--token", "11", "jobs/settle"); r.code != 0 {
		t.Fatalf("release: exit %d; stderr %s", r.code, r.stderr)
	}
	if r = runCLI(t, ctx, env, "lease", "get", "jobs/settle"); r.code != 1 || !strings.Contains(r.stderr, `lease "jobs/settle" not found`) || strings.Count(r.stderr, "jobs/settle") != 1 {
		t.Fatalf("get after release: exit %d; stderr %s; want the node's 404, said once", r.code, r.stderr)
	}
}

// decodeOut decodes the JSON that a command printed.
func decodeOut[T any](t *testing.T, r result) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("stdout %q: %v (stderr %s)", r.stdout, err, r.stderr)
	}
	return v
}

// TestExclusive: the command runs with the lease's name and token in its
// environment, and the lease is released when it ends.
func TestExclusive(t *testing.T) {
	f := newFakeLeases()
	env := map[string]string{targetsEnv: serveLeases(t, f)}
	r := runCLI(t, testCtx(t), env, "exclusive", "--lease", "jobs/cron", "--holder", "h", "--",
		"sh", "-c", `echo "$TXLOG_LEASE_NAME $TXLOG_LEASE_TOKEN"`)
	if r.code != 0 || strings.TrimSpace(r.stdout) != "jobs/cron 11" {
		t.Fatalf("exclusive: exit %d, stdout %q; stderr %s", r.code, r.stdout, r.stderr)
	}
	if n, _ := f.state(); n != 0 {
		t.Fatalf("%d leases after the command ended, want it released", n)
	}
	r = runCLI(t, testCtx(t), env, "exclusive", "--lease", "jobs/cron", "--", "sh", "-c", "exit 7")
	if n, _ := f.state(); r.code != 7 || !strings.Contains(r.stderr, "exit status 7") || n != 0 {
		t.Fatalf("failing command: exit %d, stderr %q, %d leases", r.code, r.stderr, n)
	}
	r = runCLI(t, testCtx(t), env, "exclusive", "--lease", "jobs/cron", "--", "sh", "-c", "kill -KILL $$")
	if n, _ := f.state(); r.code != 128+9 || n != 0 {
		t.Fatalf("killed command: exit %d, stderr %q, %d leases; want 137", r.code, r.stderr, n)
	}
	granted := func() uint64 { f.mu.Lock(); defer f.mu.Unlock(); return f.next }
	before := granted()
	r = runCLI(t, testCtx(t), env, "exclusive", "--lease", "jobs/cron", "--", "no-such-command-txlog")
	if r.code != exitNotFound || !strings.Contains(r.stderr, "no-such-command-txlog") || granted() != before {
		t.Fatalf("missing command: exit %d, stderr %q, tokens granted %d -> %d; want 127 before any acquire", r.code, r.stderr, before, granted())
	}
}

// TestExclusiveInterrupted: a Ctrl-C reaches the command as SIGTERM, and
// txlog exits with the status the command exits with then.
func TestExclusiveInterrupted(t *testing.T) {
	f := newFakeLeases()
	env := map[string]string{targetsEnv: serveLeases(t, f)}
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	var stdout, stderr syncBuffer
	c := &cli{stdout: &stdout, stderr: &stderr, lookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}
	done := make(chan int, 1)
	go func() {
		done <- report(c.run(ctx, []string{"exclusive", "--lease", "jobs/i", "--", "sh", "-c", `trap 'exit 9' TERM; echo started; while :; do sleep 0.05; done`}), &stderr)
	}()
	deadline := time.After(10 * time.Second)
	for !strings.Contains(stdout.String(), "started") {
		select {
		case <-deadline:
			t.Fatalf("the command did not start; stderr %q", stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel() // Ctrl-C
	if code := <-done; code != 9 {
		t.Fatalf("exit %d after Ctrl-C, want 9, the command's; stderr %q", code, stderr.String())
	}
}

// TestExclusiveStopsOnLoss: a fenced renewal stops the command (SIGTERM)
// long before it would have ended, and txlog exits with the loss.
func TestExclusiveStopsOnLoss(t *testing.T) {
	f := newFakeLeases()
	f.fenceRenewals = true
	env := map[string]string{targetsEnv: serveLeases(t, f)}
	start := time.Now()
	r := runCLI(t, testCtx(t), env, "exclusive", "--lease", "jobs/cron", "--ttl", "1s", "--",
		"sh", "-c", `trap 'echo stopped; exit 0' TERM; while :; do sleep 0.05; done`)
	took := time.Since(start)
	if r.code != 1 || !strings.Contains(r.stderr, "lease lost") || !strings.Contains(r.stdout, "stopped") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want the command stopped and the loss reported", r.code, r.stdout, r.stderr)
	}
	if took > 10*time.Second {
		t.Fatalf("took %v: the command was not stopped at the first fenced renewal", took)
	}
	if _, renewals := f.state(); renewals == 0 {
		t.Fatal("no renewal was tried")
	}
	t.Logf("stopped after %v", took.Round(time.Millisecond))
}

// TestLeaseWatch: watch prints the state now, then each grant and release.
func TestLeaseWatch(t *testing.T) {
	f := newFakeLeases()
	env := map[string]string{targetsEnv: serveLeases(t, f)}
	ctx, cancel := context.WithCancel(testCtx(t))
	var stdout syncBuffer
	c := &cli{stdout: &stdout, stderr: &syncBuffer{}, lookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}
	done := make(chan error, 1)
	go func() { done <- c.run(ctx, []string{"lease", "watch", "jobs/w"}) }()
	waitOut := func(what string) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for !strings.Contains(stdout.String(), what) {
			select {
			case <-deadline:
				t.Fatalf("watch printed %q, want %q in it", stdout.String(), what)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	waitOut(`"token": 0`) // free at the start
	if r := runCLI(t, ctx, env, "lease", "acquire", "--holder", "a", "jobs/w"); r.code != 0 {
		t.Fatalf("acquire: %s", r.stderr)
	}
	waitOut(`"token": 11`)
	if r := runCLI(t, ctx, env, "lease", "release", "--holder", "a", "--token", "11", "jobs/w"); r.code != 0 {
		t.Fatalf("release: %s", r.stderr)
	}
	waitFor := func(what string, cond func(string) bool) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for !cond(stdout.String()) {
			select {
			case <-deadline:
				t.Fatalf("watch printed %q, want %s", stdout.String(), what)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	waitFor("the release", func(s string) bool { return strings.Count(s, `"token": 0`) == 2 })
	if r := runCLI(t, ctx, env, "lease", "acquire", "--holder", "b", "jobs/w"); r.code != 0 {
		t.Fatalf("acquire by b: %s", r.stderr)
	}
	waitOut(`"holder": "b"`)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("watch = %v", err)
	}
}
