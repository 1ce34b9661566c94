package systemtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/launcher"
	"github.com/txlog/txlog/lease"
)

// The lease tests run a holder against a real cluster. TestLeaseHolderPaused
// needs the holder in a process of its own, to SIGSTOP it: the test binary
// started again with holderEnv set runs runLeaseHolder instead of the tests
// (TestMain).

// Environment of a holder process.
const (
	holderEnv          = "TXLOGD_TEST_LEASE_HOLDER" // the holder's name; set: run as a holder
	holderEndpoints    = "TXLOGD_TEST_LEASE_ENDPOINTS"
	holderLease        = "TXLOGD_TEST_LEASE_NAME"
	holderTTL          = "TXLOGD_TEST_LEASE_TTL"
	holderOut          = "TXLOGD_TEST_LEASE_OUT"  // the file of holderEvents, one JSON line each
	holderMode         = "TXLOGD_TEST_LEASE_MODE" // "elector": runElectorHolder
	holderWriteKey     = "job/run"
	holderWriteTimeout = 2 * time.Second
)

// holderEvent is one line a holder process writes.
type holderEvent struct {
	Event  string          `json:"event"` // "acquired", "write", "renew"
	Token  uint64          `json:"token,omitempty"`
	Seq    int             `json:"seq,omitempty"`
	Status int             `json:"status,omitempty"` // of a write's HTTP answer
	Body   json.RawMessage `json:"body,omitempty"`   // of a write's HTTP answer
	Err    string          `json:"err,omitempty"`
}

// runLeaseHolder is a batch job's leader: it acquires the lease, then every
// TTL/3 makes a fenced write with its token and renews, as a stale holder
// would go on doing after a pause, and reports each step to its out file.
func runLeaseHolder() int {
	holder, name := os.Getenv(holderEnv), os.Getenv(holderLease)
	endpoints := strings.Split(os.Getenv(holderEndpoints), ",")
	ttl, err := time.ParseDuration(os.Getenv(holderTTL))
	if err != nil {
		fmt.Fprintln(os.Stderr, "holder:", err)
		return 2
	}
	f, err := os.OpenFile(os.Getenv(holderOut), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "holder:", err)
		return 2
	}
	defer f.Close()
	emit := func(e holderEvent) {
		b, _ := json.Marshal(e)
		f.Write(append(b, '\n'))
	}
	cl := client.NewClient(client.ClientConfig{Endpoints: endpoints, Timeout: ttl})
	if os.Getenv(holderMode) == "elector" {
		return runElectorHolder(cl, name, holder, ttl, emit)
	}
	ctx := context.Background()
	var token uint64
	for token == 0 {
		res, err := cl.AcquireLease(ctx, name, holder, ttl)
		if err != nil {
			emit(holderEvent{Event: "acquired", Err: err.Error()})
			time.Sleep(ttl / 10) // a process of its own, not a test: pacing its retries
			continue
		}
		token = res.Token
		emit(holderEvent{Event: "acquired", Token: token})
	}
	tick := time.NewTicker(ttl / 3)
	defer tick.Stop()
	for seq := 1; ; seq++ {
		<-tick.C
		status, body, err := fencedWrite(endpoints, name, token, holder, seq)
		e := holderEvent{Event: "write", Token: token, Seq: seq, Status: status, Body: body}
		if err != nil {
			e.Err = err.Error()
		}
		emit(e)
		_, err = cl.RenewLease(ctx, name, holder, token, ttl)
		e = holderEvent{Event: "renew", Token: token, Seq: seq}
		if err != nil {
			e.Err = err.Error()
		}
		emit(e)
	}
}

// runElectorHolder leads with a lease.Elector until SIGTERM: it reports
// "leading" with its token once its function runs, and "stopped" with Run's
// error once Run returned, which is after it resigned.
func runElectorHolder(cl *client.Client, name, holder string, ttl time.Duration, emit func(holderEvent)) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	e, err := lease.New(lease.Config{Client: cl, Name: name, Holder: holder, TTL: ttl})
	if err != nil {
		fmt.Fprintln(os.Stderr, "holder:", err)
		return 2
	}
	err = e.Run(ctx, func(ctx context.Context, token uint64) error {
		emit(holderEvent{Event: "leading", Token: token})
		<-ctx.Done()
		return nil
	})
	ev := holderEvent{Event: "stopped"}
	if err != nil && !errors.Is(err, context.Canceled) {
		ev.Err = err.Error()
	}
	emit(ev)
	return 0
}

// fencedWrite posts one fenced write of holderWriteKey, trying the
// endpoints in turn while none answers other than 503.
func fencedWrite(endpoints []string, lease string, token uint64, holder string, seq int) (int, json.RawMessage, error) {
	body := fmt.Sprintf(`{"idempotency_key":"%s-%d","fence":{"lease":%q,"token":%d},"ops":[{"op":"put","key":%q,"value":{"holder":%q,"seq":%d}}]}`,
		holder, seq, lease, token, holderWriteKey, holder, seq)
	deadline := time.Now().Add(2 * holderWriteTimeout)
	var last error
	for i := 0; time.Now().Before(deadline); i++ {
		resp, err := http.Post(endpoints[i%len(endpoints)]+"/v1/tx?timeout="+holderWriteTimeout.String(), "application/json", strings.NewReader(body))
		if err != nil {
			last = err
			continue
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode == http.StatusServiceUnavailable {
			last = fmt.Errorf("status %d: %s (%v)", resp.StatusCode, b, err)
			continue
		}
		return resp.StatusCode, bytes.TrimSpace(b), nil
	}
	return 0, nil, last
}

// startHolder starts a holder process for lease against c's nodes.
func startHolder(t *testing.T, c *launcher.Cluster, holder, lease string, ttl time.Duration, env ...string) (*launcher.Process, string) {
	t.Helper()
	dir := t.TempDir()
	out := filepath.Join(dir, holder+".events")
	p, err := launcher.NewProcess(launcher.ProcessConfig{
		ID:     holder,
		Bin:    os.Args[0],
		Args:   []string{"-test.run=^$"},
		Env:    append([]string{holderEnv + "=" + holder, holderEndpoints + "=" + strings.Join(c.HTTPAddrs(), ","), holderLease + "=" + lease, holderTTL + "=" + ttl.String(), holderOut + "=" + out}, env...),
		LogDir: dir,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			b, _ := os.ReadFile(out)
			t.Logf("--- %s events:\n%s\n--- %s log:\n%s", holder, b, holder, p.LogTail(20))
		}
	})
	return p, out
}

// readEvents reads the events a holder wrote so far.
func readEvents(t *testing.T, path string) []holderEvent {
	t.Helper()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []holderEvent
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e holderEvent
		if json.Unmarshal(sc.Bytes(), &e) == nil { // a line being written is cut
			out = append(out, e)
		}
	}
	return out
}

func writes(es []holderEvent) []holderEvent {
	var out []holderEvent
	for _, e := range es {
		if e.Event == "write" {
			out = append(out, e)
		}
	}
	return out
}

// TestLeaseHolderPaused: a holder SIGSTOPped past its TTL loses the lease, a
// standby acquires it with a larger token, and the holder's fenced writes
// after it resumes are rejected (409) with the fence conflict, while its
// writes before the pause committed and the standby's write stays.
func TestLeaseHolderPaused(t *testing.T) {
	const lease, ttl = "jobs/settlement", 2 * time.Second
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	holder, out := startHolder(t, c, "holder-a", lease, ttl)

	var token uint64
	waitUntil(ctx, t, "the holder's lease and two committed writes", func() bool {
		es := readEvents(t, out)
		for _, e := range es {
			if e.Event == "acquired" && e.Token != 0 {
				token = e.Token
			}
		}
		return token != 0 && len(writes(es)) >= 2
	})
	if err := holder.Pause(); err != nil {
		t.Fatal(err)
	}
	pausedAt := time.Now()
	before := writes(readEvents(t, out))
	for _, w := range before {
		if w.Status != http.StatusOK {
			t.Fatalf("write %d of the live holder = %d %s, want 200", w.Seq, w.Status, w.Body)
		}
	}

	// The standby talks to a follower only, which passes its lease writes
	// on to the leader.
	follower := aFollower(c, mustLeaderID(ctx, t, c))
	cl := client.NewClient(client.ClientConfig{Endpoints: []string{c.URL(follower)}, Timeout: 10 * time.Second})
	var standby wire.LeaseResult
	var held int
	waitUntil(ctx, t, "the standby's grant", func() bool {
		res, err := cl.AcquireLease(ctx, lease, "standby-b", ttl)
		if errors.Is(err, wire.ErrLeaseHeld) {
			held++
			return false
		}
		if err != nil {
			t.Fatalf("standby AcquireLease() = %v", err)
		}
		standby = res
		return true
	})
	took := time.Since(pausedAt)
	t.Logf("standby acquired token %d %v after the pause (%d refusals while held)", standby.Token, took.Round(time.Millisecond), held)
	if !standby.Acquired || standby.Token <= token {
		t.Fatalf("standby's lease = %+v, want a new grant with a token above %d", standby, token)
	}
	if held == 0 {
		t.Fatalf("the standby got the lease at its first try, %v after the pause: it was not held for the TTL", took)
	}
	if took > ttl+10*time.Second {
		t.Fatalf("the standby waited %v for a %v lease", took, ttl)
	}
	mine, err := cl.Submit(ctx, wire.TxRequest{Fence: &wire.Fence{Lease: lease, Token: standby.Token},
		Ops: []wire.Op{{Op: wire.OpPut, Key: holderWriteKey, Value: json.RawMessage(`{"holder":"standby-b"}`)}}}, wire.SubmitOptions{})
	if err != nil || mine.Status != wire.StatusCommitted {
		t.Fatalf("standby's fenced write = %+v, %v", mine, err)
	}

	if err := holder.Resume(); err != nil {
		t.Fatal(err)
	}
	var after []holderEvent
	waitUntil(ctx, t, "two writes of the resumed holder", func() bool {
		after = writes(readEvents(t, out))[len(before):]
		return len(after) >= 3
	})
	// The first may have been on its way to the leader when the holder
	// stopped; every later one is its own, stale, write.
	for _, w := range after[1:] {
		var res wire.TxResult
		if err := json.Unmarshal(w.Body, &res); w.Status != http.StatusConflict || err != nil {
			t.Fatalf("stale write %d = %d %s (%v), want 409", w.Seq, w.Status, w.Body, err)
		}
		want := wire.Conflict{Fence: lease, Expected: token, Actual: standby.Token}
		if res.Status != wire.StatusRejected || res.Conflict == nil || *res.Conflict != want {
			t.Fatalf("stale write %d = %s, want rejected with %+v", w.Seq, w.Body, want)
		}
	}
	for _, e := range readEvents(t, out) {
		if e.Event == "renew" && e.Seq > after[0].Seq && !strings.Contains(e.Err, wire.CodeFenced) {
			t.Fatalf("renewal %d of the resumed holder = %q, want fenced", e.Seq, e.Err)
		}
	}
	kv, err := cl.Get(ctx, holderWriteKey, wire.ReadOptions{})
	if err != nil || !strings.Contains(string(kv.Value), "standby-b") {
		t.Fatalf("%s = %s, %v; want the standby's write", holderWriteKey, kv.Value, err)
	}
	l, err := cl.Lease(ctx, lease, 0, 0)
	if err != nil || l.Holder != "standby-b" || l.Token != standby.Token {
		t.Fatalf("Lease() = %+v, %v; want the standby's", l, err)
	}
}

// TestLeaseSurvivesFailovers: a holder that renews every TTL/3 keeps its
// lease, with the same token, through two leader kills and a rolling restart
// of every node, while a standby trying all along never gets it.
func TestLeaseSurvivesFailovers(t *testing.T) {
	// 8 s: a renewal may take until the TTL ends (2/3 of it after the last
	// one), through an election and the client's retries on a loaded machine.
	const lease, ttl = "jobs/scheduler", 8 * time.Second
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cl := client.NewClient(client.ClientConfig{Endpoints: c.HTTPAddrs(), Timeout: ttl})
	first, err := cl.AcquireLease(ctx, lease, "holder-a", ttl)
	if err != nil || !first.Acquired {
		t.Fatalf("AcquireLease() = %+v, %v", first, err)
	}

	var (
		renewals atomic.Int64
		mu       sync.Mutex
		failure  error
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if failure == nil {
			failure = err
		}
	}
	failed := func() error {
		mu.Lock()
		defer mu.Unlock()
		return failure
	}
	rctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { // the holder
		tick := time.NewTicker(ttl / 3)
		defer tick.Stop()
		deadline := time.Now().Add(ttl) // the holder's own view of its lease
		for {
			select {
			case <-rctx.Done():
				return
			case <-tick.C:
			}
			sent := time.Now()
			actx, cancel := context.WithDeadline(rctx, deadline)
			res, err := cl.RenewLease(actx, lease, "holder-a", first.Token, ttl)
			cancel()
			switch {
			case rctx.Err() != nil:
				return
			case err != nil:
				fail(fmt.Errorf("renewal %d failed %v after the last one held: %w", renewals.Load()+1, time.Since(deadline.Add(-ttl)), err))
				return
			case res.Token != first.Token || res.Holder != "holder-a":
				fail(fmt.Errorf("renewal answered %+v, want token %d", res, first.Token))
				return
			}
			deadline = sent.Add(ttl)
			renewals.Add(1)
		}
	})
	var refusals atomic.Int64
	wg.Go(func() { // the standby
		scl := client.NewClient(client.ClientConfig{Endpoints: c.HTTPAddrs(), Timeout: ttl})
		for rctx.Err() == nil {
			res, err := scl.AcquireLease(rctx, lease, "standby-b", ttl)
			switch {
			case err == nil:
				fail(fmt.Errorf("the standby got the lease: %+v", res))
				return
			case errors.Is(err, wire.ErrLeaseHeld):
				refusals.Add(1)
			}
			select {
			case <-rctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	})
	// renewed waits for two more renewals that held.
	renewed := func(what string) {
		t.Helper()
		n := renewals.Load() + 2
		waitUntil(ctx, t, "two renewals after "+what, func() bool {
			if err := failed(); err != nil {
				t.Fatalf("after %s: %v", what, err)
			}
			return renewals.Load() >= n
		})
	}
	renewed("the grant")
	for i := range 2 {
		leader := mustLeaderID(ctx, t, c)
		if err := c.Kill(leader); err != nil {
			t.Fatal(err)
		}
		t.Logf("kill %d: killed leader %s", i+1, leader)
		renewed(fmt.Sprintf("leader kill %d", i+1))
		if err := c.Restart(ctx, leader); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range c.Nodes() {
		if err := c.Restart(ctx, p.ID()); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
		renewed("the restart of " + p.ID())
	}
	stop()
	wg.Wait()
	if err := failed(); err != nil {
		t.Fatal(err)
	}
	l, err := cl.Lease(ctx, lease, 0, 0)
	if err != nil || l.Holder != "holder-a" || l.Token != first.Token {
		t.Fatalf("Lease() at the end = %+v, %v; want holder-a with token %d", l, err, first.Token)
	}
	if refusals.Load() == 0 {
		t.Fatal("the standby was never refused: it never asked")
	}
	t.Logf("%d renewals held, the standby was refused %d times", renewals.Load(), refusals.Load())
}

// TestLeaseResignOnSIGTERM: a lease.Elector that gets SIGTERM while leading
// stops its function and releases the lease, so that a standby takes over
// at once (well within the TTL) with a larger token.
func TestLeaseResignOnSIGTERM(t *testing.T) {
	// 10 s: the holder's exit, its release and the standby's grant fit in half
	// of it on a loaded machine, and an expiry would come no sooner than 2/3.
	const name, ttl = "jobs/sender", 10 * time.Second
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	holder, out := startHolder(t, c, "holder-a", name, ttl, holderMode+"=elector")
	var token uint64
	waitUntil(ctx, t, "the holder leading", func() bool {
		for _, e := range readEvents(t, out) {
			if e.Event == "leading" {
				token = e.Token
			}
		}
		return token != 0
	})
	cl := client.NewClient(client.ClientConfig{Endpoints: c.HTTPAddrs(), Timeout: 10 * time.Second})
	if _, err := cl.AcquireLease(ctx, name, "standby-b", ttl); !errors.Is(err, wire.ErrLeaseHeld) {
		t.Fatalf("standby's acquire while a leads = %v, want lease_held", err)
	}
	start := time.Now()
	if err := holder.Stop(ctx); err != nil {
		t.Fatalf("SIGTERM to the holder: %v", err)
	}
	exited := time.Since(start)
	var res wire.LeaseResult
	waitUntil(ctx, t, "the standby's grant", func() bool {
		var err error
		res, err = cl.AcquireLease(ctx, name, "standby-b", ttl)
		return err == nil
	})
	took := time.Since(start)
	t.Logf("takeover %v after SIGTERM (the holder exited after %v)", took.Round(time.Millisecond), exited.Round(time.Millisecond))
	if took > ttl/2 || res.Token <= token {
		t.Fatalf("standby got token %d (a had %d) %v after SIGTERM; want a larger token well within the %v TTL", res.Token, token, took, ttl)
	}
	es := readEvents(t, out)
	if last := es[len(es)-1]; last.Event != "stopped" || last.Err != "" {
		t.Fatalf("holder's last event = %+v, want stopped without error (resigned)", last)
	}
}
