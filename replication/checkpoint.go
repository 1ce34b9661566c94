package replication

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/hashicorp/raft"
)

// Checkpoint snapshots. A state machine that keeps its state durably in its
// own file (a checkpointer: *store.DB) does not copy that state into each
// raft snapshot. Its snapshot is a checkpoint: the state machine makes
// everything applied so far durable in its file (commit and fsync), and the
// snapshot store keeps only a marker saying so, with the state machine's
// applied index at that point. Raft may then drop the log up to the
// snapshot, because the file holds it; a snapshot costs one fsync instead of
// a copy of the whole state, whatever its size.
//
// When raft sends the snapshot to a follower that is too far behind (or a new
// member), checkpointStore.Open streams the state machine's live state in its
// place: a consistent view at or after the marker's index, which the follower
// restores. The follower's raft then continues from the snapshot's index, and
// its state machine skips the entries it already holds, as after a restart.
//
// The price: the state machine's file is now the only local copy of the state
// before the snapshot. A node whose file is lost (or replaced by an older one)
// cannot rebuild it from its own raft directory; it refuses to start, and must
// be removed from the cluster and join again with an empty data directory.

// checkpointer is a state machine that can make its applied state durable.
type checkpointer interface {
	// Checkpoint makes every entry applied so far durable and returns the
	// applied index its durable state now holds at least.
	Checkpoint() (uint64, error)
}

// liveSnapshot is a state machine snapshot that knows its stream's length,
// as raft's InstallSnapshot needs it before the stream: *store.Snapshot.
type liveSnapshot interface {
	snapshot
	Size() int64
	AppliedIndex() uint64
}

// checkpointMagic starts a checkpoint marker; the applied index follows.
var checkpointMagic = []byte("txlog-checkpoint-v1\n")

const checkpointMarkerSize = 20 + 8

func encodeCheckpoint(applied uint64) []byte {
	return binary.BigEndian.AppendUint64(bytes.Clone(checkpointMagic), applied)
}

// decodeCheckpoint returns the applied index of a marker, and false for
// anything else (a snapshot stream, which is far longer).
func decodeCheckpoint(b []byte) (uint64, bool) {
	if len(b) != checkpointMarkerSize || !bytes.HasPrefix(b, checkpointMagic) {
		return 0, false
	}
	return binary.BigEndian.Uint64(b[len(checkpointMagic):]), true
}

// checkpointSnapshot is the FSMSnapshot of a checkpoint: its marker.
type checkpointSnapshot struct{ applied uint64 }

func (s *checkpointSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(encodeCheckpoint(s.applied)); err != nil {
		sink.Cancel()
		return fmt.Errorf("persist checkpoint %s: %w", sink.ID(), err)
	}
	if err := sink.Close(); err != nil {
		return fmt.Errorf("persist checkpoint %s: %w", sink.ID(), err)
	}
	return nil
}

func (s *checkpointSnapshot) Release() {}

// errBehindCheckpoint is returned when the state machine's file holds less
// than a checkpoint says it did.
var errBehindCheckpoint = errors.New("the state machine is behind its checkpoint: its file was lost or replaced; " +
	"remove this node from the cluster and join it again with an empty data directory")

// checkpointStore is the snapshot store: raft's file store, whose snapshots
// are checkpoint markers or (installed from a leader, or written before
// checkpoints) whole state streams. Open serves a marker as the live state.
type checkpointStore struct {
	raft.SnapshotStore
	sm machine
	// dir is the directory raft's file store keeps its snapshots in
	// (<Config.Dir>/snapshots), and syncDir fsyncs a directory (Config.syncDir).
	dir     string
	syncDir func(dir string) error
}

// Create starts a snapshot in raft's file store, whose sink fsyncs the
// snapshot's own directory before raft renames it into place.
func (s checkpointStore) Create(version raft.SnapshotVersion, index, term uint64,
	configuration raft.Configuration, configurationIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := s.SnapshotStore.Create(version, index, term, configuration, configurationIndex, trans)
	if err != nil {
		return nil, err
	}
	return &syncedSink{SnapshotSink: sink, dir: filepath.Join(s.dir, sink.ID()+snapshotTmpSuffix), syncDir: s.syncDir}, nil
}

// snapshotTmpSuffix is the suffix of the directory raft's FileSnapshotStore
// writes a snapshot in until its Close renames it (its tmpSuffix).
const snapshotTmpSuffix = ".tmp"

// syncedSink is a sink of raft's FileSnapshotStore whose Close first fsyncs
// the snapshot's directory. Raft's sink fsyncs the snapshot's files
// (state.bin, meta.json) and, after renaming the directory, the snapshots
// directory, but never the snapshot's own directory: after a power loss the
// renamed directory could come back without the names of its files, and the
// snapshot would be lost while raft has dropped the log it covers. Both files
// are created when the sink is (Create writes meta.json once, and Close
// writes it again in place), so one fsync of the directory at Close covers
// them.
type syncedSink struct {
	raft.SnapshotSink
	dir     string
	syncDir func(dir string) error
	closed  bool // Close or Cancel was called: raft closes a sink that Persist closed
}

func (s *syncedSink) Close() error {
	if s.closed {
		return s.SnapshotSink.Close() // raft's sink ignores a second Close
	}
	s.closed = true
	if err := s.syncDir(s.dir); err != nil {
		s.SnapshotSink.Cancel()
		return fmt.Errorf("close snapshot %s: %w", s.ID(), err)
	}
	return s.SnapshotSink.Close()
}

func (s *syncedSink) Cancel() error {
	s.closed = true
	return s.SnapshotSink.Cancel()
}

// openSnapshot opens the snapshot id. For a checkpoint marker it returns the
// marker's applied index and true, and closes the snapshot; for a state stream,
// false and the open stream, which the caller must close.
func (s checkpointStore) openSnapshot(id string) (*raft.SnapshotMeta, io.ReadCloser, uint64, bool, error) {
	meta, rc, err := s.SnapshotStore.Open(id)
	if err != nil {
		return nil, nil, 0, false, err
	}
	if meta.Size != checkpointMarkerSize {
		return meta, rc, 0, false, nil
	}
	defer rc.Close()
	b := make([]byte, checkpointMarkerSize)
	if _, err := io.ReadFull(rc, b); err != nil {
		return nil, nil, 0, false, fmt.Errorf("read snapshot %s: %w", id, err)
	}
	if applied, ok := decodeCheckpoint(b); ok {
		return meta, nil, applied, true, nil
	}
	// A state stream of exactly a marker's size: open it again to read it whole.
	meta, rc, err = s.SnapshotStore.Open(id)
	return meta, rc, 0, false, err
}

// Open returns the snapshot id: a state stream as stored, or for a checkpoint
// the state machine's current state, which is at or past it.
func (s checkpointStore) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	meta, rc, applied, ok, err := s.openSnapshot(id)
	if err != nil || !ok {
		return meta, rc, err
	}
	s0, err := s.sm.Snapshot()
	if err != nil {
		return nil, nil, fmt.Errorf("open checkpoint %s: %w", id, err)
	}
	snap, ok := s0.(liveSnapshot)
	if !ok {
		s0.Release()
		return nil, nil, fmt.Errorf("open checkpoint %s: the state machine's snapshot has no size", id)
	}
	if got := snap.AppliedIndex(); got < applied {
		snap.Release()
		return nil, nil, fmt.Errorf("open checkpoint %s at applied index %d: state machine at %d: %w", id, applied, got, errBehindCheckpoint)
	}
	m := *meta
	m.Size = snap.Size()
	pr, pw := io.Pipe()
	go func() {
		_, err := snap.WriteTo(pw)
		snap.Release()
		pw.CloseWithError(err)
	}()
	return &m, pr, nil
}

// restoreOnStart decides whether raft restores the latest snapshot when it
// starts: not when the state machine, which keeps its state and its applied
// index together, is at or past it. A state machine behind a checkpoint cannot
// be restored from it (the checkpoint is that state machine's own file): an
// error. With no snapshot there is nothing to restore.
func (s checkpointStore) restoreOnStart(applied uint64) (bool, error) {
	list, err := s.List()
	if err != nil {
		return false, fmt.Errorf("list snapshots: %w", err)
	}
	if len(list) == 0 {
		return false, nil
	}
	_, rc, cp, isCheckpoint, err := s.openSnapshot(list[0].ID)
	if err != nil {
		return false, err
	}
	if rc != nil {
		rc.Close()
	}
	if isCheckpoint {
		if applied < cp {
			return false, fmt.Errorf("snapshot %s is a checkpoint at applied index %d, the state machine is at %d: %w",
				list[0].ID, cp, applied, errBehindCheckpoint)
		}
		return false, nil
	}
	return applied == 0 || list[0].Index > applied, nil
}
