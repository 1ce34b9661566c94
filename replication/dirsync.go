package replication

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Directory fsyncs. A new, renamed or removed name survives a power loss only
// once its directory is fsynced (POSIX; ext4's journal usually hides the
// difference, XFS and ext4 without a journal do not). Every directory this
// package creates is made durable in its parent before Open returns, so
// before anything raft writes in it (the bootstrap configuration, a term, a
// vote, an appended entry) can be acknowledged:
//
//	<data dir>/raft/             mkdirSynced, in Open: fsyncs <data dir>
//	raft/wal/, raft/snapshots/   mkdirSynced, in Open: fsyncs raft/
//	raft/wal/wal-meta.db         raft-wal: created under a temporary name, renamed, raft/wal/ fsynced
//	raft/wal/*.wal               zeroFile.Sync: the segment's first sync fsyncs raft/wal/
//	raft/wal/recycle.old         zeroFS.Delete: fsyncs raft/wal/ after the rename or remove
//	raft/snapshots/<id>.tmp/*    syncedSink.Close: fsyncs the snapshot's directory before raft renames it
//	raft/snapshots/<id>/         raft's FileSnapshotSink.Close: fsyncs raft/snapshots/ after the rename
//	raft/raft.db                 raft-boltdb (--raft-log=boltdb): bbolt's own create, then Open fsyncs raft/
//
// Config.syncDir lets a test record the fsyncs in order (dirsync_test.go).

// syncDir fsyncs the directory dir.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}

// mkdirSynced creates dir and any missing parents, as os.MkdirAll does, and
// fsyncs the parent of each directory it creates, deepest last, with sync.
// A dir that exists already is left as it is: its entry was made durable
// when it was created (by an earlier run of this code, or by whoever made it).
func mkdirSynced(dir string, sync func(string) error) error {
	fi, err := os.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("mkdir %s: not a directory", dir)
		}
		return nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("mkdir %s: %w", dir, err)
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := mkdirSynced(parent, sync); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("mkdir %s: %w", dir, err)
	}
	return sync(parent)
}
