package parking

import (
	"errors"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"
)

func testBreaker(t *testing.T) *breaker {
	t.Helper()
	cfg := BreakerConfig{Failures: 3, Cooldown: time.Second, MaxCooldown: 4 * time.Second}
	return newBreaker(cfg, slog.New(slog.DiscardHandler))
}

// call runs one call through b with outcome o and reports whether it was
// allowed.
func call(b *breaker, o outcome) bool {
	tk, ok := b.allow()
	if ok {
		b.done(tk, o, errors.New("boom"))
	}
	return ok
}

func wantState(t *testing.T, b *breaker, want BreakerState) {
	t.Helper()
	if got := b.State(); got != want {
		t.Fatalf("State() = %q, want %q", got, want)
	}
}

func TestBreakerOpensAfterConsecutiveFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := testBreaker(t)
		call(b, failure)
		call(b, failure)
		call(b, success) // resets the count
		call(b, failure)
		call(b, failure)
		wantState(t, b, BreakerClosed)
		call(b, failure)
		wantState(t, b, BreakerOpen)
		if call(b, success) {
			t.Fatal("allow() = true while open, want false")
		}
	})
}

func TestBreakerCooldownAndProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := testBreaker(t)
		for range 3 {
			call(b, failure)
		}
		wantState(t, b, BreakerOpen)

		time.Sleep(time.Second - time.Nanosecond)
		wantState(t, b, BreakerOpen)
		time.Sleep(time.Nanosecond)
		wantState(t, b, BreakerHalfOpen)

		probe, ok := b.allow()
		if !ok || !probe.probe {
			t.Fatalf("allow() = %+v, %v in half-open, want the probe", probe, ok)
		}
		if _, ok := b.allow(); ok {
			t.Fatal("second allow() = true while the probe is in flight, want false")
		}
		b.done(probe, success, nil)
		wantState(t, b, BreakerClosed)
		if !call(b, success) {
			t.Fatal("allow() = false after closing, want true")
		}
	})
}

func TestBreakerCooldownDoublesUpToMax(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := testBreaker(t)
		for range 3 {
			call(b, failure)
		}
		// Cool-downs: 1s, then 2s, 4s, 4s (MaxCooldown) after each failed probe.
		for i, cooldown := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second} {
			start := time.Now()
			time.Sleep(cooldown - time.Nanosecond)
			if call(b, failure) {
				t.Fatalf("round %d: allow() = true %v after opening, want false until %v", i, time.Since(start), cooldown)
			}
			time.Sleep(time.Nanosecond)
			if !call(b, failure) {
				t.Fatalf("round %d: allow() = false %v after opening, want the probe", i, cooldown)
			}
			wantState(t, b, BreakerOpen)
		}
		// A successful probe resets the cool-down to 1s.
		time.Sleep(4 * time.Second)
		call(b, success)
		wantState(t, b, BreakerClosed)
		for range 3 {
			call(b, failure)
		}
		time.Sleep(time.Second)
		wantState(t, b, BreakerHalfOpen)
	})
}

func TestBreakerIgnoredProbeFreesSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := testBreaker(t)
		for range 3 {
			call(b, failure)
		}
		time.Sleep(time.Second)
		call(b, ignored) // the caller gave up: no verdict
		wantState(t, b, BreakerHalfOpen)
		if !call(b, success) {
			t.Fatal("allow() = false after an ignored probe, want a new probe")
		}
		wantState(t, b, BreakerClosed)
	})
}

func TestBreakerDropsStaleOutcomes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := testBreaker(t)
		slow, _ := b.allow() // issued while closed, ends after the breaker opened
		for range 3 {
			call(b, failure)
		}
		time.Sleep(time.Second)
		wantState(t, b, BreakerHalfOpen)
		b.done(slow, success, nil)
		wantState(t, b, BreakerHalfOpen) // the stale success did not close it
		probe, ok := b.allow()
		if !ok {
			t.Fatal("allow() = false, want the probe")
		}
		b.done(probe, failure, nil)
		wantState(t, b, BreakerOpen)
	})
}

func TestBreakerConcurrentCalls(t *testing.T) {
	b := testBreaker(t)
	done := make(chan struct{})
	for i := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for j := range 1000 {
				o := success
				if (i+j)%3 == 0 {
					o = failure
				}
				call(b, o)
				b.State()
			}
		}()
	}
	for range 8 {
		<-done
	}
}
