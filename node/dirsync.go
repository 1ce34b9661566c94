package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// The data directory's entries. Each part makes the names it creates durable
// in their directory (the store: state.db, state.db.meta; replication:
// raft/ and everything under it; wal: wal/; txid: txid.hwm). Open makes the
// data directory's own name durable in its parent when it creates it, and
// fsyncs the data directory once more after every part is open, before the
// node serves anything: whatever a part created in it is then durable
// whichever part forgot to. http.addr, written by Run, is informational (it
// tells tests and tools the bound port) and is not fsynced: a node that
// restarts writes it again.

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
// fsyncs the parent of each directory it creates with sync. A dir that exists
// is left as it is.
func mkdirSynced(dir string, perm os.FileMode, sync func(string) error) error {
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
		if err := mkdirSynced(parent, perm, sync); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, perm); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("mkdir %s: %w", dir, err)
	}
	return sync(parent)
}
