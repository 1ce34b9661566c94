package node

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/replication"
	"github.com/txlog/txlog/store"
	"github.com/txlog/txlog/txid"
)

var _ api.Backend = (*Node)(nil)

// Propose implements api.Backend: the leader's side of forwarding. It makes one
// attempt; the forwarding node retries.
func (n *Node) Propose(ctx context.Context, frames [][]byte, opts api.SubmitOptions) ([]api.TxResult, error) {
	if !n.raft.IsLeader() {
		return nil, api.ErrNotLeader
	}
	results := make([]api.TxResult, len(frames))
	ps := make([]*pending, 0, len(frames))
	slot := make([]int, 0, len(frames))
	for i, f := range frames {
		p, err := decodeFrame(f, !opts.Fresh)
		if err != nil {
			results[i].Error = &api.ErrorBody{Code: api.CodeInvalidTx, Message: err.Error()}
			continue
		}
		ps = append(ps, p)
		slot = append(slot, i)
	}
	n.proposeLocal(ctx, ps)
	for j, p := range ps {
		r := p.st.res
		switch {
		case p.st.isDone() && p.st.err != nil:
			r.Error = api.NewErrorBody(p.st.err)
		case p.st.isSent():
			r = api.TxResult{TxID: p.id, Status: api.StatusUnknown, Error: api.NewErrorBody(api.ErrUnknownOutcome)}
		case !p.st.isDone():
			r = api.TxResult{TxID: p.id, Error: api.NewErrorBody(api.ErrNotLeader)}
		}
		results[slot[j]] = r
	}
	return results, nil
}

// decodeFrame decodes a forwarded command and checks its payload, learning a
// transaction's txid. sent says
// whether the forwarding node may have sent it to a leader before; then it is
// looked up in the log before it is proposed.
func decodeFrame(f []byte, sent bool) (*pending, error) {
	c, err := store.DecodeCommand(f)
	if err != nil {
		return nil, err
	}
	p := &pending{kind: c.Kind, payload: c.Payload}
	if sent {
		p.st.send()
	}
	switch c.Kind {
	case store.KindTx:
		// Checked, not decoded: Apply decodes it, once (store.CheckTx).
		id, err := store.CheckTx(c.Payload)
		if err != nil {
			return nil, err
		}
		p.id = id
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
func (n *Node) Tx(ctx context.Context, id txid.ID, wait time.Duration) (api.TxResult, error) {
	return n.lookup(ctx, wait, id, func() (store.Outcome, error) { return n.db.Tx(id) },
		func(ctx context.Context) (api.TxResult, bool) { return n.pendingAnywhere(ctx, id) })
}

// TxByIdempotencyKey implements api.Backend. A key that is not in the store
// but unresolved in a node's intake (in flight or parked) is "pending", with
// the txid that node gave it: this node's intake, else every other node's,
// which it asks (forwarded, so that they ask no further). A key names no node,
// as a txid does, hence the asking of all.
func (n *Node) TxByIdempotencyKey(ctx context.Context, key string, wait time.Duration, forwarded bool) (api.TxResult, error) {
	if forwarded {
		// The store is the same on every node: what the asking node did not
		// find there, only an intake may hold.
		if res, ok := n.pendingKeyHere(key); ok {
			return res, nil
		}
		return api.TxResult{}, api.ErrNotFound
	}
	return n.lookup(ctx, wait, 0, func() (store.Outcome, error) { return n.db.TxByIdempotencyKey(key) },
		func(ctx context.Context) (api.TxResult, bool) {
			if res, ok := n.pendingKeyHere(key); ok {
				return res, true
			}
			return n.pendingKeyElsewhere(ctx, key)
		})
}

// pendingKeyHere returns the pending result of the transaction under key that
// this node accepted and has not resolved, if there is one.
func (n *Node) pendingKeyHere(key string) (api.TxResult, bool) {
	id, heldBy, ok := n.intake.pendingKey(key)
	return api.TxResult{TxID: id, Status: api.StatusPending, IdempotencyKey: key, HeldBy: heldBy}, ok
}

// pendingKeyElsewhere asks every other node with a known HTTP address, at
// once and for up to a second, whether it holds key unresolved; the first to
// say pending answers.
func (n *Node) pendingKeyElsewhere(ctx context.Context, key string) (api.TxResult, bool) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	found := make(chan api.TxResult, 1)
	var wg sync.WaitGroup
	for _, info := range n.peers.all() {
		if info.ID == n.cfg.ID || info.HTTPAddr == "" {
			continue
		}
		base := "http://" + info.HTTPAddr
		wg.Go(func() {
			res, err := n.peerClient(base).PendingKeyFrom(ctx, base, key)
			if err == nil && res.Status == api.StatusPending && res.TxID != 0 {
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
		return api.TxResult{}, false
	}
}

// lookup finds a transaction's outcome after catching up with the leader's
// commit index, waiting up to wait for it to appear. A transaction that
// pending finds accepted and not resolved yet is "pending".
func (n *Node) lookup(ctx context.Context, wait time.Duration, id txid.ID, find func() (store.Outcome, error), pending func(context.Context) (api.TxResult, bool)) (api.TxResult, error) {
	n.catchUp(ctx)
	deadline := time.Now().Add(wait)
	for {
		o, err := find()
		if err == nil {
			// Found under another txid: this one was a resubmission of it.
			return n.result(o, id != 0 && o.TxID != id), nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return api.TxResult{}, err
		}
		if time.Now().After(deadline) {
			if res, ok := pending(ctx); ok {
				return res, nil
			}
			return api.TxResult{}, api.ErrNotFound
		}
		wctx, cancel := context.WithDeadline(ctx, deadline)
		err = n.raft.WaitApplied(wctx, n.db.AppliedIndex()+1)
		cancel()
		if ctx.Err() != nil {
			return api.TxResult{}, ctx.Err()
		}
	}
}

// pendingAnywhere reports whether a transaction is accepted and unresolved: here,
// or on the node that issued its txid (the txid names it), which it asks. The
// answer is the pending result, with where it is held when that is known.
func (n *Node) pendingAnywhere(ctx context.Context, id txid.ID) (api.TxResult, bool) {
	if heldBy, ok := n.intake.pendingTx(id); ok {
		return api.TxResult{TxID: id, Status: api.StatusPending, HeldBy: heldBy}, true
	}
	if int(id.Node()) == n.nodeNumber() {
		return api.TxResult{}, false
	}
	for _, info := range n.peers.all() {
		if info.TxIDNode != id.Node() || info.ID == n.cfg.ID || info.HTTPAddr == "" {
			continue
		}
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		res, err := n.peerClient("http://"+info.HTTPAddr).Tx(ctx, id, 0)
		if err != nil || res.Status != api.StatusPending {
			return api.TxResult{}, false
		}
		return api.TxResult{TxID: id, Status: api.StatusPending, HeldBy: res.HeldBy}, true
	}
	return api.TxResult{}, false
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
func (n *Node) Get(ctx context.Context, key string, opts api.ReadOptions) (api.KV, error) {
	switch opts.Consistency {
	case api.ConsistencyStale:
		return n.localGet(key)
	case api.ConsistencyLeader, api.ConsistencyLinearizable, "":
	default:
		return api.KV{}, &api.Error{Code: api.CodeInvalidParam, Message: "consistency: want linearizable, leader or stale"}
	}
	var kv api.KV
	err := n.viaLeader(ctx, opts.Forwarded, func(ctx context.Context) error {
		if opts.Consistency != api.ConsistencyLeader {
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

func (n *Node) localGet(key string) (api.KV, error) {
	kv, err := n.db.Get(key)
	if err != nil {
		return api.KV{}, translate(err)
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
			return api.ErrNotLeader
		case leader == "":
			err = api.ErrNoLeader
		default:
			info, ok := n.peers.lookup(leader)
			if !ok || info.HTTPAddr == "" {
				err = api.ErrNoLeader
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
	var ae *api.Error
	if errors.As(err, &ae) || errors.Is(err, api.ErrNotFound) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	return true
}

// Log implements api.Backend. It reads this node's applied log.
func (n *Node) Log(ctx context.Context, from uint64, limit int) (api.LogPage, error) {
	recs, next, err := n.db.Log(from, limit)
	if err != nil {
		return api.LogPage{}, err
	}
	page := api.LogPage{Entries: make([]api.LogEntry, len(recs)), Next: next}
	for i, r := range recs {
		page.Entries[i] = fromLogRecord(r)
	}
	return page, nil
}

// Cluster implements api.Backend.
func (n *Node) Cluster(ctx context.Context) (api.ClusterStatus, error) {
	st := n.raft.Status()
	cs := api.ClusterStatus{
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
		am := api.Member{ID: m.ID, RaftAddr: m.Addr, Suffrage: m.Suffrage, Leader: m.Leader, HTTPAddr: peers[m.ID].HTTPAddr, NodeNumber: int(peers[m.ID].TxIDNode)}
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
func (n *Node) Join(ctx context.Context, req api.JoinRequest) (api.JoinResult, error) {
	var res api.JoinResult
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
			return api.ErrNotFound
		}
		return translate(err)
	}, func(ctx context.Context, base string) error {
		return n.client.RemoveVia(ctx, base, id)
	})
}

// TransferLeadership implements api.Backend.
func (n *Node) TransferLeadership(ctx context.Context, req api.TransferRequest) (api.TransferResult, error) {
	var res api.TransferResult
	err := n.viaLeader(ctx, false, func(ctx context.Context) error {
		id, err := n.raft.TransferLeadership(ctx, req.ID)
		if errors.Is(err, replication.ErrUnknownServer) {
			return &api.Error{Code: api.CodeInvalidParam, Message: fmt.Sprintf("id %q: not a member", req.ID)}
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
		return &api.Error{Code: api.CodeNotReady, Message: fmt.Sprintf("intake wal: %v (restart the node)", err)}
	}
	st := n.raft.Status()
	if st.LeaderID == "" {
		return &api.Error{Code: api.CodeNotReady, Message: "no leader known"}
	}
	if st.AppliedIndex < st.CommitIndex {
		return &api.Error{Code: api.CodeNotReady, Message: fmt.Sprintf("applied index %d behind commit index %d", st.AppliedIndex, st.CommitIndex)}
	}
	if _, ok := n.peers.lookup(st.LeaderID); !ok {
		return &api.Error{Code: api.CodeNotReady, Message: "leader's HTTP address not known yet"}
	}
	return nil
}
