package parking

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// BreakerState is the state of the circuit breaker that guards Redis, as shown
// by GET /v1/cluster and in logs under the key "breaker".
type BreakerState string

// The breaker's states.
const (
	// BreakerClosed lets every call through; it counts consecutive failures.
	BreakerClosed BreakerState = "closed"
	// BreakerOpen rejects every call at once, without touching the network,
	// until its cool-down ends.
	BreakerOpen BreakerState = "open"
	// BreakerHalfOpen lets one probe call through; its outcome closes or
	// reopens the breaker.
	BreakerHalfOpen BreakerState = "half-open"
)

// outcome is what a guarded call reports back to the breaker.
type outcome int

const (
	// success: the dependency answered. Closes a half-open breaker and resets
	// the failure count of a closed one.
	success outcome = iota
	// failure: the dependency failed or timed out.
	failure
	// ignored: the call says nothing about the dependency (the caller gave up
	// first). It frees the probe slot and changes nothing else.
	ignored
)

// ticket is handed out by allow and given back to done. gen ties it to the
// state it was issued in: the outcome of a call issued before the last state
// change is stale and is dropped, so a slow call from before an outage cannot
// close a breaker that opened since.
type ticket struct {
	gen   uint64
	probe bool
}

// breaker is a circuit breaker with three states, independent of what it
// guards:
//
//	closed ──(Failures consecutive failures)──▶ open
//	open ──(cool-down elapsed, next call)──▶ half-open (that call is the probe)
//	half-open ──(probe succeeds)──▶ closed (cool-down reset)
//	half-open ──(probe fails)──▶ open (cool-down doubled, up to MaxCooldown)
//
// It is safe for concurrent use. The mutex guards the fields below and is
// never held while the guarded call runs: callers take a ticket with allow,
// make the call, and report with done. The clock is time.Now, so tests drive
// it with testing/synctest.
type breaker struct {
	cfg BreakerConfig // defaults filled in
	log *slog.Logger

	mu       sync.Mutex
	state    BreakerState
	gen      uint64        // incremented on every state change
	failures int           // consecutive failures while closed; Invariant: < cfg.Failures
	cooldown time.Duration // current cool-down; Invariant: cfg.Cooldown <= cooldown <= cfg.MaxCooldown
	openTill time.Time     // while open: when the next call may probe
	probing  bool          // while half-open: the probe is in flight
}

// newBreaker returns a closed breaker. cfg must have its defaults filled in.
func newBreaker(cfg BreakerConfig, log *slog.Logger) *breaker {
	return &breaker{cfg: cfg, log: log, state: BreakerClosed, cooldown: cfg.Cooldown}
}

// allow reports whether a call may go ahead. If ok, the caller must pass the
// ticket to done exactly once when the call ends.
func (b *breaker) allow() (t ticket, ok bool) {
	b.mu.Lock()
	ev := b.advance(time.Now())
	switch b.state {
	case BreakerClosed:
		t, ok = ticket{gen: b.gen}, true
	case BreakerHalfOpen:
		if !b.probing {
			b.probing = true
			t, ok = ticket{gen: b.gen, probe: true}, true
		}
	}
	b.mu.Unlock()
	ev.log(b.log, nil)
	return t, ok
}

// done records the outcome of a call allowed by allow. err, if any, is only
// logged.
func (b *breaker) done(t ticket, o outcome, err error) {
	b.mu.Lock()
	ev := b.record(t, o, time.Now())
	b.mu.Unlock()
	ev.log(b.log, err)
}

// State returns the current state. An open breaker whose cool-down has ended
// turns half-open here, as it would on the next call.
func (b *breaker) State() BreakerState {
	b.mu.Lock()
	ev := b.advance(time.Now())
	s := b.state
	b.mu.Unlock()
	ev.log(b.log, nil)
	return s
}

// record applies an outcome. b.mu must be held.
func (b *breaker) record(t ticket, o outcome, now time.Time) event {
	if t.gen != b.gen {
		return event{} // issued before the last state change: stale
	}
	switch b.state {
	case BreakerClosed:
		if o == success {
			b.failures = 0
		}
		if o == failure {
			b.failures++
			if b.failures >= b.cfg.Failures {
				b.open(now)
				return event{slog.LevelWarn, "breaker opened", b.state, b.cooldown}
			}
		}
	case BreakerHalfOpen:
		if !t.probe {
			return event{}
		}
		b.probing = false
		switch o {
		case success:
			b.set(BreakerClosed)
			b.cooldown = b.cfg.Cooldown
			return event{slog.LevelInfo, "breaker closed", b.state, 0}
		case failure:
			b.cooldown = min(2*b.cooldown, b.cfg.MaxCooldown)
			b.open(now)
			return event{slog.LevelWarn, "breaker reopened", b.state, b.cooldown}
		}
	}
	return event{}
}

// advance moves an open breaker to half-open once its cool-down has ended.
// b.mu must be held.
func (b *breaker) advance(now time.Time) event {
	if b.state != BreakerOpen || now.Before(b.openTill) {
		return event{}
	}
	b.set(BreakerHalfOpen)
	b.probing = false
	return event{slog.LevelInfo, "breaker half-open", b.state, 0}
}

// open moves to open for the current cool-down. b.mu must be held.
func (b *breaker) open(now time.Time) {
	b.set(BreakerOpen)
	b.openTill = now.Add(b.cooldown)
}

// set changes the state, resets the failure count and invalidates
// outstanding tickets. b.mu must be held.
func (b *breaker) set(s BreakerState) {
	b.state = s
	b.failures = 0
	b.gen++
}

// event is a state change to log once b.mu is released: logging is I/O.
type event struct {
	level    slog.Level
	msg      string // empty: nothing happened
	state    BreakerState
	cooldown time.Duration // logged when > 0
}

// log writes the event, if any, with the error that caused it, if any.
func (e event) log(l *slog.Logger, err error) {
	if e.msg == "" {
		return
	}
	args := []any{"breaker", e.state}
	if err != nil {
		args = append(args, "err", err)
	}
	if e.cooldown > 0 {
		args = append(args, "cooldown", e.cooldown)
	}
	l.Log(context.Background(), e.level, e.msg, args...)
}
