package parking_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/txlog/txlog/node/parking"
	"github.com/txlog/txlog/node/parking/redistest"
)

// testConfig is a Config with a short breaker cool-down, so that tests wait
// little. OpTimeout is generous because every XADD waits for an fsync on a
// disk that other tests share; tests of timeouts set their own. ClaimIdle is
// long, so that entries are taken over only in tests that shorten it.
func testConfig(addr, consumer string) parking.Config {
	return parking.Config{
		Addr:      addr,
		Consumer:  consumer,
		OpTimeout: 2 * time.Second,
		ClaimIdle: time.Minute,
		Breaker:   parking.BreakerConfig{Failures: 3, Cooldown: 50 * time.Millisecond, MaxCooldown: 200 * time.Millisecond},
		Logger:    testLogger(),
	}
}

func testLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return nil
}

func open(t *testing.T, cfg parking.Config) *parking.Redis {
	t.Helper()
	r, err := parking.Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Open(%+v): %v", cfg, err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// poll calls f until it returns nil or timeout passes.
func poll(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still failing after %v: %v", what, timeout, err)
		}
		<-tick.C
	}
}

func park(t *testing.T, r *parking.Redis, entries ...parking.Entry) {
	t.Helper()
	for _, e := range entries {
		if err := r.Park(context.Background(), e.TxID, e.Payload); err != nil {
			t.Fatalf("Park(%d): %v", e.TxID, err)
		}
	}
}

func claim(t *testing.T, r *parking.Redis, max int) []parking.Entry {
	t.Helper()
	got, err := r.Claim(context.Background(), max)
	if err != nil {
		t.Fatalf("Claim(%d): %v", max, err)
	}
	return got
}

func ack(t *testing.T, r *parking.Redis, entries []parking.Entry) {
	t.Helper()
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = e.StreamID
	}
	if err := r.Ack(context.Background(), ids...); err != nil {
		t.Fatalf("Ack(%v): %v", ids, err)
	}
}

func wantPending(t *testing.T, r *parking.Redis, want int64) {
	t.Helper()
	got, err := r.Pending(context.Background())
	if err != nil || got != want {
		t.Fatalf("Pending() = %d, %v, want %d", got, err, want)
	}
}

func wantState(t *testing.T, r *parking.Redis, want parking.BreakerState) {
	t.Helper()
	if got := r.State(); got != want {
		t.Fatalf("State() = %q, want %q", got, want)
	}
}

// wantEntries checks got against want by txid and payload, in order.
func wantEntries(t *testing.T, got, want []parking.Entry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d entries %v, want %d", len(got), txids(got), len(want))
	}
	for i := range got {
		if got[i].TxID != want[i].TxID || !bytes.Equal(got[i].Payload, want[i].Payload) || got[i].StreamID == "" {
			t.Fatalf("entry %d = {%s %d %x}, want {_ %d %x}", i,
				got[i].StreamID, got[i].TxID, got[i].Payload, want[i].TxID, want[i].Payload)
		}
	}
}

func txids(es []parking.Entry) []uint64 {
	ids := make([]uint64, len(es))
	for i, e := range es {
		ids[i] = e.TxID
	}
	return ids
}

// sample returns n entries with binary payloads full of zero bytes.
func sample(first uint64, n int) []parking.Entry {
	es := make([]parking.Entry, n)
	for i := range es {
		id := first + uint64(i)
		es[i] = parking.Entry{TxID: id, Payload: []byte(fmt.Sprintf("\x00tx\x00%d\xff\x00\r\n", id))}
	}
	return es
}

func TestRoundTrip(t *testing.T) {
	s := redistest.Start(t)
	r := open(t, testConfig(s.Addr, "n1"))

	want := append(sample(1, 5),
		parking.Entry{TxID: 1<<64 - 1, Payload: []byte{}},
		parking.Entry{TxID: 0, Payload: bytes.Repeat([]byte{0}, 1<<16)})
	park(t, r, want...)
	wantPending(t, r, int64(len(want)))

	got := claim(t, r, 3)
	wantEntries(t, got, want[:3])
	rest := claim(t, r, 100)
	wantEntries(t, rest, want[3:])
	if more := claim(t, r, 100); len(more) != 0 {
		t.Fatalf("Claim() after draining = %v, want none", txids(more))
	}
	wantPending(t, r, int64(len(want))) // claimed, not acked: still there

	ack(t, r, append(got, rest...))
	wantPending(t, r, 0)
	ack(t, r, got) // acking again is harmless
	if err := r.Ack(context.Background()); err != nil {
		t.Fatalf("Ack() with no IDs = %v, want nil", err)
	}
	wantState(t, r, parking.BreakerClosed)
}

func TestClaimMaxZero(t *testing.T) {
	s := redistest.Start(t)
	r := open(t, testConfig(s.Addr, "n1"))
	park(t, r, sample(1, 1)...)
	if got := claim(t, r, 0); len(got) != 0 {
		t.Fatalf("Claim(0) = %v, want none", txids(got))
	}
}

// A leader claims entries and dies without acking them: the next leader takes
// them over once they have been idle for ClaimIdle.
func TestClaimTakesOverFromDeadConsumer(t *testing.T) {
	s := redistest.Start(t)
	cfg := testConfig(s.Addr, "n1")
	cfg.ClaimIdle = 300 * time.Millisecond
	a := open(t, cfg)
	cfg.Consumer = "n2"
	b := open(t, cfg)

	want := sample(10, 4)
	park(t, a, want...)
	claimed := time.Now()
	wantEntries(t, claim(t, a, 100), want)
	a.Close() // a dies without acking

	early := claim(t, b, 100)
	if time.Since(claimed) < cfg.ClaimIdle && len(early) != 0 {
		t.Fatalf("b claimed %v before ClaimIdle passed, want none", txids(early))
	}
	got := early
	poll(t, 5*time.Second, "b claims a's entries", func() error {
		got = append(got, claim(t, b, 100)...)
		if len(got) < len(want) {
			return fmt.Errorf("claimed %v", txids(got))
		}
		return nil
	})
	wantEntries(t, got, want)

	// New entries come after the taken-over ones.
	park(t, b, sample(20, 1)...)
	wantEntries(t, claim(t, b, 100), sample(20, 1))
	ack(t, b, got)
	wantPending(t, b, 1)
}

// Entries that are never acked stay in Redis, across a clean restart and a
// crash (SIGKILL: appendfsync always).
func TestUnackedEntriesSurviveRestartAndCrash(t *testing.T) {
	s := redistest.Start(t)
	r := open(t, testConfig(s.Addr, "n1"))

	want := sample(1, 3)
	park(t, r, want...)
	wantEntries(t, claim(t, r, 2), want[:2]) // two claimed, one never delivered

	for _, restart := range []struct {
		name string
		do   func()
	}{
		{"restart", s.Restart},
		{"kill", func() { s.Kill(); s.Restart() }},
	} {
		restart.do()
		poll(t, 5*time.Second, "pending after "+restart.name, func() error {
			n, err := r.Pending(context.Background())
			if err == nil && n != 3 {
				t.Fatalf("Pending() after %s = %d, want 3", restart.name, n)
			}
			return err
		})
	}

	// Another node drains all three: the undelivered one at once, the
	// claimed ones after ClaimIdle.
	cfg := testConfig(s.Addr, "n2")
	cfg.ClaimIdle = 300 * time.Millisecond
	b := open(t, cfg)
	var got []parking.Entry
	poll(t, 5*time.Second, "drain after crash", func() error {
		got = append(got, claim(t, b, 100)...)
		if len(got) < len(want) {
			return fmt.Errorf("claimed %v", txids(got))
		}
		return nil
	})
	slices.SortFunc(got, func(x, y parking.Entry) int { return int(x.TxID) - int(y.TxID) })
	wantEntries(t, got, want)
}

// Parked entries acknowledged by Redis survive a crash right after Park.
func TestParkedEntriesSurviveCrash(t *testing.T) {
	s := redistest.Start(t)
	r := open(t, testConfig(s.Addr, "n1"))
	want := sample(1, 50)
	park(t, r, want...)
	s.Kill()
	s.Restart()
	var got []parking.Entry
	poll(t, 5*time.Second, "claim after crash", func() error {
		es, err := r.Claim(context.Background(), 100)
		got = append(got, es...)
		return err
	})
	wantEntries(t, got, want)
}

// With Redis down, calls fail fast, the breaker opens, and then Park returns
// ErrUnavailable without touching the network. When Redis is back, the
// breaker half-opens, its probe succeeds, and it closes.
func TestRedisDownBreaker(t *testing.T) {
	s := redistest.Start(t)
	cfg := testConfig(s.Addr, "n1")
	r := open(t, cfg)
	ctx := context.Background()
	park(t, r, sample(1, 1)...)

	s.Stop()
	for i := range cfg.Breaker.Failures {
		start := time.Now()
		err := r.Park(ctx, 2, []byte("x"))
		if !errors.Is(err, parking.ErrUnavailable) {
			t.Fatalf("Park #%d with Redis down = %v, want ErrUnavailable", i, err)
		}
		if d := time.Since(start); d > cfg.OpTimeout+time.Second {
			t.Fatalf("Park #%d with Redis down took %v, want at most OpTimeout (%v)", i, d, cfg.OpTimeout)
		}
	}
	wantState(t, r, parking.BreakerOpen)

	start := time.Now()
	for range 100 {
		if err := r.Park(ctx, 2, []byte("x")); !errors.Is(err, parking.ErrUnavailable) {
			t.Fatalf("Park with the breaker open = %v, want ErrUnavailable", err)
		}
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Fatalf("100 Parks with the breaker open took %v, want a few ms: they must not touch the network", d)
	}
	if _, err := r.Claim(ctx, 10); !errors.Is(err, parking.ErrUnavailable) {
		t.Fatalf("Claim with the breaker open = %v, want ErrUnavailable", err)
	}
	if _, err := r.Pending(ctx); !errors.Is(err, parking.ErrUnavailable) {
		t.Fatalf("Pending with the breaker open = %v, want ErrUnavailable", err)
	}
	if err := r.Ack(ctx, "1-1"); !errors.Is(err, parking.ErrUnavailable) {
		t.Fatalf("Ack with the breaker open = %v, want ErrUnavailable", err)
	}

	s.Restart()
	poll(t, 5*time.Second, "park after Redis is back", func() error {
		return r.Park(ctx, 3, []byte("y"))
	})
	wantState(t, r, parking.BreakerClosed)
	got := claim(t, r, 100)
	if !slices.Equal(txids(got), []uint64{1, 3}) {
		t.Fatalf("Claim() = %v, want [1 3]: parked before the outage and after it", txids(got))
	}
}

// A Redis that hangs (SIGSTOP) costs each call at most OpTimeout, then the
// breaker opens and calls return at once.
func TestRedisHangsBreaker(t *testing.T) {
	s := redistest.Start(t)
	cfg := testConfig(s.Addr, "n1")
	cfg.OpTimeout = 200 * time.Millisecond
	r := open(t, cfg)
	ctx := context.Background()

	s.Pause()
	for i := range cfg.Breaker.Failures {
		start := time.Now()
		err := r.Park(ctx, 2, []byte("x"))
		d := time.Since(start)
		if !errors.Is(err, parking.ErrUnavailable) {
			t.Fatalf("Park #%d with Redis paused = %v, want ErrUnavailable", i, err)
		}
		if d > cfg.OpTimeout+500*time.Millisecond {
			t.Fatalf("Park #%d with Redis paused took %v, want about OpTimeout (%v)", i, d, cfg.OpTimeout)
		}
	}
	wantState(t, r, parking.BreakerOpen)
	start := time.Now()
	if err := r.Park(ctx, 2, []byte("x")); !errors.Is(err, parking.ErrUnavailable) {
		t.Fatalf("Park with the breaker open = %v, want ErrUnavailable", err)
	}
	if d := time.Since(start); d > 50*time.Millisecond {
		t.Fatalf("Park with the breaker open took %v, want at once", d)
	}

	// The XADDs that timed out were queued in Redis and run now: a failed
	// Park does not mean the entry is absent (a duplicate is harmless).
	s.Resume()
	poll(t, 5*time.Second, "pending after Redis resumes", func() error {
		_, err := r.Pending(ctx)
		return err
	})
	wantState(t, r, parking.BreakerClosed)
}

// A caller that gives up does not count against Redis.
func TestCallerCancelDoesNotOpenBreaker(t *testing.T) {
	s := redistest.Start(t)
	cfg := testConfig(s.Addr, "n1")
	r := open(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 2 * cfg.Breaker.Failures {
		if err := r.Park(ctx, 1, nil); !errors.Is(err, context.Canceled) {
			t.Fatalf("Park with a cancelled ctx = %v, want context.Canceled", err)
		}
	}
	wantState(t, r, parking.BreakerClosed)
}

// Redis restarting empty loses the parked entries (the WAL still has them)
// and the consumer group; Claim recreates the group and drains what is parked
// after the restart.
func TestRedisRestartEmpty(t *testing.T) {
	s := redistest.Start(t)
	r := open(t, testConfig(s.Addr, "n1"))
	ctx := context.Background()
	park(t, r, sample(1, 3)...)
	claim(t, r, 1)

	s.RestartEmpty()
	poll(t, 5*time.Second, "pending after restart empty", func() error {
		n, err := r.Pending(ctx)
		if err == nil && n != 0 {
			t.Fatalf("Pending() after RestartEmpty = %d, want 0: the entries are lost", n)
		}
		return err
	})

	t.Run("park before claim", func(t *testing.T) {
		park(t, r, sample(10, 2)...) // XADD makes the stream, not the group
		wantEntries(t, claim(t, r, 100), sample(10, 2))
	})
	t.Run("claim before park", func(t *testing.T) {
		s.RestartEmpty()
		poll(t, 5*time.Second, "claim after restart empty", func() error {
			got, err := r.Claim(ctx, 100)
			if err == nil && len(got) != 0 {
				t.Fatalf("Claim() after RestartEmpty = %v, want none", txids(got))
			}
			return err
		})
		park(t, r, sample(20, 2)...)
		wantEntries(t, claim(t, r, 100), sample(20, 2))
	})
}

// Open does not fail while Redis is down; the group is created by the first
// Claim once Redis answers.
func TestOpenWhileRedisDown(t *testing.T) {
	s := redistest.Start(t)
	s.Stop()
	r := open(t, testConfig(s.Addr, "n1"))
	wantState(t, r, parking.BreakerClosed) // one failure, below the threshold

	s.Restart()
	poll(t, 5*time.Second, "park after Redis starts", func() error {
		return r.Park(context.Background(), 1, []byte("a"))
	})
	wantEntries(t, claim(t, r, 10), []parking.Entry{{TxID: 1, Payload: []byte("a")}})
}

// Entries that Park did not write are deleted and skipped, so they cannot
// block the drain.
func TestClaimSkipsMalformedEntries(t *testing.T) {
	s := redistest.Start(t)
	cfg := testConfig(s.Addr, "n1")
	r := open(t, cfg)
	c := redis.NewClient(&redis.Options{Addr: s.Addr, DisableIdentity: true})
	defer c.Close()
	ctx := context.Background()

	park(t, r, sample(1, 1)...)
	for _, values := range [][]string{
		{"foo", "bar"},
		{"txid", "not-a-number", "payload", "x"},
		{"txid", "7"},
	} {
		if err := c.XAdd(ctx, &redis.XAddArgs{Stream: parking.DefaultStream, Values: values}).Err(); err != nil {
			t.Fatalf("XADD %v: %v", values, err)
		}
	}
	park(t, r, sample(2, 1)...)

	wantEntries(t, claim(t, r, 100), sample(1, 2))
	wantPending(t, r, 2)
}

func TestClose(t *testing.T) {
	s := redistest.Start(t)
	r := open(t, testConfig(s.Addr, "n1"))
	if err := r.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close() = %v, want nil", err)
	}
	if err := r.Park(context.Background(), 1, nil); !errors.Is(err, parking.ErrClosed) {
		t.Fatalf("Park after Close = %v, want ErrClosed", err)
	}
}

func TestOpenInvalidConfig(t *testing.T) {
	if _, err := parking.Open(context.Background(), parking.Config{}); err == nil {
		t.Fatal("Open(Config{}) = nil error, want Addr and Consumer missing")
	}
}
