package node

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/replication"
	"github.com/txlog/txlog/store"
	"github.com/txlog/txlog/txid"
)

var _ api.Backend = (*Node)(nil)

// Propose implements api.Backend: the leader's side of forwarding. It makes one
// attempt; the forwarding node retries.
func (n *Node) Propose(ctx context.Context, frames [][]byte, opts wire.SubmitOptions) ([]wire.TxResult, error) {
	if !n.raft.IsLeader() {
		return nil, wire.ErrNotLeader
	}
	results := make([]wire.TxResult, len(frames))
	ps := make([]*pending, 0, len(frames))
	slot := make([]int, 0, len(frames))
	for i, f := range frames {
		p, err := decodeFrame(f, !opts.Fresh)
		if err != nil {
			results[i].Error = &wire.ErrorBody{Code: wire.CodeInvalidTx, Message: err.Error()}
			continue
		}
		ps = append(ps, p)
		slot = append(slot, i)
	}
	n.proposeLocal(ctx, ps)
	for j, p := range ps {
		r := p.res
		switch {
		case p.done && p.err != nil:
			r.Error = wire.NewErrorBody(p.err)
		case !p.done && p.sent:
			r = wire.TxResult{TxID: p.id, Status: wire.StatusUnknown, Error: wire.NewErrorBody(wire.ErrUnknownOutcome)}
		case !p.done:
			r = wire.TxResult{TxID: p.id, Error: wire.NewErrorBody(wire.ErrNotLeader)}
		}
		results[slot[j]] = r
	}
	return results, nil
}

// decodeFrame decodes a forwarded command and checks its payload. sent says
// whether the forwarding node may have sent it to a leader before; then it is
// looked up in the log before it is proposed.
func decodeFrame(f []byte, sent bool) (*pending, error) {
	c, err := store.DecodeCommand(f)
	if err != nil {
		return nil, err
	}
	p := &pending{kind: c.Kind, payload: c.Payload, sent: sent}
	switch c.Kind {
	case store.KindTx:
		tx, err := store.DecodeTx(c.Payload)
		if err != nil {
			return nil, err
		}
		p.id = tx.ID
	case store.KindRegisterNode:
		if _, err := store.DecodeNode(c.Payload); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("command kind %d: not accepted from other nodes", c.Kind)
	}
	return p, nil
}

// Tx implements api.Backend.
func (n *Node) Tx(ctx context.Context, id txid.ID, wait time.Duration) (wire.TxResult, error) {
	return n.lookup(ctx, wait, id, func() (store.Outcome, error) { return n.db.Tx(id) },
		func(ctx context.Context) (wire.TxResult, bool) { return n.pendingAnywhere(ctx, id) })
}

// TxByIdempotencyKey implements api.Backend. A key that is not in the store
// but unresolved in a node's intake (in flight or parked) is "pending", with
// the txid that node gave it: this node's intake, else every other node's,
// which it asks (forwarded, so that they ask no further). A key names no node,
// as a txid does, hence the asking of all.
func (n *Node) TxByIdempotencyKey(ctx context.Context, key string, wait time.Duration, forwarded bool) (wire.TxResult, error) {
	if forwarded {
		// The store is the same on every node: what the asking node did not
		// find there, only an intake may hold.
		if res, ok := n.pendingKeyHere(key); ok {
			return res, nil
		}
		return wire.TxResult{}, wire.ErrNotFound
	}
	return n.lookup(ctx, wait, 0, func() (store.Outcome, error) { return n.db.TxByIdempotencyKey(key) },
		func(ctx context.Context) (wire.TxResult, bool) {
			if res, ok := n.pendingKeyHere(key); ok {
				return res, true
			}
			return n.pendingKeyElsewhere(ctx, key)
		})
}

// pendingKeyHere returns the pending result of the transaction under key that
// this node accepted and has not resolved, if there is one.
func (n *Node) pendingKeyHere(key string) (wire.TxResult, bool) {
	id, heldBy, ok := n.intake.pendingKey(key)
	return wire.TxResult{TxID: id, Status: wire.StatusPending, IdempotencyKey: key, HeldBy: heldBy}, ok
}

// pendingKeyElsewhere asks every other node with a known HTTP address, at
// once and for up to a second, whether it holds key unresolved; the first to
// say pending answers.
func (n *Node) pendingKeyElsewhere(ctx context.Context, key string) (wire.TxResult, bool) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	found := make(chan wire.TxResult, 1)
	var wg sync.WaitGroup
	for _, info := range n.peers.all() {
		if info.ID == n.cfg.ID || info.HTTPAddr == "" {
			continue
		}
		base := "http://" + info.HTTPAddr
		wg.Go(func() {
			res, err := n.peerClient(base).PendingKeyFrom(ctx, base, key)
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

// lookup finds a transaction's outcome after catching up with the leader's
// commit index, waiting up to wait for it to appear. A transaction that
// pending finds accepted and not resolved yet is "pending".
func (n *Node) lookup(ctx context.Context, wait time.Duration, id txid.ID, find func() (store.Outcome, error), pending func(context.Context) (wire.TxResult, bool)) (wire.TxResult, error) {
	n.catchUp(ctx)
	deadline := time.Now().Add(wait)
	for {
		o, err := find()
		if err == nil {
			// Found under another txid: this one was a resubmission of it.
			return n.result(o, id != 0 && o.TxID != id), nil
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
		err = n.raft.WaitApplied(wctx, n.db.AppliedIndex()+1)
		cancel()
		if ctx.Err() != nil {
			return wire.TxResult{}, ctx.Err()
		}
	}
}

// pendingAnywhere reports whether a transaction is accepted and unresolved: here,
// or on the node that issued its txid (the txid names it), which it asks. The
// answer is the pending result, with where it is held when that is known.
func (n *Node) pendingAnywhere(ctx context.Context, id txid.ID) (wire.TxResult, bool) {
	if heldBy, ok := n.intake.pendingTx(id); ok {
		return wire.TxResult{TxID: id, Status: wire.StatusPending, HeldBy: heldBy}, true
	}
	if int(id.Node()) == n.nodeNumber() {
		return wire.TxResult{}, false
	}
	for _, info := range n.peers.all() {
		if info.TxIDNode != id.Node() || info.ID == n.cfg.ID || info.HTTPAddr == "" {
			continue
		}
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		res, err := n.peerClient("http://"+info.HTTPAddr).Tx(ctx, id, 0)
		if err != nil || res.Status != wire.StatusPending {
			return wire.TxResult{}, false
		}
		return wire.TxResult{TxID: id, Status: wire.StatusPending, HeldBy: res.HeldBy}, true
	}
	return wire.TxResult{}, false
}

// catchUp waits briefly until this node has applied what it knows is committed:
// on the leader through a ReadIndex, elsewhere up to the commit index the leader
// last told it.
func (n *Node) catchUp(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if n.raft.IsLeader() {
		if _, err := n.raft.ReadIndex(ctx); err == nil {
			return
		}
	}
	_ = n.raft.WaitCurrent(ctx, n.raft.Status().CommitIndex)
}

// Get implements api.Backend.
func (n *Node) Get(ctx context.Context, key string, opts wire.ReadOptions) (wire.KV, error) {
	switch opts.Consistency {
	case wire.ConsistencyStale:
		return n.localGet(key)
	case wire.ConsistencyLeader, wire.ConsistencyLinearizable, "":
	default:
		return wire.KV{}, &wire.Error{Code: wire.CodeInvalidParam, Message: "consistency: want linearizable, leader or stale"}
	}
	var kv wire.KV
	err := n.viaLeader(ctx, opts.Forwarded, func(ctx context.Context) error {
		if opts.Consistency != wire.ConsistencyLeader {
			if _, err := n.raft.ReadIndex(ctx); err != nil {
				return translate(err)
			}
		}
		var err error
		kv, err = n.localGet(key)
		return err
	}, func(ctx context.Context, base string) error {
		fwd := opts
		fwd.Forwarded = true
		var err error
		kv, err = n.client.GetFrom(ctx, base, key, fwd)
		return err
	})
	return kv, err
}

func (n *Node) localGet(key string) (wire.KV, error) {
	kv, err := n.db.Get(key)
	if err != nil {
		return wire.KV{}, translate(err)
	}
	return fromKV(kv), nil
}

// viaLeader runs local on the leader, or remote against the leader's HTTP base
// URL, retrying across leader changes until ctx ends. A request forwarded to this
// node is never forwarded again.
func (n *Node) viaLeader(ctx context.Context, forwarded bool, local func(context.Context) error, remote func(context.Context, string) error) error {
	backoff := minBackoff
	for {
		leader, _ := n.raft.Leader()
		var err error
		switch {
		case leader == n.cfg.ID:
			err = local(ctx)
		case forwarded:
			return wire.ErrNotLeader
		case leader == "":
			err = wire.ErrNoLeader
		default:
			info, ok := n.peers.lookup(leader)
			if !ok || info.HTTPAddr == "" {
				err = wire.ErrNoLeader
			} else {
				err = remote(ctx, "http://"+info.HTTPAddr)
			}
		}
		if !retryable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// retryable reports whether an error may go away once a leader is found.
func retryable(err error) bool {
	if err == nil {
		return false
	}
	var ae *wire.Error
	if errors.As(err, &ae) || errors.Is(err, wire.ErrNotFound) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	return true
}

// Log implements api.Backend. It reads this node's applied log.
func (n *Node) Log(ctx context.Context, from uint64, limit int) (wire.LogPage, error) {
	recs, next, err := n.db.Log(from, limit)
	if err != nil {
		return wire.LogPage{}, err
	}
	page := wire.LogPage{Entries: make([]wire.LogEntry, len(recs)), Next: next}
	for i, r := range recs {
		page.Entries[i] = fromLogRecord(r)
	}
	return page, nil
}

// Cluster implements api.Backend.
func (n *Node) Cluster(ctx context.Context) (wire.ClusterStatus, error) {
	st := n.raft.Status()
	cs := wire.ClusterStatus{
		ID:           n.cfg.ID,
		State:        st.State,
		LeaderID:     st.LeaderID,
		Term:         st.Term,
		CommitIndex:  st.CommitIndex,
		AppliedIndex: st.AppliedIndex,
	}
	peers := n.peers.all()
	if info, ok := peers[st.LeaderID]; ok {
		cs.LeaderHTTPAddr = info.HTTPAddr
	}
	members, err := n.raft.Members(ctx)
	if err != nil {
		return cs, translate(err)
	}
	for _, m := range members {
		am := wire.Member{ID: m.ID, RaftAddr: m.Addr, Suffrage: m.Suffrage, Leader: m.Leader, HTTPAddr: peers[m.ID].HTTPAddr, NodeNumber: int(peers[m.ID].TxIDNode)}
		if m.LastContact > 0 {
			am.LastContact = m.LastContact.String()
		}
		cs.Members = append(cs.Members, am)
	}
	cs.Extra = map[string]string{"intake_unresolved": strconv.Itoa(n.intake.size())}
	if n.park != nil {
		cs.Extra["redis_breaker"] = string(n.park.State())
	} else {
		cs.Extra["redis_breaker"] = "disabled"
	}
	return cs, nil
}

// Join implements api.Backend: on the leader, joinLocal (register.go).
func (n *Node) Join(ctx context.Context, req wire.JoinRequest) (wire.JoinResult, error) {
	var res wire.JoinResult
	err := n.viaLeader(ctx, false, func(ctx context.Context) error {
		var err error
		res, err = n.joinLocal(ctx, req)
		return err
	}, func(ctx context.Context, base string) error {
		var err error
		res, err = n.client.JoinVia(ctx, base, req)
		return err
	})
	return res, err
}

// Remove implements api.Backend.
func (n *Node) Remove(ctx context.Context, id string) error {
	return n.viaLeader(ctx, false, func(ctx context.Context) error {
		err := n.raft.Remove(ctx, id)
		if errors.Is(err, replication.ErrUnknownServer) {
			return wire.ErrNotFound
		}
		return translate(err)
	}, func(ctx context.Context, base string) error {
		return n.client.RemoveVia(ctx, base, id)
	})
}

// TransferLeadership implements api.Backend.
func (n *Node) TransferLeadership(ctx context.Context, req wire.TransferRequest) (wire.TransferResult, error) {
	var res wire.TransferResult
	err := n.viaLeader(ctx, false, func(ctx context.Context) error {
		id, err := n.raft.TransferLeadership(ctx, req.ID)
		if errors.Is(err, replication.ErrUnknownServer) {
			return &wire.Error{Code: wire.CodeInvalidParam, Message: fmt.Sprintf("id %q: not a member", req.ID)}
		}
		res.LeaderID = id
		return translate(err)
	}, func(ctx context.Context, base string) error {
		var err error
		res, err = n.client.TransferLeadershipVia(ctx, base, req)
		return err
	})
	return res, err
}

// Ready implements api.Backend: the intake WAL takes appends, a leader is known
// and this node has applied what it knows the leader has committed. A broken
// intake WAL (a failed write or fsync; its errors are sticky until a restart)
// leaves the node unable to park a write or take one with ack=accepted, so it
// is reported first.
func (n *Node) Ready(ctx context.Context) error {
	if err := n.mem.writeErr(); err != nil {
		return err // removed, a node number clash, or none yet (number.go)
	}
	if err := n.intake.wal.Stats().Err; err != nil {
		return &wire.Error{Code: wire.CodeNotReady, Message: fmt.Sprintf("intake wal: %v (restart the node)", err)}
	}
	st := n.raft.Status()
	if st.LeaderID == "" {
		return &wire.Error{Code: wire.CodeNotReady, Message: "no leader known"}
	}
	if st.AppliedIndex < st.CommitIndex {
		return &wire.Error{Code: wire.CodeNotReady, Message: fmt.Sprintf("applied index %d behind commit index %d", st.AppliedIndex, st.CommitIndex)}
	}
	if _, ok := n.peers.lookup(st.LeaderID); !ok {
		return &wire.Error{Code: wire.CodeNotReady, Message: "leader's HTTP address not known yet"}
	}
	return nil
}
