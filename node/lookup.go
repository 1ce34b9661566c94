package node

import (
	"context"
	"errors"
	"net/url"
	"sync"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/replication"
	"github.com/txlog/txlog/store"
	"github.com/txlog/txlog/txid"
)

// lookups answers reads of transactions and keys from this node's applied
// state, after catching up with the leader's commit index, and finds a
// transaction accepted and not resolved yet (pending) in an intake: this
// node's, or that of the node that holds it, which it asks. Node embeds it for
// the reads of api.Backend (Tx, TxByIdempotencyKey, Get, Log) and for
// api.LogFollower.
type lookups struct {
	self   string // this node's ID
	db     *store.DB
	raft   *replication.Raft
	intake *intake
	peers  *peers
	mem    *membership
}

// Tx implements api.Backend: a transaction by its txid, at the consistency
// of opts (consistentRead).
func (l *lookups) Tx(ctx context.Context, id txid.ID, wait time.Duration, opts wire.ReadOptions) (wire.TxResult, error) {
	return consistentRead(ctx, l, opts, func(ctx context.Context) (wire.TxResult, error) {
		return l.lookup(ctx, wait, id, func() (store.Outcome, error) { return l.db.Reads().Tx(id) },
			func(ctx context.Context) (wire.TxResult, bool) { return l.pendingAnywhere(ctx, id) })
	}, func(ctx context.Context, addr string, opts wire.ReadOptions) (wire.TxResult, error) {
		var res wire.TxResult
		err := l.peers.client.Read(ctx, addr, "/v1/tx/"+id.String(), waitQuery(wait), opts, &res)
		return res, err
	})
}

// waitQuery is the query of a forwarded long poll: wait, if any.
func waitQuery(wait time.Duration) url.Values {
	q := url.Values{}
	if wait > 0 {
		q.Set("wait", wait.String())
	}
	return q
}

// TxByIdempotencyKey implements api.Backend, at the consistency of opts
// (consistentRead). A key that is not in the store
// but unresolved in a node's intake (in flight or parked) is "pending", with
// the txid that node gave it: this node's intake, else every other node's,
// which it asks (forwarded, so that they ask no further). A key names no node,
// as a txid does, hence the asking of all.
//
// A forwarded lookup without a consistency level is such an ask
// (peer.Client.PendingKey): it answers only from this node's intake. One
// with a level is a read another node forwards to this one, the leader.
func (l *lookups) TxByIdempotencyKey(ctx context.Context, key string, wait time.Duration, opts wire.ReadOptions) (wire.TxResult, error) {
	if opts.Forwarded && opts.Consistency == "" {
		// The store is the same on every node: what the asking node did not
		// find there, only an intake may hold.
		if res, ok := l.pendingKeyHere(key); ok {
			return res, nil
		}
		return wire.TxResult{}, wire.ErrNotFound
	}
	return consistentRead(ctx, l, opts, func(ctx context.Context) (wire.TxResult, error) {
		return l.lookup(ctx, wait, 0, func() (store.Outcome, error) { return l.db.Reads().TxByIdempotencyKey(key) },
			func(ctx context.Context) (wire.TxResult, bool) {
				if res, ok := l.pendingKeyHere(key); ok {
					return res, true
				}
				return l.pendingKeyElsewhere(ctx, key)
			})
	}, func(ctx context.Context, addr string, opts wire.ReadOptions) (wire.TxResult, error) {
		var res wire.TxResult
		q := waitQuery(wait)
		q.Set("idempotency_key", key)
		err := l.peers.client.Read(ctx, addr, "/v1/tx", q, opts, &res)
		return res, err
	})
}

// pendingKeyHere returns the pending result of the transaction under key that
// this node accepted and has not resolved, if there is one.
func (l *lookups) pendingKeyHere(key string) (wire.TxResult, bool) {
	id, heldBy, ok := l.intake.pendingKey(key)
	return wire.TxResult{TxID: id, Status: wire.StatusPending, IdempotencyKey: key, HeldBy: heldBy}, ok
}

// pendingKeyElsewhere asks every other node with a known HTTP address, at
// once and for up to a second, whether it holds key unresolved; the first to
// say pending answers.
func (l *lookups) pendingKeyElsewhere(ctx context.Context, key string) (wire.TxResult, bool) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	found := make(chan wire.TxResult, 1)
	var wg sync.WaitGroup
	for _, info := range l.peers.all() {
		if info.ID == l.self {
			continue
		}
		addr, ok := l.peers.addr(info.ID)
		if !ok {
			continue
		}
		wg.Go(func() {
			res, err := l.peers.client.PendingKey(ctx, addr, key)
			if err == nil && res.Status == wire.StatusPending && res.TxID != 0 {
				select {
				case found <- res:
					cancel()
				default:
				}
			}
		})
	}
	wg.Wait()
	select {
	case res := <-found:
		return res, true
	default:
		return wire.TxResult{}, false
	}
}

// lookup finds a transaction's outcome in this node's applied state, waiting
// up to wait for it to appear. A transaction that
// pending finds accepted and not resolved yet is "pending".
func (l *lookups) lookup(ctx context.Context, wait time.Duration, id txid.ID, find func() (store.Outcome, error), pending func(context.Context) (wire.TxResult, bool)) (wire.TxResult, error) {
	deadline := time.Now().Add(wait)
	for {
		// The index before the read: an entry applied after it wakes the
		// wait below, even one applied between the read and the wait.
		seen := l.db.AppliedIndex()
		o, err := find()
		if err == nil {
			// Found under another txid: this one was a resubmission of it.
			return result(o, id != 0 && o.TxID != id), nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return wire.TxResult{}, err
		}
		if time.Now().After(deadline) {
			if res, ok := pending(ctx); ok {
				return res, nil
			}
			return wire.TxResult{}, wire.ErrNotFound
		}
		wctx, cancel := context.WithDeadline(ctx, deadline)
		err = l.raft.WaitApplied(wctx, seen+1)
		cancel()
		if ctx.Err() != nil {
			return wire.TxResult{}, ctx.Err()
		}
	}
}

// pendingAnywhere reports whether a transaction is accepted and unresolved: here,
// or on the node that issued its txid (the txid names it), which it asks. The
// answer is the pending result, with where it is held when that is known.
func (l *lookups) pendingAnywhere(ctx context.Context, id txid.ID) (wire.TxResult, bool) {
	if heldBy, ok := l.intake.pendingTx(id); ok {
		return wire.TxResult{TxID: id, Status: wire.StatusPending, HeldBy: heldBy}, true
	}
	if int(id.Node()) == l.mem.nodeNumber() {
		return wire.TxResult{}, false
	}
	for _, info := range l.peers.all() {
		if info.TxIDNode != id.Node() || info.ID == l.self {
			continue
		}
		addr, ok := l.peers.addr(info.ID)
		if !ok {
			continue
		}
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		res, err := l.peers.client.Tx(ctx, addr, id, 0)
		if err != nil || res.Status != wire.StatusPending {
			return wire.TxResult{}, false
		}
		return wire.TxResult{TxID: id, Status: wire.StatusPending, HeldBy: res.HeldBy}, true
	}
	return wire.TxResult{}, false
}

// get reads key from this node's applied state.
func (l *lookups) get(key string) (wire.KV, error) {
	kv, err := l.db.Reads().Get(key)
	if err != nil {
		return wire.KV{}, translate(err)
	}
	return fromKV(kv), nil
}

// Get implements api.Backend, at the consistency of opts (consistentRead).
func (l *lookups) Get(ctx context.Context, key string, opts wire.ReadOptions) (wire.KV, error) {
	return consistentRead(ctx, l, opts, func(context.Context) (wire.KV, error) { return l.get(key) }, func(ctx context.Context, addr string, opts wire.ReadOptions) (wire.KV, error) {
		return l.peers.client.Get(ctx, addr, key, opts)
	})
}

// Log implements api.Backend. It reads this node's applied log.
func (l *lookups) Log(ctx context.Context, from uint64, limit int) (wire.LogPage, error) {
	recs, next, err := l.db.Reads().Log(from, limit)
	if err != nil {
		return wire.LogPage{}, err
	}
	page := wire.LogPage{Entries: make([]wire.LogEntry, len(recs)), Next: next}
	for i, r := range recs {
		page.Entries[i] = fromLogRecord(r)
	}
	return page, nil
}

// FirstIndex implements api.LogFollower: the index below which retention
// dropped log records (store.Reader.RetainedFrom), 1 when it dropped none.
func (l *lookups) FirstIndex() uint64 { return l.db.Reads().RetainedFrom() }

// Applied implements api.LogFollower. A node that does not run Raft applies
// nothing: its channel is never closed.
func (l *lookups) Applied() <-chan struct{} {
	if l.raft == nil {
		return nil
	}
	return l.raft.Applied()
}
