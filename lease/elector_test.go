package lease

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/txlog/txlog/api/wire"
)

// fakeClient is a Client whose methods call its function fields; it counts
// the calls. A nil field answers as a cluster where the lease is free and
// every write holds.
type fakeClient struct {
	mu       sync.Mutex
	acquire  func(ctx context.Context) (wire.LeaseResult, error)
	renew    func(ctx context.Context, token uint64) (wire.LeaseResult, error)
	release  func(token uint64) error
	poll     func(ctx context.Context, wait time.Duration, after uint64) (wire.Lease, error)
	renewals int
	released []uint64
}

func (f *fakeClient) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (wire.LeaseResult, error) {
	if f.acquire != nil {
		return f.acquire(ctx)
	}
	return wire.LeaseResult{Lease: wire.Lease{Name: name, Holder: holder, Token: 7}, Acquired: true}, nil
}

func (f *fakeClient) RenewLease(ctx context.Context, name, holder string, token uint64, ttl time.Duration) (wire.LeaseResult, error) {
	f.mu.Lock()
	f.renewals++
	f.mu.Unlock()
	if f.renew != nil {
		return f.renew(ctx, token)
	}
	return wire.LeaseResult{Lease: wire.Lease{Name: name, Holder: holder, Token: token}}, nil
}

func (f *fakeClient) ReleaseLease(ctx context.Context, name, holder string, token uint64) error {
	f.mu.Lock()
	f.released = append(f.released, token)
	f.mu.Unlock()
	if f.release != nil {
		return f.release(token)
	}
	return nil
}

func (f *fakeClient) Lease(ctx context.Context, name string, wait time.Duration, after uint64) (wire.Lease, error) {
	if f.poll != nil {
		return f.poll(ctx, wait, after)
	}
	return wire.Lease{}, wire.ErrNotFound
}

func (f *fakeClient) counts() (int, []uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.renewals, append([]uint64(nil), f.released...)
}

func newElector(t *testing.T, c Client) *Elector {
	t.Helper()
	e, err := New(Config{Client: c, Name: "jobs/settle", Holder: "h1", TTL: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestRunRenewsAndResigns: while the renewals hold, fn runs for as long as
// it likes with renewals every TTL/3; cancelling ctx (a SIGTERM) cancels fn,
// and the lease is released after fn returned, not before.
func TestRunRenewsAndResigns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fc := &fakeClient{}
		e := newElector(t, fc)
		ctx, cancel := context.WithCancel(context.Background())
		var fnReturned time.Time
		var releasedAt time.Time
		fc.release = func(uint64) error { releasedAt = time.Now(); return nil }
		start := time.Now()
		done := make(chan error)
		go func() {
			done <- e.Run(ctx, func(ctx context.Context, token uint64) error {
				if token != 7 {
					t.Errorf("fn got token %d, want 7", token)
				}
				<-ctx.Done()
				time.Sleep(300 * time.Millisecond) // stopping takes a while
				fnReturned = time.Now()
				return nil
			})
		}()
		time.Sleep(60 * time.Second) // fake time
		synctest.Wait()
		renewals, released := fc.counts()
		if want := int(60 * time.Second / (5 * time.Second / 3)); renewals < want-1 || renewals > want {
			t.Fatalf("%d renewals in 60s, want about %d (every TTL/3)", renewals, want)
		}
		if len(released) != 0 {
			t.Fatalf("released %v while leading", released)
		}
		cancel()
		err := <-done
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run() = %v, want context.Canceled", err)
		}
		if _, released = fc.counts(); len(released) != 1 || released[0] != 7 {
			t.Fatalf("released %v, want token 7 once", released)
		}
		if releasedAt.Before(fnReturned) {
			t.Fatalf("released at %v, before fn returned at %v", releasedAt.Sub(start), fnReturned.Sub(start))
		}
		if e.Token() != 0 {
			t.Fatalf("Token() after resigning = %d", e.Token())
		}
	})
}

// TestRunSafetyMargin: when renewals fail (no leader), fn's context is
// cancelled Margin before the holder's deadline, which is the TTL after the
// last renewal that held was sent: before the lease can have expired.
func TestRunSafetyMargin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fc := &fakeClient{}
		var lastOK time.Time
		n := 0
		fc.renew = func(ctx context.Context, token uint64) (wire.LeaseResult, error) {
			n++
			if n <= 2 {
				lastOK = time.Now()
				return wire.LeaseResult{Lease: wire.Lease{Token: token}}, nil
			}
			// A leaderless cluster: the call hangs until its deadline.
			<-ctx.Done()
			return wire.LeaseResult{}, wire.ErrNoLeader
		}
		e := newElector(t, fc)
		var cancelledAt time.Time
		var cause error
		err := e.Run(context.Background(), func(ctx context.Context, token uint64) error {
			<-ctx.Done()
			cancelledAt, cause = time.Now(), context.Cause(ctx)
			return ctx.Err()
		})
		if !errors.Is(err, ErrLost) || !errors.Is(cause, ErrLost) {
			t.Fatalf("Run() = %v, cause %v; want ErrLost", err, cause)
		}
		deadline := lastOK.Add(5 * time.Second)
		if got, want := deadline.Sub(cancelledAt), time.Second; got != want {
			t.Fatalf("fn cancelled %v before the holder's deadline, want the margin %v", got, want)
		}
		if _, released := fc.counts(); len(released) != 0 {
			t.Fatalf("released %v after a loss, want nothing", released)
		}
	})
}

// TestRunFenced: a renewal refused as fenced cancels fn at once.
func TestRunFenced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fc := &fakeClient{renew: func(ctx context.Context, token uint64) (wire.LeaseResult, error) {
			return wire.LeaseResult{}, &wire.LeaseError{Code: wire.CodeFenced, Message: "fenced", Lease: wire.Lease{Token: 9}}
		}}
		e := newElector(t, fc)
		start := time.Now()
		err := e.Run(context.Background(), func(ctx context.Context, token uint64) error {
			<-ctx.Done()
			if took := time.Since(start); took != 5*time.Second/3 {
				t.Errorf("fn cancelled after %v, want at the first renewal (%v)", took, 5*time.Second/3)
			}
			return nil
		})
		if !errors.Is(err, ErrLost) {
			t.Fatalf("Run() = %v, want ErrLost", err)
		}
	})
}

// TestCampaignWaitsForHolder: while another holder has the lease the
// campaign long-polls with its token, and acquires once it is free.
func TestCampaignWaitsForHolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		free := start.Add(7 * time.Second)
		var polls []uint64
		fc := &fakeClient{
			acquire: func(ctx context.Context) (wire.LeaseResult, error) {
				if time.Now().Before(free) {
					return wire.LeaseResult{}, &wire.LeaseError{Code: wire.CodeLeaseHeld, Message: "held", Lease: wire.Lease{Token: 3, ExpiresIn: "5s"}}
				}
				return wire.LeaseResult{Lease: wire.Lease{Token: 11}, Acquired: true}, nil
			},
			poll: func(ctx context.Context, wait time.Duration, after uint64) (wire.Lease, error) {
				polls = append(polls, after)
				select {
				case <-time.After(time.Until(free)):
					return wire.Lease{}, wire.ErrNotFound
				case <-time.After(wait):
					return wire.Lease{Token: 3}, nil
				}
			},
		}
		e := newElector(t, fc)
		token, err := e.Campaign(context.Background())
		if err != nil || token != 11 {
			t.Fatalf("Campaign() = %d, %v", token, err)
		}
		if took := time.Since(start); took != 7*time.Second {
			t.Fatalf("Campaign took %v, want 7s (when the lease was freed)", took)
		}
		if len(polls) != 2 || polls[0] != 3 || polls[1] != 3 {
			t.Fatalf("polls after tokens %v, want [3 3] (6s, then the release)", polls)
		}
	})
}

// TestObserve: the state now, then each change of holder and each release.
func TestObserve(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		states := []struct {
			l   wire.Lease
			err error
		}{{wire.Lease{Token: 3, Holder: "a"}, nil}, {wire.Lease{Token: 3, Holder: "a"}, nil}, {wire.Lease{}, wire.ErrNotFound}, {wire.Lease{Token: 8, Holder: "b"}, nil}}
		i := 0
		var afters []uint64
		fc := &fakeClient{poll: func(ctx context.Context, wait time.Duration, after uint64) (wire.Lease, error) {
			if (len(afters) == 0) != (wait == 0) {
				t.Errorf("poll %d with wait %v: want 0 for the first (the state now) only", len(afters), wait)
			}
			afters = append(afters, after)
			if i == len(states) {
				<-ctx.Done()
				return wire.Lease{}, ctx.Err()
			}
			s := states[i]
			i++
			return s.l, s.err
		}}
		e := newElector(t, fc)
		ctx, cancel := context.WithCancel(context.Background())
		ch := e.Observe(ctx)
		var got []uint64
		for range 3 {
			got = append(got, (<-ch).Token)
		}
		// Let the observer reach its next poll (which blocks until ctx ends)
		// before cancelling, or it may see ctx done first and never poll.
		synctest.Wait()
		cancel()
		for range ch {
		}
		if want := []uint64{3, 0, 8}; len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
			t.Fatalf("Observe() sent tokens %v, want %v", got, want)
		}
		if want := []uint64{0, 3, 3, 0, 8}; len(afters) != len(want) {
			t.Fatalf("polled after %v, want %v", afters, want)
		}
	})
}

func TestConfigValidate(t *testing.T) {
	fc := &fakeClient{}
	for name, cfg := range map[string]Config{
		"no client":       {Name: "l", Holder: "h"},
		"no name":         {Client: fc, Holder: "h"},
		"no holder":       {Client: fc, Name: "l"},
		"ttl too short":   {Client: fc, Name: "l", Holder: "h", TTL: 500 * time.Millisecond},
		"no room":         {Client: fc, Name: "l", Holder: "h", TTL: 3 * time.Second, RenewEvery: 2 * time.Second, Margin: time.Second},
		"negative margin": {Client: fc, Name: "l", Holder: "h", Margin: -1},
	} {
		if err := cfg.Validate(); err == nil {
			t.Errorf("%s: Validate() = nil", name)
		}
	}
	if err := (Config{Client: fc, Name: "l", Holder: "h"}).Validate(); err != nil {
		t.Errorf("defaults: Validate() = %v", err)
	}
}
