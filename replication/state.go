package replication

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"
)

// HasState reports whether cfg.Dir holds Raft state: a log entry, a term or
// a snapshot (raft.HasExistingState). A Dir that does not exist, or holds no
// log store yet, has none; HasState creates nothing then. Open must not be
// running on the same Dir: HasState opens the log store and closes it again.
// Package node asks before it decides whether a static bootstrap may run.
func HasState(cfg Config) (bool, error) {
	c := cfg.withDefaults()
	if c.Dir == "" {
		return false, errors.New("replication: HasState needs Dir")
	}
	_, boltErr := os.Stat(filepath.Join(c.Dir, "raft.db"))
	_, walErr := os.Stat(filepath.Join(c.Dir, "wal"))
	if errors.Is(boltErr, os.ErrNotExist) && errors.Is(walErr, os.ErrNotExist) {
		return false, nil
	}
	hlog := newHCLogger(c.Logger)
	logs, err := openLogStore(c, hlog)
	if err != nil {
		return false, err
	}
	defer logs.Close()
	snaps, err := raft.NewFileSnapshotStoreWithLogger(c.Dir, snapshotsRetained, hlog)
	if err != nil {
		return false, fmt.Errorf("open snapshot store in %s: %w", c.Dir, err)
	}
	has, err := raft.HasExistingState(logs, logs, snaps)
	if err != nil {
		return false, fmt.Errorf("check raft state in %s: %w", c.Dir, err)
	}
	return has, nil
}
