package replication

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/hashicorp/raft"

	"github.com/txlog/txlog/dirsync"
)

// Seed makes cfg.Dir, which must hold no Raft state, the Raft state of a
// one-server cluster (cfg.ID at cfg.AdvertiseAddr, else cfg.BindAddr) whose
// history up to index (of term) is in the state machine already: a store
// restored from a backup. It writes a checkpoint snapshot (checkpoint.go) at
// index, with that configuration, and term as the current term, so that
// Open finds the state machine current to the snapshot, restores nothing,
// and raft's log goes on at index+1; the state machine then skips nothing
// new, and the indexes it keeps (the log's, lease tokens) keep growing.
// Other servers join it as they join any cluster, and get the state in a
// snapshot.
func Seed(cfg Config, index, term uint64) error {
	c := cfg.withDefaults()
	if c.Dir == "" || c.ID == "" || index == 0 || term == 0 {
		return fmt.Errorf("replication: Seed needs Dir, ID, an index and a term (got %q, %q, %d, %d)", c.Dir, c.ID, index, term)
	}
	addr := c.AdvertiseAddr
	if addr == "" {
		addr = c.BindAddr
	}
	if addr == "" {
		return errors.New("replication: Seed needs AdvertiseAddr or BindAddr")
	}
	if has, err := HasState(c); err != nil {
		return err
	} else if has {
		return fmt.Errorf("replication: seed %s: it holds raft state already", c.Dir)
	}
	snapDir := filepath.Join(c.Dir, "snapshots")
	if err := dirsync.MkdirAll(snapDir, 0o700, c.syncDir); err != nil {
		return fmt.Errorf("seed raft dir: %w", err)
	}
	hlog := newHCLogger(c.Logger)
	logs, err := openLogStore(c, hlog)
	if err != nil {
		return err
	}
	err = logs.SetUint64(keyCurrentTerm, term)
	if cerr := logs.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("seed %s: current term: %w", c.Dir, err)
	}
	files, err := raft.NewFileSnapshotStoreWithLogger(c.Dir, snapshotsRetained, hlog)
	if err != nil {
		return fmt.Errorf("seed %s: open snapshot store: %w", c.Dir, err)
	}
	snaps := checkpointStore{SnapshotStore: files, dir: snapDir, syncDir: c.syncDir}
	conf := bootstrapConfiguration([]Server{{ID: c.ID, Addr: addr}})
	// The file store encodes the configuration for old readers through a
	// transport; an in-memory one encodes an address as itself, as the TCP one.
	_, trans := raft.NewInmemTransport(raft.ServerAddress(addr))
	defer trans.Close()
	sink, err := snaps.Create(raft.SnapshotVersionMax, index, term, conf, index, trans)
	if err != nil {
		return fmt.Errorf("seed %s: create snapshot: %w", c.Dir, err)
	}
	if err := (&checkpointSnapshot{applied: index}).Persist(sink); err != nil {
		return fmt.Errorf("seed %s: %w", c.Dir, err)
	}
	return c.syncDir(c.Dir)
}
