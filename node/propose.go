package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/node/peer"
	"github.com/txlog/txlog/replication"
	"github.com/txlog/txlog/store"
	"github.com/txlog/txlog/txid"
)

// proposer gets commands into the log: on this node when it leads, else
// through the leader's HTTP API (forward), retrying across leader changes.
// Every write goes through it: a client's transactions, the replayer's, a
// node's registration and a join's.
type proposer struct {
	self        string        // this node's ID
	dedupWindow time.Duration // stamped on each command (Config.DedupWindow)
	db          *store.DB
	raft        *replication.Raft
	peers       *peers
	log         *slog.Logger
	// fwd sends frames to the leader at a base URL, grouped with other
	// callers' (forward.go).
	fwd *peer.Forwarder
}

// pending is one command on its way into the log.
//
// A pending transaction keeps its txid across every retry, so proposing it again
// after an ambiguous failure is safe: the store deduplicates by txid, and a
// re-proposal of a transaction that did commit returns the original outcome.
// A txid recorded for other bytes is refused (wire.ErrTxIDConflict); only a
// request of this node gives its transaction a fresh txid then
// (proposeReissuing), up to maxReissues times.
type pending struct {
	kind    store.CommandKind
	payload []byte  // EncodeTx or EncodeNode bytes, never re-encoded
	id      txid.ID // zero for non-transaction commands
	key     string  // the transaction's idempotency key, when the intake needs it

	st state // where it is; changed only by its transitions (state.go)
}

// sentTx returns a pending transaction that may have reached a leader
// before: the replayer's, whose proposal looks it up in the log first.
func sentTx(id txid.ID, payload []byte) *pending {
	p := &pending{kind: store.KindTx, payload: payload, id: id}
	p.st.send()
	return p
}

// frame returns the bytes forwarded to the leader: the command without a time,
// which the leader stamps when it proposes.
func (p *pending) frame() []byte {
	return store.EncodeCommand(store.Command{Kind: p.kind, Payload: p.payload})
}

func (p *pending) resolve(res wire.TxResult, err error) {
	if res.TxID == p.id && p.id != 0 {
		// Our own earlier proposal, found again through the txid: not a duplicate
		// of somebody else's transaction.
		res.Duplicate = false
	}
	p.st.resolve(res, err)
}

// Retry pacing while no leader is reachable.
const (
	minBackoff = 5 * time.Millisecond
	maxBackoff = 200 * time.Millisecond
)

// propose gets every pending command into the log through whichever node leads,
// retrying across leader changes, until each has an outcome or ctx ends. What is
// still open then is left for the caller: see settle and park.
func (pr *proposer) propose(ctx context.Context, ps []*pending, opts wire.SubmitOptions) {
	backoff := minBackoff
	for {
		todo := unresolved(ps)
		if len(todo) == 0 || ctx.Err() != nil {
			return
		}
		leader, _ := pr.raft.Leader()
		switch {
		case leader == "":
		case leader == pr.self:
			pr.proposeLocal(ctx, todo)
		default:
			if base, ok := pr.peers.leaderAddr(leader); ok {
				pr.proposeRemote(ctx, base, todo, opts)
			}
		}
		if len(unresolved(ps)) == 0 {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// withReserve returns a context that ends a little before ctx, keeping the rest
// of the time for what follows a proposal whose outcome is open: parking it, or
// looking it up.
func withReserve(ctx context.Context) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, reserved(dl))
}

// reserved returns the deadline of a proposal within a deadline dl: a fifth
// of the time left before dl, at most a second, is kept in reserve.
func reserved(dl time.Time) time.Time {
	return dl.Add(-min(time.Until(dl)/5, time.Second))
}

func unresolved(ps []*pending) []*pending {
	var out []*pending
	for _, p := range ps {
		if !p.st.isDone() {
			out = append(out, p)
		}
	}
	return out
}

// settle resolves commands left open when time ran out: one that never reached a
// leader failed with ErrNoLeader; one that may have is looked up in the log, and
// is reported with ErrUnknownOutcome when it is not (yet) there.
func (pr *proposer) settle(ctx context.Context, ps []*pending) {
	if len(ps) == 0 {
		return
	}
	// Catch up with what the leader has committed, as far as this node knows.
	_ = pr.raft.WaitCurrent(ctx, pr.raft.Status().CommitIndex)
	for _, p := range ps {
		if p.id != 0 && p.st.isSent() && pr.foundTx(p) {
			continue
		}
		res := wire.TxResult{TxID: p.id, Status: wire.StatusUnknown}
		if !p.st.isSent() {
			p.resolve(res, wire.ErrNoLeader)
			continue
		}
		p.resolve(res, wire.ErrUnknownOutcome)
	}
}

// proposeLocal proposes commands on this node, which believes it leads, in the
// order given: Raft writes them in shared batches and keeps their order.
func (pr *proposer) proposeLocal(ctx context.Context, ps []*pending) {
	var todo []*pending
	for _, p := range ps {
		// Already in the log (an earlier, ambiguous attempt that did commit)?
		// A transaction never proposed before cannot be; skip the read.
		if p.id != 0 && p.st.isSent() && pr.foundTx(p) {
			continue
		}
		todo = append(todo, p)
	}
	if len(todo) == 0 {
		return
	}
	now := time.Now().UnixNano()
	datas := make([][]byte, len(todo))
	for i, p := range todo {
		// The leader stamps its time and the dedup window on each command.
		datas[i] = store.EncodeCommand(store.Command{Kind: p.kind, Time: now, DedupWindow: pr.dedupWindow, Payload: p.payload})
	}
	for i, a := range pr.raft.ApplyMany(ctx, datas) {
		p := todo[i]
		switch terr := translate(a.Err); {
		case a.Err == nil:
			if a.Result.Err != nil {
				p.resolve(wire.TxResult{TxID: p.id}, a.Result.Err)
				continue
			}
			if a.Result.Reused {
				// Refused by every node alike: the key names another transaction.
				o := a.Result.Outcome
				p.resolve(wire.TxResult{}, &wire.KeyReusedError{Key: o.IdempotencyKey, TxID: o.TxID})
				continue
			}
			if a.Result.TxIDConflict {
				// Refused by every node alike: the txid names another
				// transaction (the store counts and logs it).
				p.resolve(wire.TxResult{TxID: p.id}, txidConflict(p.id, a.Result.Outcome.Index))
				continue
			}
			p.resolve(result(a.Result.Outcome, a.Result.Duplicate), nil)
		case errors.Is(terr, wire.ErrNotLeader), errors.Is(a.Err, context.DeadlineExceeded) && !errors.Is(a.Err, replication.ErrTimeout):
			// Not proposed: try again through the current leader.
		default:
			// Leadership lost, timed out or shutting down after the entry may have
			// been appended: its fate is unknown.
			p.st.send()
		}
	}
}

// proposeRemote forwards commands to the leader at base in one request.
func (pr *proposer) proposeRemote(ctx context.Context, base string, ps []*pending, opts wire.SubmitOptions) {
	frames := make([][]byte, len(ps))
	wasSent := make([]bool, len(ps))
	opts.Fresh = true
	opts.From = pr.self // the leader checks frames against their sender (framecheck.go)
	for i, p := range ps {
		frames[i] = p.frame()
		wasSent[i] = p.st.isSent()
		opts.Fresh = opts.Fresh && !wasSent[i]
		p.st.send() // the request may reach the leader whatever comes back
	}
	results, err := pr.fwd.Forward(ctx, base, frames, opts)
	if err != nil {
		if errors.Is(err, wire.ErrNotLeader) {
			for i, p := range ps {
				if !wasSent[i] {
					p.st.unsend()
				}
			}
		}
		pr.log.Debug("forward to leader", "leader", base, "err", err)
		return
	}
	for i, p := range ps {
		if i >= len(results) {
			break
		}
		r := results[i]
		if r.Error == nil {
			p.resolve(r, nil)
			continue
		}
		switch r.Error.Code {
		case wire.CodeIdempotencyKeyReused:
			p.resolve(wire.TxResult{}, r.Error.Err())
		case wire.CodeTxIDConflict:
			p.resolve(wire.TxResult{TxID: p.id}, r.Error.Err())
		case wire.CodeNotLeader:
			if !wasSent[i] {
				p.st.unsend()
			}
		case wire.CodeRemoved:
			// The leader no longer counts this node a member. A frame it
			// never sent before was not carried out: refused for good, as
			// this node refuses writes once it knows (503 removed). One sent
			// before may have committed: it stays unknown, and is parked,
			// and handed off (removed.go).
			if !wasSent[i] {
				p.resolve(wire.TxResult{TxID: p.id}, &wire.Error{Code: r.Error.Code, Message: r.Error.Message})
			}
		case wire.CodeUnknownOutcome, wire.CodeNoLeader, wire.CodeShuttingDown, wire.CodeTimeout, wire.CodeNotReady:
			// Try again; the txid makes that safe. not_ready: the leader
			// does not see this node's registration yet, or its clock is
			// behind this node's txids (framecheck.go).
		default:
			p.resolve(wire.TxResult{TxID: p.id}, &wire.Error{Code: r.Error.Code, Message: r.Error.Message})
		}
	}
}

// foundTx resolves p, a transaction that may be in the log already, if its
// txid is recorded: with the recorded outcome when it is p's transaction
// (store.SameTx), else refused with wire.ErrTxIDConflict. It reports whether
// it resolved p; a store that cannot answer leaves p open.
func (pr *proposer) foundTx(p *pending) bool {
	o, err := pr.db.Reads().TxFor(p.id, p.payload)
	switch {
	case errors.Is(err, store.ErrTxIDConflict):
		pr.log.Warn("txid recorded for another transaction", "txid", p.id, "recorded_index", o.Index)
		p.resolve(wire.TxResult{TxID: p.id}, txidConflict(p.id, 0))
	case err != nil:
		return false
	default:
		p.resolve(result(o, false), nil)
	}
	return true
}

// txidConflict is the error of a transaction refused because its txid id is
// recorded for another transaction, at log index (0: not known here).
func txidConflict(id txid.ID, index uint64) error {
	if index == 0 {
		return fmt.Errorf("%w: txid %s", wire.ErrTxIDConflict, id)
	}
	return fmt.Errorf("%w: txid %s names the transaction at index %d", wire.ErrTxIDConflict, id, index)
}

// result converts an outcome read from the store or returned by Apply.
func result(o store.Outcome, duplicate bool) wire.TxResult {
	r := fromOutcome(o)
	r.Duplicate = duplicate
	r.Durability = wire.AckQuorum
	return r
}
