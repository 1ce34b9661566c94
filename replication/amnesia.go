package replication

import (
	"errors"
	"fmt"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// Amnesia. Raft is safe only if a voter never forgets what it acknowledged:
// the entries it wrote to its log, and the term and vote in its stable
// store. A node that lost them (a missing fsync before a power loss, an
// operator's rm, a replaced disk) but kept its state machine would otherwise
// start as if new: bootstrap again, win a term the cluster already used, and
// overwrite committed entries. The state machine (store.DB) records the index
// and term of the last entry it applied, in the same transaction as the
// entry's effects, and it only ever applies entries this node's log held,
// or a snapshot installed from a leader, which raft records before the state
// machine restores it. So at start:
//
//   - the log's last index, or the latest snapshot's, must reach the state
//     machine's applied index, and where the log holds that index, its entry
//     must have the applied term. One exception: a checkpoint is sent to a
//     follower as the leader's live state (checkpoint.go), which may be past
//     the snapshot's index, and until the log catches up with it the state
//     machine is ahead of both. That is a state machine whose applied index
//     is the one it was restored at (RestoredIndex), with a snapshot at or
//     below it: it holds the snapshot and nothing applied from the log since.
//   - the stable store's current term must be at least every term the node
//     has seen: the applied term, the log's last term and the snapshot's term
//     (raft saves a new term before it appends an entry of it or votes in it).
//
// A node that fails either check refuses to start Raft (AmnesiaError), whose
// message says how to recover: the member is removed, and joins again as a
// new one, with no Raft state and no store (it receives the leader's). A
// state machine with nothing applied passes: a new node, or one whose store
// was lost (checkpoint.go refuses that one when a checkpoint says otherwise).
//
// What the checks cannot see: a follower restored from a live checkpoint that
// acknowledged entries past it, applied none of them, and then lost its log.

// ErrAmnesia is wrapped by every *AmnesiaError.
var ErrAmnesia = errors.New("replication: raft state lost")

// AmnesiaError reports a Raft directory that holds less than the state
// machine applied from it: this server must not vote or take entries.
type AmnesiaError struct {
	ID  string // this server's ID
	Dir string // Config.Dir
	// Missing names what was lost: "raft log" or "stable store (term and vote)".
	Missing string
	// The state machine's last applied entry.
	AppliedIndex, AppliedTerm uint64
	// The Raft log: its last entry (0, 0 when empty) and the term of its entry
	// at AppliedIndex (0 when it does not hold that index).
	LastIndex, LastTerm, TermAtApplied uint64
	// The latest snapshot (0, 0 when none).
	SnapshotIndex, SnapshotTerm uint64
	// The stable store.
	CurrentTerm, LastVoteTerm uint64
}

func (e *AmnesiaError) Error() string {
	var what string
	switch {
	case e.Missing == missingStable:
		what = fmt.Sprintf("its stable store says term %d (last vote in term %d), below term %d that its log and state machine hold",
			e.CurrentTerm, e.LastVoteTerm, e.maxTerm())
	case e.TermAtApplied != 0:
		what = fmt.Sprintf("its raft log holds an entry of term %d at the applied index %d, not term %d",
			e.TermAtApplied, e.AppliedIndex, e.AppliedTerm)
	default:
		what = fmt.Sprintf("its raft log ends at index %d and its latest snapshot at %d, below the applied index %d",
			e.LastIndex, e.SnapshotIndex, e.AppliedIndex)
	}
	return fmt.Sprintf("%v: %s in %s: the state machine applied index %d (term %d) but %s; "+
		"a server that forgot its log or its vote must not vote. "+
		"Recover: remove %q from the cluster (DELETE /v1/cluster/nodes/%s on another member), "+
		"delete %s and the store (state.db, state.db.meta) from its data directory, keeping wal/ "+
		"(the writes it accepted and may still replay), and start it again with --join instead of --cluster; "+
		"if the members left are too few to elect a leader, first start the one with the most complete log with --recover "+
		"(docs/operations.md, Losing a majority)",
		ErrAmnesia, e.Missing, e.Dir, e.AppliedIndex, e.AppliedTerm, what, e.ID, e.ID, e.Dir)
}

func (e *AmnesiaError) Unwrap() error { return ErrAmnesia }

// LogAttrs returns the error's numbers as slog attributes.
func (e *AmnesiaError) LogAttrs() []any {
	return []any{
		"missing", e.Missing, "dir", e.Dir,
		"applied_index", e.AppliedIndex, "applied_term", e.AppliedTerm,
		"last_index", e.LastIndex, "last_term", e.LastTerm, "term_at_applied", e.TermAtApplied,
		"snapshot_index", e.SnapshotIndex, "snapshot_term", e.SnapshotTerm,
		"current_term", e.CurrentTerm, "last_vote_term", e.LastVoteTerm,
	}
}

func (e *AmnesiaError) maxTerm() uint64 { return max(e.AppliedTerm, e.LastTerm, e.SnapshotTerm) }

const (
	missingLog    = "raft log"
	missingStable = "stable store (term and vote)"
)

// Keys of raft's stable store (raft.go's keyCurrentTerm, keyLastVoteTerm).
var (
	keyCurrentTerm  = []byte("CurrentTerm")
	keyLastVoteTerm = []byte("LastVoteTerm")
)

// checkAmnesia compares the state machine's last applied entry with the Raft
// state in logs and snaps, and returns an *AmnesiaError when the Raft state
// holds less (see the comment at the top of this file).
func checkAmnesia(c Config, sm machine, logs logStore, snaps raft.SnapshotStore) error {
	appliedIndex, appliedTerm, restored := sm.AppliedIndex(), sm.AppliedTerm(), sm.RestoredIndex()
	if appliedIndex == 0 {
		return nil
	}
	e := &AmnesiaError{ID: c.ID, Dir: c.Dir, AppliedIndex: appliedIndex, AppliedTerm: appliedTerm}
	first, err := logs.FirstIndex()
	if err != nil {
		return fmt.Errorf("check raft state in %s: first index: %w", c.Dir, err)
	}
	if e.LastIndex, err = logs.LastIndex(); err != nil {
		return fmt.Errorf("check raft state in %s: last index: %w", c.Dir, err)
	}
	if e.LastIndex > 0 {
		var l raft.Log
		if err := logs.GetLog(e.LastIndex, &l); err != nil {
			return fmt.Errorf("check raft state in %s: read entry %d: %w", c.Dir, e.LastIndex, err)
		}
		e.LastTerm = l.Term
		if first > 0 && first <= appliedIndex && appliedIndex <= e.LastIndex {
			if err := logs.GetLog(appliedIndex, &l); err != nil {
				return fmt.Errorf("check raft state in %s: read entry %d: %w", c.Dir, appliedIndex, err)
			}
			if l.Term != appliedTerm {
				e.TermAtApplied = l.Term
			}
		}
	}
	list, err := snaps.List()
	if err != nil {
		return fmt.Errorf("check raft state in %s: list snapshots: %w", c.Dir, err)
	}
	if len(list) > 0 {
		e.SnapshotIndex, e.SnapshotTerm = list[0].Index, list[0].Term
	}
	if e.CurrentTerm, err = stableUint64(logs, keyCurrentTerm); err != nil {
		return fmt.Errorf("check raft state in %s: current term: %w", c.Dir, err)
	}
	if e.LastVoteTerm, err = stableUint64(logs, keyLastVoteTerm); err != nil {
		return fmt.Errorf("check raft state in %s: last vote term: %w", c.Dir, err)
	}
	// Restored from a live checkpoint, and nothing applied since (see above).
	live := restored == appliedIndex && e.SnapshotIndex > 0 && e.SnapshotIndex <= appliedIndex
	switch {
	case max(e.LastIndex, e.SnapshotIndex) < appliedIndex && !live, e.TermAtApplied != 0:
		e.Missing = missingLog
	case e.CurrentTerm < e.maxTerm():
		e.Missing = missingStable
	default:
		return nil
	}
	return e
}

// stableUint64 reads key from the stable store: 0 when it is not set
// (raft-wal answers 0, raft-boltdb ErrKeyNotFound).
func stableUint64(s raft.StableStore, key []byte) (uint64, error) {
	v, err := s.GetUint64(key)
	if errors.Is(err, raftboltdb.ErrKeyNotFound) {
		return 0, nil
	}
	return v, err
}
