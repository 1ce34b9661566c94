package replication

import (
	"context"
	"errors"

	"github.com/hashicorp/raft"
)

// readWaits is the part of Raft that ties reads and waits to the state
// machine's applied index: WaitApplied, WaitCurrent, Applied, AppliedIndex and
// ReadIndex's per-term barrier. Raft embeds it, so callers call r.ReadIndex.
type readWaits struct{ r *Raft }

// WaitApplied waits until this server's state machine has applied the entry at
// index and everything before it. Use indexes from Apply or ReadIndex: raft's
// barrier and no-op entries never reach the state machine, so waiting for one
// lasts until the next entry that does. WaitCurrent waits for the commit index.
func (w *readWaits) WaitApplied(ctx context.Context, index uint64) error {
	r := w.r
	return r.waitApplied(ctx, index, false)
}

// Applied returns a channel closed when this server's state machine next
// applies an entry (any entry raft hands it, commands and configurations).
// It costs the apply path nothing: the channel is replaced per applied batch
// already, for WaitApplied.
func (w *readWaits) Applied() <-chan struct{} {
	r := w.r
	_, changed := r.fsm.watch()
	return changed
}

// WaitCurrent waits until this server's state machine is current to index
// (current): as WaitApplied, but a committed no-op or barrier entry counts
// as applied once everything before it is. Waiting for the commit index this
// server knows returns on an idle cluster whose last entry is a new leader's
// no-op, where WaitApplied waits for the next write.
func (w *readWaits) WaitCurrent(ctx context.Context, index uint64) error {
	r := w.r
	return r.waitApplied(ctx, index, true)
}

func (w *readWaits) waitApplied(ctx context.Context, index uint64, raftOnly bool) error {
	r := w.r
	for {
		applied, changed := r.fsm.watch()
		if raftOnly {
			applied = r.current(applied, index)
		}
		if applied >= index {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return timeoutError(ctx)
		case <-r.done:
			return ErrShutdown
		}
	}
}

// AppliedIndex returns the index of the last entry this server's state machine
// applied.
func (w *readWaits) AppliedIndex() uint64 {
	r := w.r
	applied, _ := r.fsm.watch()
	return applied
}

// maxRaftOnly bounds the entries current reads from the log.
const maxRaftOnly = 8

// current returns the index the state machine is current to, given applied,
// the last entry it applied: applied moved over the committed entries after it,
// up to upTo, that never reach the state machine and change nothing: a new
// leader's no-op, a barrier. After a leader change on an idle cluster the commit
// index is such an entry, and AppliedIndex stays below it until the next write.
// It reads them from the log, at most maxRaftOnly, and stops at the first other
// entry (a command or a configuration change on its way to the state machine)
// or at one it cannot read.
func (w *readWaits) current(applied, upTo uint64) uint64 {
	r := w.r
	upTo = min(upTo, r.raft.CommitIndex(), applied+maxRaftOnly)
	for i := applied + 1; i <= upTo; i++ {
		var l raft.Log
		if err := r.logs.GetLog(i, &l); err != nil || (l.Type != raft.LogNoop && l.Type != raft.LogBarrier) {
			return i - 1
		}
	}
	return max(applied, upTo)
}

// ReadIndex returns an index such that this server's state machine, once it
// has applied it, reflects every write committed before the call; it has
// waited for that already. It is the linearizable read barrier of Raft's
// ReadIndex: it costs a heartbeat round to a quorum, not a log write.
//
// Errors: ErrNotLeader (this server is not, or stopped being, the leader),
// ErrTimeout, ErrShutdown. None of them has side effects; retry anywhere.
func (w *readWaits) ReadIndex(ctx context.Context) (uint64, error) {
	r := w.r
	if r.raft.State() != raft.Leader {
		return 0, ErrNotLeader
	}
	term := r.raft.CurrentTerm()
	// A new leader does not know the commit index until it has committed an
	// entry of its own term; the term's barrier is that entry.
	b := r.startBarrier(term)
	select {
	case <-b.done:
	case <-ctx.Done():
		return 0, timeoutError(ctx)
	case <-r.done:
		return 0, ErrShutdown
	}
	if b.err != nil {
		return 0, readError(b.err)
	}
	commit := r.raft.CommitIndex()
	// Confirm that no other leader could have committed anything past commit.
	if err := r.await(ctx, r.raft.VerifyLeader()); err != nil {
		return 0, readError(err)
	}
	if r.raft.CurrentTerm() != term {
		return 0, ErrNotLeader
	}
	index := commit
	if commit <= b.index {
		// commit is the barrier itself, which the state machine never sees.
		index = b.floor
	}
	if err := r.WaitApplied(ctx, index); err != nil {
		return 0, err
	}
	return index, nil
}

// readError translates errors for reads, which have no outcome to lose:
// losing leadership is simply not being the leader.
func readError(err error) error {
	err = translate("read index", err)
	if errors.Is(err, ErrLeadershipLost) {
		return ErrNotLeader
	}
	return err
}

// termBarrier is the barrier a leader commits once per term, before it serves
// ReadIndex. Its fields other than done are written before done is closed.
type termBarrier struct {
	term uint64
	done chan struct{}
	// index is the barrier entry's index. Every entry after it in the term
	// reaches the state machine (commands and configuration changes).
	index uint64
	// floor is the index the state machine is current to once it has applied
	// everything up to the barrier: the last entry at or below index that
	// reaches it.
	floor uint64
	err   error
}

// startBarrier returns the barrier of term, starting it unless it is running
// or has succeeded. A failed one is retried by the next call.
func (w *readWaits) startBarrier(term uint64) *termBarrier {
	r := w.r
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.done:
		b := &termBarrier{term: term, done: make(chan struct{}), err: ErrShutdown}
		close(b.done)
		return b
	default:
	}
	if b := r.barrier; b != nil && b.term == term {
		select {
		case <-b.done:
			if b.err == nil {
				return b
			}
		default:
			return b
		}
	}
	b := &termBarrier{term: term, done: make(chan struct{})}
	r.barrier = b
	r.wg.Go(func() { r.runBarrier(b) })
	return b
}

func (w *readWaits) runBarrier(b *termBarrier) {
	r := w.r
	defer close(b.done)
	f := r.raft.Barrier(0)
	if err := r.await(context.Background(), f); err != nil {
		b.err = err
		return
	}
	if r.raft.CurrentTerm() != b.term {
		b.err = ErrNotLeader // committed, but in a later term than b's
		return
	}
	b.index = f.(raft.IndexFuture).Index()
	b.floor = min(r.AppliedIndex(), b.index)
}
