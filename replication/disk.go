package replication

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// DiskUsage is how many bytes the Raft state in a Config.Dir takes, by part.
type DiskUsage struct {
	// LogBytes is the size of the Raft log's files: raft-wal's wal/
	// directory (its segments, the prepared spare included, and its meta
	// store) or raft-boltdb's raft.db.
	LogBytes uint64
	// SnapshotBytes is the size of the kept snapshots under snapshots/.
	SnapshotBytes uint64
}

// Usage returns the DiskUsage of the Raft state in dir (a Config.Dir): the
// apparent sizes of its files, read with stat, without opening any. A part
// that does not exist counts 0; a file removed while it walks is skipped.
// Safe to call while a Raft runs in dir.
func Usage(dir string) (DiskUsage, error) {
	var u DiskUsage
	logBytes, err := treeBytes(filepath.Join(dir, "wal"))
	if err != nil {
		return u, err
	}
	bolt, err := treeBytes(filepath.Join(dir, "raft.db"))
	if err != nil {
		return u, err
	}
	snaps, err := treeBytes(filepath.Join(dir, "snapshots"))
	if err != nil {
		return u, err
	}
	u.LogBytes, u.SnapshotBytes = logBytes+bolt, snaps
	return u, nil
}

// treeBytes returns the sum of the sizes of the regular files at or under
// path; 0 when path does not exist.
func treeBytes(path string) (uint64, error) {
	var n uint64
	err := filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // gone (or never made): counts 0
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		n += uint64(info.Size())
		return nil
	})
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	return n, err
}
