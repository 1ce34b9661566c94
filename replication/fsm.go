package replication

import (
	"fmt"
	"io"
	"sync"

	"github.com/hashicorp/raft"

	"github.com/txlog/txlog/store"
)

// StateMachine is what committed entries are applied to. *store.DB implements it.
// Raft calls Apply, Snapshot and Restore from one goroutine, one at a time.
type StateMachine interface {
	// Apply applies committed entries in order and returns one Result per entry.
	// Entries at or below AppliedIndex must be skipped, because raft replays its
	// log after a restart. An error means the entries could not be written: it
	// is fatal for the node (see Config.Fatal). Apply must not modify Data.
	Apply(entries []store.Entry) ([]store.Result, error)
	// AppliedIndex returns the index of the last entry applied, 0 when none.
	AppliedIndex() uint64
	// AppliedTerm returns the term of the entry at AppliedIndex, 0 when none.
	// Open compares both with the Raft log and stable store (amnesia.go).
	AppliedTerm() uint64
	// RestoredIndex returns the applied index of the snapshot stream the
	// state machine was last restored from (Restore), 0 if never: while it
	// equals AppliedIndex, the state is exactly that snapshot.
	RestoredIndex() uint64
	// Snapshot starts a point-in-time snapshot. The snapshot is written out on
	// another goroutine while Apply goes on.
	Snapshot() (*store.Snapshot, error)
	// Restore replaces the whole state with a snapshot stream written by a
	// Snapshot's WriteTo.
	Restore(r io.Reader) error
	// Checkpoint makes every entry applied so far durable and returns the
	// applied index the durable state holds at least: raft's snapshots are
	// then checkpoints (checkpoint.go), not copies of the state.
	Checkpoint() (uint64, error)
}

// snapshot is the part of *store.Snapshot the glue uses.
type snapshot interface {
	WriteTo(w io.Writer) (int64, error)
	Release()
}

// machine is the state machine as the glue sees it. It differs from
// StateMachine only in Snapshot's result, so that tests can fake it.
type machine interface {
	Apply(entries []store.Entry) ([]store.Result, error)
	AppliedIndex() uint64
	AppliedTerm() uint64
	RestoredIndex() uint64
	Snapshot() (snapshot, error)
	Restore(r io.Reader) error
}

// storeMachine adapts a StateMachine to machine.
type storeMachine struct{ StateMachine }

func (m storeMachine) Snapshot() (snapshot, error) {
	s, err := m.StateMachine.Snapshot()
	if err != nil {
		return nil, err // not a typed nil inside the interface
	}
	return s, nil
}

var _ raft.BatchingFSM = (*fsm)(nil)

// fsm is the glue between raft and the state machine. Raft calls ApplyBatch,
// Apply, Snapshot and Restore from its FSM goroutine, one at a time; the
// waiters (WaitApplied) read applied from any goroutine.
type fsm struct {
	sm    machine
	fatal func(error)

	mu sync.Mutex // guards the fields below
	// applied is the raft index the state machine is current to: every command
	// and configuration entry at or below it has been applied. Barrier and no-op
	// entries never reach the glue, so applied may stop short of one.
	applied uint64
	changed chan struct{} // closed and replaced whenever applied changes
	err     error         // the state machine's failure; nothing is applied after it
}

func newFSM(sm machine, fatal func(error)) *fsm {
	return &fsm{sm: sm, fatal: fatal, applied: sm.AppliedIndex(), changed: make(chan struct{})}
}

// ApplyBatch hands the batch's commands to the state machine in one call. Raft
// passes only LogCommand and LogConfiguration entries here. The result for a
// command is its store.Result, or an error wrapping ErrStateMachine; for any
// other entry it is nil.
func (f *fsm) ApplyBatch(logs []*raft.Log) []any {
	resp := make([]any, len(logs))
	if err := f.failure(); err != nil {
		fill(resp, logs, err)
		return resp
	}
	entries := make([]store.Entry, 0, len(logs))
	for _, l := range logs {
		if l.Type == raft.LogCommand {
			entries = append(entries, store.Entry{Index: l.Index, Term: l.Term, Data: l.Data})
		}
	}
	if len(entries) > 0 {
		results, err := f.sm.Apply(entries)
		if err == nil && len(results) != len(entries) {
			err = fmt.Errorf("got %d results for %d entries", len(results), len(entries))
		}
		if err != nil {
			err = fmt.Errorf("%w: apply entries %d to %d: %w",
				ErrStateMachine, entries[0].Index, entries[len(entries)-1].Index, err)
			f.fail(err)
			fill(resp, logs, err)
			f.fatal(err)
			return resp
		}
		i := 0
		for j, l := range logs {
			if l.Type == raft.LogCommand {
				resp[j] = results[i]
				i++
			}
		}
	}
	f.advance(logs[len(logs)-1].Index)
	return resp
}

// fill sets the response of every command in logs to err.
func fill(resp []any, logs []*raft.Log, err error) {
	for i, l := range logs {
		if l.Type == raft.LogCommand {
			resp[i] = err
		}
	}
}

// Apply applies a single entry; raft uses ApplyBatch instead, as fsm is a BatchingFSM.
func (f *fsm) Apply(l *raft.Log) any {
	return f.ApplyBatch([]*raft.Log{l})[0]
}

// Snapshot starts a state machine snapshot for raft to persist: a checkpoint
// when the state machine can make one, else a copy of the state.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	if err := f.failure(); err != nil {
		return nil, err
	}
	if cp, ok := f.sm.(checkpointer); ok {
		applied, err := cp.Checkpoint()
		if err != nil {
			return nil, fmt.Errorf("checkpoint: %w", err)
		}
		return &checkpointSnapshot{applied: applied}, nil
	}
	s, err := f.sm.Snapshot()
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	return &fsmSnapshot{s: s}, nil
}

// Restore replaces the state machine with a snapshot. Raft closes rc.
func (f *fsm) Restore(rc io.ReadCloser) error {
	if err := f.failure(); err != nil {
		return err
	}
	if err := f.sm.Restore(rc); err != nil {
		return fmt.Errorf("restore snapshot: %w", err)
	}
	// The state machine now holds exactly the snapshot, which may be older than
	// what it held before (raft replays the log after it), so set, not advance.
	f.set(f.sm.AppliedIndex())
	return nil
}

func (f *fsm) failure() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

func (f *fsm) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

// advance raises applied to index. After a restart the state machine may be
// ahead of the log raft replays into it, so applied never goes down here.
func (f *fsm) advance(index uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if index > f.applied {
		f.applied = index
		close(f.changed)
		f.changed = make(chan struct{})
	}
}

func (f *fsm) set(index uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applied = index
	close(f.changed)
	f.changed = make(chan struct{})
}

// watch returns the applied index and a channel closed when it next changes.
func (f *fsm) watch() (uint64, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.applied, f.changed
}

// fsmSnapshot lets raft persist a state machine snapshot.
type fsmSnapshot struct{ s snapshot }

// Persist writes the snapshot to sink. Raft calls it on its snapshot goroutine
// while the FSM goroutine goes on applying.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := s.s.WriteTo(sink); err != nil {
		sink.Cancel()
		return fmt.Errorf("persist snapshot %s: %w", sink.ID(), err)
	}
	if err := sink.Close(); err != nil {
		return fmt.Errorf("persist snapshot %s: %w", sink.ID(), err)
	}
	return nil
}

// Release frees the state machine snapshot.
func (s *fsmSnapshot) Release() { s.s.Release() }
