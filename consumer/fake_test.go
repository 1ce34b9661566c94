package consumer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/txlog/txlog/api/wire"
)

// fakeTxlog is an in-memory txlog for a Consumer: one lease table, keys with
// versions, group offsets and a log that its own Submits append to, applied
// atomically with the fence checked first, as the store does.
type fakeTxlog struct {
	mu       sync.Mutex
	tokens   map[string]uint64 // lease → current token
	holders  map[string]string
	versions map[string]uint64
	offsets  map[string]uint64
	entries  []wire.LogEntry
	next     uint64 // the next log index
	// appended is closed and replaced at each append: LogWait's wake-up.
	appended chan struct{}
	// waits counts LogWait calls that waited.
	waits int
	// waiting is closed when a LogWait first waits.
	waiting chan struct{}

	// lostAnswers is how many committed non-probe Submits answer an error
	// (the outcome a dropped connection leaves unknown).
	lostAnswers int
	// reached is closed once watchGroup's offset reaches watchOffset.
	watchGroup  string
	watchOffset uint64
	reached     chan struct{}
	// afterCommit runs after each committed Submit, under mu.
	afterCommit func(f *fakeTxlog)
}

func newFake() *fakeTxlog {
	return &fakeTxlog{tokens: map[string]uint64{}, holders: map[string]string{}, versions: map[string]uint64{}, offsets: map[string]uint64{}, next: 2, reached: make(chan struct{}), appended: make(chan struct{}), waiting: make(chan struct{})}
}

// appendWrite logs a committed transaction of ops, as another client's.
func (f *fakeTxlog) appendWrite(ops ...wire.Op) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.apply(wire.TxRequest{Ops: ops}).index
}

type applied struct {
	index uint64
	res   wire.TxResult
}

func (f *fakeTxlog) apply(tx wire.TxRequest) applied {
	idx := f.next
	f.next++
	e := wire.LogEntry{Index: idx, Ops: tx.Ops, Fence: tx.Fence, Status: wire.StatusCommitted}
	res := wire.TxResult{Status: wire.StatusCommitted}
	conflict := func(c *wire.Conflict) applied {
		e.Status, e.Conflict = wire.StatusRejected, c
		f.append(e)
		return applied{idx, wire.TxResult{Status: wire.StatusRejected, Conflict: c}}
	}
	if tx.Fence != nil && f.tokens[tx.Fence.Lease] != tx.Fence.Token {
		return conflict(&wire.Conflict{Fence: tx.Fence.Lease, Expected: tx.Fence.Token, Actual: f.tokens[tx.Fence.Lease]})
	}
	for _, op := range tx.Ops {
		switch op.Op {
		case wire.OpCommitOffset:
			if !op.Reset && op.Offset <= f.offsets[op.Group] {
				return conflict(&wire.Conflict{Group: op.Group, Expected: op.Offset, Actual: f.offsets[op.Group]})
			}
		case wire.OpPut:
			if op.IfVersion != nil && *op.IfVersion != f.versions[op.Key] {
				return conflict(&wire.Conflict{Key: op.Key, Expected: *op.IfVersion, Actual: f.versions[op.Key]})
			}
		}
	}
	for _, op := range tx.Ops {
		switch op.Op {
		case wire.OpCommitOffset:
			f.offsets[op.Group] = op.Offset
			if op.Group == f.watchGroup && op.Offset >= f.watchOffset && f.watchOffset > 0 {
				close(f.reached)
				f.watchOffset = 0
			}
		case wire.OpPut:
			f.versions[op.Key]++
		}
	}
	f.append(e)
	if f.afterCommit != nil {
		f.afterCommit(f)
	}
	return applied{idx, res}
}

func (f *fakeTxlog) Submit(ctx context.Context, tx wire.TxRequest, _ wire.SubmitOptions) (wire.TxResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a := f.apply(tx)
	probe := len(tx.Ops) == 1 && tx.Ops[0].Offset == probeOffset
	if a.res.Status == wire.StatusCommitted && !probe && f.lostAnswers > 0 {
		f.lostAnswers--
		return wire.TxResult{}, errors.New("connection reset")
	}
	return a.res, nil
}

func (f *fakeTxlog) append(e wire.LogEntry) {
	f.entries = append(f.entries, e)
	close(f.appended)
	f.appended = make(chan struct{})
}

// LogWait answers as the server does: the entries at from or later, or, when
// there are none, waits up to wait for one to be appended.
func (f *fakeTxlog) LogWait(ctx context.Context, from uint64, limit int, prefix string, wait time.Duration) (wire.LogPage, error) {
	var timeout <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	for {
		f.mu.Lock()
		var page wire.LogPage
		for _, e := range f.entries {
			if e.Index >= from && len(page.Entries) < limit {
				page.Entries = append(page.Entries, e)
			}
		}
		page.Next = f.next
		appended := f.appended
		if len(page.Entries) > 0 || wait <= 0 {
			f.mu.Unlock()
			return page, nil
		}
		if f.waits++; f.waits == 1 {
			close(f.waiting)
		}
		f.mu.Unlock()
		select {
		case <-ctx.Done():
			return wire.LogPage{}, ctx.Err()
		case <-timeout:
			return page, nil
		case <-appended:
		}
	}
}

func (f *fakeTxlog) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (wire.LeaseResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tokens[name]++
	f.holders[name] = holder
	return wire.LeaseResult{Lease: wire.Lease{Name: name, Holder: holder, Token: f.tokens[name]}, Acquired: true}, nil
}

func (f *fakeTxlog) RenewLease(ctx context.Context, name, holder string, token uint64, ttl time.Duration) (wire.LeaseResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.tokens[name] != token {
		return wire.LeaseResult{}, &wire.LeaseError{Code: wire.CodeFenced, Message: "taken over"}
	}
	return wire.LeaseResult{Lease: wire.Lease{Name: name, Holder: holder, Token: token}}, nil
}

func (f *fakeTxlog) ReleaseLease(ctx context.Context, name, holder string, token uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.tokens[name] != token {
		return &wire.LeaseError{Code: wire.CodeFenced, Message: "taken over"}
	}
	f.holders[name] = ""
	return nil
}

func (f *fakeTxlog) Lease(ctx context.Context, name string, wait time.Duration, after uint64) (wire.Lease, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return wire.Lease{Name: name, Holder: f.holders[name], Token: f.tokens[name]}, nil
}

func (f *fakeTxlog) version(key string) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.versions[key]
}

func (f *fakeTxlog) offset(group string) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.offsets[group]
}

// watch makes f.reached close once group's offset reaches offset.
func (f *fakeTxlog) watch(group string, offset uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.watchGroup, f.watchOffset = group, offset
	if f.offsets[group] >= offset {
		close(f.reached)
		f.watchOffset = 0
	}
}

func projKey(index uint64) string { return fmt.Sprintf("proj/%d", index) }
