package replication

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"

	"github.com/hashicorp/raft"
)

// Recovery from the loss of a majority (Config.Recover). When too few members
// of a cluster are left to elect a leader (two of three lost their disks, or
// refuse to start with their Raft state lost), no configuration change can
// commit: removing the dead members needs a leader. Open with Config.Recover
// rewrites the Raft configuration of the server it opens to that server
// alone, before raft runs, with hashicorp/raft's RecoverCluster (as Consul's
// peers.json and etcd's --force-new-cluster do): the server then elects
// itself and runs as a one-node cluster, with its log and its state machine,
// and new members join it.
//
// What RecoverCluster does, and what txlog adds around it:
//
//   - it restores the latest snapshot into the state machine and applies
//     every command entry of the log after it, committed or not: an entry the
//     old cluster had not committed is committed now, by this server alone.
//     A state machine that keeps its state (a checkpointer) is at or past the
//     snapshot already, so recoveryStore hands raft an empty stream in its
//     place and recoveryFSM ignores it (restoreOnStart decides, as for a
//     start); the state machine skips the entries it applied, as after any
//     restart.
//   - it writes a new snapshot (a checkpoint) at the log's last index and
//     term whose configuration is this server alone, and deletes the whole
//     log, so that no older configuration entry comes back. The stable store
//     (term and vote) stays.
//
// The server with the most complete log must be the one recovered: the one
// whose log ends in the highest term, and among those at the highest index
// (Raft's own "at least as up-to-date"). It holds every entry the old cluster
// committed. A server with less loses the committed entries it lacks.
//
// A server whose Raft state was lost (AmnesiaError) is not recovered: Open
// checks that first and returns the error. Neither is a Dir with no Raft
// state (ErrNoState): there is no history to keep.
//
// Recovering is a one-off: the caller (package node) keeps a marker so that
// it never recovers twice by accident, and changes the cluster's ID so that
// the old members, should they come back with their old data and their old
// configuration, are refused by the peer link instead of voting.

// ErrNoState is returned by Open with Config.Recover when Config.Dir holds no
// Raft state: there is nothing to recover.
var ErrNoState = errors.New("replication: no raft state to recover")

// recoverCluster rewrites the Raft configuration in c.Dir to c.ID alone at
// addr, keeping the log's history in the state machine (see above). Open
// calls it before raft starts, with the stores it opened.
func recoverCluster(c Config, rc *raft.Config, sm machine, logs logStore, snaps checkpointStore, trans raft.Transport, logger *slog.Logger) error {
	has, err := raft.HasExistingState(logs, logs, snaps)
	if err != nil {
		return fmt.Errorf("recover: check raft state in %s: %w", c.Dir, err)
	}
	if !has {
		return fmt.Errorf("%w in %s", ErrNoState, c.Dir)
	}
	old, err := latestConfiguration(logs, snaps)
	if err != nil {
		return fmt.Errorf("recover: read the raft configuration in %s: %w", c.Dir, err)
	}
	restore, err := snaps.restoreOnStart(sm.AppliedIndex())
	if err != nil {
		return fmt.Errorf("recover: %w", err)
	}
	self := raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(c.ID), Address: trans.LocalAddr()}
	// The state machine's failure is fatal in a running server; here it
	// fails the recovery (fsm.Snapshot returns it before anything is written).
	f := newFSM(sm, func(error) {})
	conf := raft.Configuration{Servers: []raft.Server{self}}
	if err := raft.RecoverCluster(rc, recoveryFSM{fsm: f, restore: restore}, logs, logs,
		recoveryStore{checkpointStore: snaps, restore: restore}, trans, conf); err != nil {
		return fmt.Errorf("recover the raft configuration in %s: %w", c.Dir, err)
	}
	list, err := snaps.List()
	if err != nil || len(list) == 0 {
		return fmt.Errorf("recover: list snapshots in %s after recovering: %v", c.Dir, err)
	}
	var dropped []string
	for _, s := range old.Servers {
		if s.ID != self.ID {
			dropped = append(dropped, fmt.Sprintf("%s=%s", s.ID, s.Address))
		}
	}
	logger.Warn("raft configuration rewritten to this server alone: the cluster was recovered from it",
		"id", c.ID, "addr", string(self.Address), "index", list[0].Index, "term", list[0].Term,
		"applied", sm.AppliedIndex(), "members_before", len(old.Servers), "dropped", dropped,
		"was_member", slices.ContainsFunc(old.Servers, func(s raft.Server) bool { return s.ID == self.ID }))
	return nil
}

// latestConfiguration returns the latest Raft configuration in logs and
// snaps: the latest snapshot's, or a configuration entry after it.
func latestConfiguration(logs logStore, snaps raft.SnapshotStore) (raft.Configuration, error) {
	var conf raft.Configuration
	var after uint64
	list, err := snaps.List()
	if err != nil {
		return conf, fmt.Errorf("list snapshots: %w", err)
	}
	if len(list) > 0 {
		conf, after = list[0].Configuration, list[0].Index
	}
	first, err := logs.FirstIndex()
	if err != nil {
		return conf, fmt.Errorf("first index: %w", err)
	}
	last, err := logs.LastIndex()
	if err != nil {
		return conf, fmt.Errorf("last index: %w", err)
	}
	for i := max(first, after+1); first > 0 && i <= last; i++ {
		var l raft.Log
		if err := logs.GetLog(i, &l); err != nil {
			return conf, fmt.Errorf("read entry %d: %w", i, err)
		}
		if l.Type == raft.LogConfiguration {
			conf = raft.DecodeConfiguration(l.Data)
		}
	}
	return conf, nil
}

// recoveryFSM is the FSM RecoverCluster replays into: fsm, except that a
// snapshot is not restored when the state machine is at or past it already
// (restore false: restoreOnStart).
type recoveryFSM struct {
	*fsm
	restore bool
}

func (f recoveryFSM) Restore(rc io.ReadCloser) error {
	if !f.restore {
		return nil
	}
	return f.fsm.Restore(rc)
}

// recoveryStore is the snapshot store RecoverCluster reads: with restore
// false, a snapshot opens as an empty stream (recoveryFSM ignores it), so that
// a checkpoint is not streamed from the state machine into itself.
type recoveryStore struct {
	checkpointStore
	restore bool
}

func (s recoveryStore) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	if s.restore {
		return s.checkpointStore.Open(id)
	}
	meta, rc, err := s.SnapshotStore.Open(id)
	if err != nil {
		return nil, nil, err
	}
	rc.Close()
	return meta, io.NopCloser(bytes.NewReader(nil)), nil
}
