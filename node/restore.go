package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/txlog/txlog/dirsync"
	"github.com/txlog/txlog/replication"
	"github.com/txlog/txlog/store"
	"github.com/txlog/txlog/txid"
)

// Restore (--restore FILE) seeds the first node of a new cluster from a
// backup (store/backup.go), before Open opens anything else in the data
// directory, which must be empty:
//
//   - the backup is checked (its checksum, its body as a store) and its body
//     becomes the store file, with the backup's applied index and term;
//   - the data directory gets a new cluster ID: the restored cluster is a
//     new one, which the old cluster's nodes cannot talk to;
//   - its txid node number is the one the registry in the backup gives this
//     node's ID, else --node-number, else the smallest number the registry
//     does not hold;
//   - the txid generator's high-water mark is set past the largest txid in
//     the backup, so that no txid repeats whatever the clock says;
//   - Raft is seeded (replication.Seed) as a one-server cluster of this node
//     whose log goes on after the backup's index: the store skips nothing,
//     and the log's indexes and lease tokens keep growing.
//
// The node then starts as after a restart, elects itself and serves; other
// new nodes join it (--join). A data directory that holds anything is
// refused, so a restart with --restore still given fails instead of
// restoring again: start it without --restore.
func restoreBackup(cfg Config, syncDir func(string) error) error {
	_, err := restoreInto(cfg, syncDir)
	return err
}

// Restored is what a restore seeded a data directory with.
type Restored struct {
	// Index and Term are the backup's last applied entry; the restored
	// node's Raft log goes on after Index.
	Index, Term uint64
	// FromNode and FromCluster name the node the backup was taken from and
	// its cluster.
	FromNode, FromCluster string
	// ClusterID is the new cluster's ID, NodeNumber the restored node's
	// txid node number.
	ClusterID  string
	NodeNumber int
}

// RestoreDataDir seeds cfg.DataDir from the backup file cfg.Restore exactly
// as txlogd --restore does (restoreBackup), without starting a node: `txlog
// restore`, as etcdutl snapshot restore is to etcd. It creates the data
// directory when it does not exist, and refuses one that holds anything.
// txlogd started on it afterwards with the same --id and --raft-addr, and
// without --restore, --cluster or --join, serves as the first node of the
// new cluster. It reads ID, DataDir (default data/<ID>), RaftAddr, NodeNumber,
// RaftLog, Restore and Logger (nil: none) of cfg, nothing else.
func RestoreDataDir(cfg Config) (Restored, error) {
	cfg = Config{
		ID: cfg.ID, DataDir: cfg.DataDir, RaftAddr: cfg.RaftAddr, NodeNumber: cfg.NodeNumber,
		RaftLog: cfg.RaftLog, Restore: cfg.Restore, Logger: cfg.Logger,
	}.withDefaults()
	if err := cfg.Validate(); err != nil {
		return Restored{}, err
	}
	if cfg.Restore == "" {
		return Restored{}, errors.New("restore: no backup file given")
	}
	if err := dirsync.MkdirAll(cfg.DataDir, 0o755, dirsync.Sync); err != nil { // as Open
		return Restored{}, fmt.Errorf("create data dir %s: %w", cfg.DataDir, err)
	}
	return restoreInto(cfg, dirsync.Sync)
}

// restoreInto is restoreBackup, returning what it seeded.
func restoreInto(cfg Config, syncDir func(string) error) (Restored, error) {
	if len(cfg.Cluster) > 0 || cfg.Join != "" {
		return Restored{}, fmt.Errorf("restore %s: --restore seeds a new one-node cluster: leave out --cluster and --join (the other nodes join it)", cfg.Restore)
	}
	entries, err := os.ReadDir(cfg.DataDir)
	if err != nil {
		return Restored{}, fmt.Errorf("restore %s: %w", cfg.Restore, err)
	}
	if len(entries) > 0 {
		return Restored{}, fmt.Errorf("restore %s: data dir %s is not empty (it holds %s): restore only into a new, empty data dir", cfg.Restore, cfg.DataDir, entries[0].Name())
	}
	h, err := store.InstallBackup(cfg.Restore, filepath.Join(cfg.DataDir, stateFile), syncDir)
	if err != nil {
		return Restored{}, fmt.Errorf("restore %s: %w", cfg.Restore, err)
	}
	id, err := newCandidate()
	if err != nil {
		return Restored{}, err
	}
	if err := writeIDFile(filepath.Join(cfg.DataDir, clusterIDFile), id, syncDir); err != nil {
		return Restored{}, err
	}
	num, err := restoredNumber(cfg, h.Nodes)
	if err != nil {
		return Restored{}, fmt.Errorf("restore %s: %w", cfg.Restore, err)
	}
	if err := writeNumber(filepath.Join(cfg.DataDir, numberFile), num); err != nil {
		return Restored{}, err
	}
	ids, err := txid.OpenGenerator(filepath.Join(cfg.DataDir, hwmFile), txid.Config{Node: uint16(num), Floor: txid.ID(h.MaxTxID)})
	if err != nil {
		return Restored{}, fmt.Errorf("restore %s: txid generator: %w", cfg.Restore, err)
	}
	if err := ids.Close(); err != nil {
		return Restored{}, fmt.Errorf("restore %s: txid generator: %w", cfg.Restore, err)
	}
	rcfg := replication.Config{
		ID:       cfg.ID,
		Dir:      filepath.Join(cfg.DataDir, "raft"),
		BindAddr: cfg.RaftAddr,
		Logger:   cfg.Logger,
		LogStore: cfg.RaftLog,
	}
	if err := replication.Seed(rcfg, h.Index, h.Term); err != nil {
		return Restored{}, fmt.Errorf("restore %s: %w", cfg.Restore, err)
	}
	cfg.Logger.Info("restored from a backup: a new one-node cluster", "file", cfg.Restore,
		"index", h.Index, "term", h.Term, "from_node", h.NodeID, "from_cluster", h.ClusterID,
		"new_cluster", id.String(), "node_number", num)
	return Restored{Index: h.Index, Term: h.Term, FromNode: h.NodeID, FromCluster: h.ClusterID, ClusterID: id.String(), NodeNumber: num}, nil
}

// restoredNumber picks the txid node number of a node restored from a
// backup whose registry is nodes (ID → number).
func restoredNumber(cfg Config, nodes map[string]uint16) (int, error) {
	taken := map[int]string{}
	for id, n := range nodes {
		if id != cfg.ID && n != 0 {
			taken[int(n)] = id
		}
	}
	if own := int(nodes[cfg.ID]); own != 0 {
		if cfg.NodeNumber != 0 && cfg.NodeNumber != own {
			return 0, fmt.Errorf("the backup's registry gives %s txid node number %d, --node-number says %d", cfg.ID, own, cfg.NodeNumber)
		}
		return own, nil
	}
	if n := cfg.NodeNumber; n != 0 {
		if other, ok := taken[n]; ok {
			return 0, fmt.Errorf("--node-number %d is %s's in the backup's registry: choose another", n, other)
		}
		return n, nil
	}
	for n := 1; n <= txid.MaxNode; n++ {
		if _, ok := taken[n]; !ok {
			return n, nil
		}
	}
	return 0, errors.New("every txid node number is taken in the backup's registry")
}
