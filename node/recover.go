package node

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/txlog/txlog/dirsync"
	"github.com/txlog/txlog/replication"
)

// Losing a majority (--recover). When two members of three are gone for good
// (their disks lost, or refusing to start with their Raft state lost), the
// one left cannot elect a leader, and without a leader no member can be
// removed. txlogd --recover on the member that holds the history makes it a
// one-node cluster before its Raft starts (replication.Config.Recover:
// hashicorp/raft's RecoverCluster), keeping its log, its store and its txid
// node number; new members then join it with --join and empty data
// directories.
//
// What the node adds to the Raft side:
//
//   - a data directory with no Raft state is refused: there is nothing to
//     recover, and the operator most likely named the wrong node;
//   - the cluster gets a new ID (cluster.id), random, at the recovery. The
//     old members, should one come back with its old data, still hold the old
//     ID and the old configuration, in which the recovered node is one voter
//     of three: over the peer link it would ask for votes, and as a leader of
//     a later term it would make the recovered node step down and overwrite
//     its new entries. The peer link refuses every connection between two
//     different cluster IDs ("peer of another cluster", both ways), so it
//     never reaches this node's Raft. Members that join after the recovery
//     take the new ID from the member they join through.
//   - a marker, cluster.recovered, makes the recovery a one-off. It is
//     written (state "started", with the old and the new ID) before the new
//     cluster.id, and set to "done" once Raft recovered. A second --recover
//     on a "done" directory is refused, naming the file: --recover left in a
//     unit file must not cut the members that joined since out of the
//     cluster. A "started" one (the node stopped between the two steps)
//     recovers again with the same new ID: nothing joined in between, since
//     Raft never ran. When Raft refuses before it rewrote anything (the
//     Raft state was lost: an *AmnesiaError), the old ID is put back and the
//     marker removed.
//
// The marker's format (JSON, written as writeIDFile writes cluster.id):
//
//	{"state":"done","from_cluster_id":"<32 hex or empty>","cluster_id":"<32 hex>","at":"<RFC 3339>"}

// recoveredFile is the recovery marker in the data directory.
const recoveredFile = "cluster.recovered"

// Recovery marker states.
const (
	recoveryStarted = "started"
	recoveryDone    = "done"
)

// recoveryMarker is the content of cluster.recovered.
type recoveryMarker struct {
	State string    `json:"state"`
	From  string    `json:"from_cluster_id"`
	To    string    `json:"cluster_id"`
	At    time.Time `json:"at"`
}

// readRecoveryMarker reads cluster.recovered in dir; a missing file gives
// the zero marker.
func readRecoveryMarker(dir string) (recoveryMarker, error) {
	var m recoveryMarker
	path := filepath.Join(dir, recoveredFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return m, fmt.Errorf("read %s: %w", path, err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&m); err != nil {
		return m, fmt.Errorf("read %s: %w", path, err)
	}
	if m.State != recoveryStarted && m.State != recoveryDone {
		return m, fmt.Errorf("read %s: state %q, want %q or %q", path, m.State, recoveryStarted, recoveryDone)
	}
	if id, err := parseClusterID(m.To); err != nil || id.isZero() {
		return m, fmt.Errorf("read %s: cluster_id %q: want 32 hex digits, not all zero", path, m.To)
	}
	if _, err := parseClusterID(m.From); err != nil {
		return m, fmt.Errorf("read %s: from_cluster_id: %w", path, err)
	}
	return m, nil
}

// writeRecoveryMarker writes cluster.recovered in dir durably.
func writeRecoveryMarker(dir string, m recoveryMarker, syncDir func(string) error) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return dirsync.WriteFile(filepath.Join(dir, recoveredFile), append(b, '\n'), 0o644, syncDir)
}

// errNothingToRecover is wrapped by the refusal of --recover on a data
// directory without Raft state.
var errNothingToRecover = errors.New("nothing to recover")

// beginRecover prepares --recover, before the peer link opens (so that no
// connection of the old cluster is served): it refuses a data directory
// without Raft state or one that recovered already, writes the marker and
// the new cluster ID, and sets rcfg.Recover. The function it returns
// finishes the recovery once replication.Open returned: it passes Open's
// error on (an *AmnesiaError no longer as one: a node told to recover must
// not start refusing instead) and, on success, marks the recovery done.
// Without --recover it does nothing and its function returns Open's error.
func (n *Node) beginRecover(hadState bool, rcfg *replication.Config) (func(error) error, error) {
	pass := func(err error) error { return err }
	if !n.cfg.Recover {
		return pass, nil
	}
	dir := n.cfg.DataDir
	if n.cfg.Join != "" {
		return nil, errors.New("recover and join: give one, not both (recover the member that holds the history; join the others to it)")
	}
	if !hadState {
		return nil, fmt.Errorf("--recover: %w: the data directory %s holds no raft state; "+
			"start the member that holds the cluster's history with --recover, and the others with empty data directories and --join", errNothingToRecover, dir)
	}
	m, err := readRecoveryMarker(dir)
	if err != nil {
		return nil, err
	}
	switch m.State {
	case recoveryDone:
		return nil, fmt.Errorf("--recover: this data directory recovered the cluster already, at %s (%s): start it without --recover; "+
			"only to recover again after losing a majority once more, move %s out of the data directory first",
			m.At.Format(time.RFC3339), recoveredFile, recoveredFile)
	case "":
		id, err := newCandidate()
		if err != nil {
			return nil, err
		}
		m = recoveryMarker{State: recoveryStarted, From: clusterID(n.ident.clusterID()).String(), To: id.String(), At: time.Now().UTC()}
		if err := writeRecoveryMarker(dir, m, n.ident.syncDir); err != nil {
			return nil, err
		}
	}
	to, _ := parseClusterID(m.To) // checked by readRecoveryMarker, or made above
	if err := n.ident.replace(to); err != nil {
		return nil, err
	}
	rcfg.Recover = true
	finish := func(err error) error {
		if errors.Is(err, replication.ErrAmnesia) || errors.Is(err, replication.ErrNoState) {
			// Refused before Raft rewrote anything: put the old ID back.
			err = errors.Join(err, n.undoRecover(m))
		}
		if err != nil {
			return fmt.Errorf("--recover: %v", err) // %v: not an *AmnesiaError to start refused with
		}
		m.State = recoveryDone
		if err := writeRecoveryMarker(dir, m, n.ident.syncDir); err != nil {
			return fmt.Errorf("--recover: raft recovered, but: %w", err)
		}
		n.log.Warn("cluster recovered: this node is a one-node cluster under a new cluster id; "+
			"join new members to it with empty data directories and --join, and never start the lost members with their old data",
			"from_cluster_id", m.From, "cluster_id", m.To, "marker", filepath.Join(dir, recoveredFile))
		return nil
	}
	return finish, nil
}

// undoRecover puts back the cluster ID of m.From (none: cluster.id removed)
// and removes the marker, after a recovery that Raft refused before it wrote
// anything.
func (n *Node) undoRecover(m recoveryMarker) error {
	dir := n.cfg.DataDir
	from, _ := parseClusterID(m.From) // checked by readRecoveryMarker, or made in beginRecover
	if from.isZero() {
		if err := removeSynced(filepath.Join(dir, clusterIDFile), n.ident.syncDir); err != nil {
			return err
		}
		n.ident.id.Store(nil)
	} else if err := n.ident.replace(from); err != nil {
		return err
	}
	return removeSynced(filepath.Join(dir, recoveredFile), n.ident.syncDir)
}

// removeSynced removes path, if it exists, and fsyncs its directory.
func removeSynced(path string, syncDir func(string) error) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// replace persists id as this node's cluster ID in place of the one it has
// (the recovery's new ID: recover.go), unlike set, which refuses another.
func (i *identity) replace(id clusterID) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.clusterID() == id {
		return nil
	}
	if err := writeIDFile(filepath.Join(i.dir, clusterIDFile), id, i.syncDir); err != nil {
		return err
	}
	old := clusterID(i.clusterID())
	i.id.Store(&id)
	i.log.Warn("cluster id replaced for the recovery", "cluster_id", id.String(), "was", old.String())
	return nil
}
