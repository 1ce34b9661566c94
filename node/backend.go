package node

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/peerlink"
	"github.com/txlog/txlog/replication"
	"github.com/txlog/txlog/store"
)

var (
	_ api.Backend     = (*Node)(nil)
	_ api.LogFollower = (*Node)(nil)
)

// Propose implements api.Backend: the leader's side of forwarding. Each frame
// is checked first (framecheck.go: the body's rules, the txid, the sender's
// membership) and one that fails is answered with its error, never proposed.
// It makes one attempt; the forwarding node retries.
func (n *Node) Propose(ctx context.Context, frames [][]byte, opts wire.SubmitOptions) ([]wire.TxResult, error) {
	if !n.raft.IsLeader() {
		return nil, wire.ErrNotLeader
	}
	if id := peerlink.RemoteNode(ctx); id != "" {
		// The peer link's header names the sender; it wins over a query.
		opts.From = id
	}
	if opts.From == "" {
		// The whole request, not each frame: a node of the version before
		// from existed takes that as a failed exchange and keeps its writes
		// (parked) instead of dropping them as refused.
		return nil, &wire.Error{Code: wire.CodeInvalidParam, Message: "from: missing; the leader takes frames only from a named node"}
	}
	results := make([]wire.TxResult, len(frames))
	cmds := make([]store.Command, len(frames))
	bad := make([]bool, len(frames))
	for i, f := range frames {
		c, err := store.DecodeCommand(f)
		if err != nil {
			results[i].Error = &wire.ErrorBody{Code: wire.CodeInvalidTx, Message: err.Error()}
			bad[i] = true
			continue
		}
		cmds[i] = c
	}
	errs, ids := n.checks.check(ctx, cmds, opts)
	ps := make([]*pending, 0, len(frames))
	slot := make([]int, 0, len(frames))
	refused := 0
	for i, c := range cmds {
		switch {
		case bad[i]:
			refused++
			continue
		case errs[i] != nil:
			results[i].Error = wire.NewErrorBody(errs[i])
			results[i].TxID = ids[i]
			refused++
			continue
		}
		p := &pending{kind: c.Kind, payload: c.Payload, id: ids[i]}
		if !opts.Fresh {
			// The forwarding node may have sent it to a leader before: it is
			// looked up in the log before it is proposed.
			p.st.send()
		}
		ps = append(ps, p)
		slot = append(slot, i)
	}
	if refused > 0 {
		n.refusedFrames(opts.From, results, refused)
	}
	n.props.proposeLocal(ctx, ps)
	for j, p := range ps {
		r := p.st.res
		switch {
		case p.st.isDone() && p.st.err != nil:
			r.Error = wire.NewErrorBody(p.st.err)
		case p.st.isSent():
			r = wire.TxResult{TxID: p.id, Status: wire.StatusUnknown, Error: wire.NewErrorBody(wire.ErrUnknownOutcome)}
		case !p.st.isDone():
			r = wire.TxResult{TxID: p.id, Error: wire.NewErrorBody(wire.ErrNotLeader)}
		}
		results[slot[j]] = r
	}
	return results, nil
}

// refusedFrames counts the frames of one forwarded proposal that the checks
// refused (framecheck.go) in txlog_forwarded_refused_total, and logs them:
// one line per proposal, naming the first.
func (n *Node) refusedFrames(from string, results []wire.TxResult, count int) {
	for _, r := range results {
		if r.Error != nil {
			n.met.refused.WithLabelValues(r.Error.Code).Inc()
		}
	}
	for _, r := range results {
		if r.Error != nil && r.Error.Code != wire.CodeNotReady {
			n.log.Warn("forwarded frames refused", "peer", from, "count", count, "code", r.Error.Code, "err", r.Error.Message)
			return
		}
	}
	n.log.Debug("forwarded frames refused for now", "peer", from, "count", count)
}

// Submit implements api.Backend.
func (n *Node) Submit(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error) {
	results, err := n.SubmitBatch(ctx, []wire.TxRequest{tx}, opts)
	if err != nil {
		return wire.TxResult{}, err
	}
	r := results[0]
	if r.Error != nil {
		err := r.Error.Err()
		r.Error = nil
		return r, err
	}
	return r, nil
}

// SubmitBatch implements api.Backend: see writer.submit. Each answered
// request goes into the dashboard's write samples (ui.Stats.Observe: two
// atomic adds); a refused one (err != nil) does not.
func (n *Node) SubmitBatch(ctx context.Context, txs []wire.TxRequest, opts wire.SubmitOptions) ([]wire.TxResult, error) {
	start := time.Now()
	res, err := n.writes.submit(ctx, txs, opts)
	took := time.Since(start)
	if err == nil {
		n.dash.stats.Observe(took, len(txs))
	}
	n.met.answered(opts.Ack, took, res, len(txs), err)
	return res, err
}

// Cluster implements api.Backend: this node (its ID, state, applied index
// and extra) and the cluster: as this node sees it with consistency stale,
// else as the leader does (consistentRead), so that the leader, term,
// commit index and members are the leader's, current as of the read.
func (n *Node) Cluster(ctx context.Context, opts wire.ReadOptions) (wire.ClusterStatus, error) {
	if opts.Consistency == wire.ConsistencyStale {
		return n.clusterHere(ctx)
	}
	cs, err := consistentRead(ctx, n.lookups, opts, n.clusterHere, func(ctx context.Context, addr string, opts wire.ReadOptions) (wire.ClusterStatus, error) {
		var st wire.ClusterStatus
		err := n.peers.client.Read(ctx, addr, "/v1/cluster", nil, opts, &st)
		return st, err
	})
	if err != nil || cs.ID == n.cfg.ID {
		return cs, err
	}
	here, err := n.clusterHere(ctx)
	cs.ID, cs.State, cs.AppliedIndex, cs.Extra = here.ID, here.State, here.AppliedIndex, here.Extra
	return cs, err
}

// clusterHere describes this node and the cluster as this node sees it.
func (n *Node) clusterHere(ctx context.Context) (wire.ClusterStatus, error) {
	st := n.raft.Status()
	cs := wire.ClusterStatus{
		ID:           n.cfg.ID,
		State:        st.State,
		LeaderID:     st.LeaderID,
		Term:         st.Term,
		CommitIndex:  st.CommitIndex,
		AppliedIndex: st.AppliedIndex,
		ClusterID:    clusterID(n.ident.clusterID()).String(),
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
	err := n.peers.viaLeader(ctx, false, func(ctx context.Context) error {
		if err := n.checkJoiner(ctx, req); err != nil { // link.go
			return err
		}
		var err error
		res, err = n.mem.joinLocal(ctx, req)
		n.checks.invalidate()
		return err
	}, func(ctx context.Context, base string) error {
		var err error
		res, err = n.peers.client.Join(ctx, base, req)
		return err
	})
	return res, err
}

// Remove implements api.Backend.
func (n *Node) Remove(ctx context.Context, id string) error {
	return n.peers.viaLeader(ctx, false, func(ctx context.Context) error {
		err := n.raft.Remove(ctx, id)
		// Before DELETE answers: a frame the removed node forwards after the
		// answer is checked against the configuration without it.
		n.checks.invalidate()
		if errors.Is(err, replication.ErrUnknownServer) {
			return wire.New(wire.MsgNotMember, id)
		}
		return translate(err)
	}, func(ctx context.Context, base string) error {
		return n.peers.client.Remove(ctx, base, id)
	})
}

// TransferLeadership implements api.Backend.
func (n *Node) TransferLeadership(ctx context.Context, req wire.TransferRequest) (wire.TransferResult, error) {
	var res wire.TransferResult
	err := n.peers.viaLeader(ctx, false, func(ctx context.Context) error {
		if req.ID == n.cfg.ID {
			// To the leader itself: nothing to do, at once.
			res = wire.TransferResult{LeaderID: req.ID, Unchanged: true}
			return nil
		}
		if req.ID == "" && !n.otherVoter(ctx) {
			return wire.New(wire.MsgTransferNoVoter, n.cfg.ID)
		}
		id, err := n.raft.TransferLeadership(ctx, req.ID)
		switch {
		case errors.Is(err, replication.ErrUnknownServer):
			return wire.New(wire.MsgTransferNotMember, req.ID)
		case errors.Is(err, replication.ErrTimeout):
			// Not a write: no outcome to look up (translate's unknown_outcome).
			return fmt.Errorf("%w: no new leader seen within the request's time; this node may still be the leader", wire.ErrTimeout)
		}
		res.LeaderID = id
		return translate(err)
	}, func(ctx context.Context, base string) error {
		var err error
		res, err = n.peers.client.TransferLeadership(ctx, base, req)
		return err
	})
	return res, err
}

// otherVoter reports whether the configuration holds a voter other than this
// node (true when it cannot be read: Raft then answers for itself).
func (n *Node) otherVoter(ctx context.Context) bool {
	members, err := n.raft.Members(ctx)
	if err != nil {
		return true
	}
	for _, m := range members {
		if m.ID != n.cfg.ID && m.Suffrage == "voter" {
			return true
		}
	}
	return false
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
