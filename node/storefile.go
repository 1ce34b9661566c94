package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/txlog/txlog/store"
)

// The store commits applied entries every Config.StoreCommitInterval and makes
// each commit durable in the background (store/durable.go): the file is never
// torn, and after any crash it holds every entry up to its applied index, which
// raft's log continues from.
const stateFile = "state.db"

// Files of the earlier rule for a store without fsync (a clean-stop marker
// and the boot ID), removed at start.
var oldStateFiles = []string{"state.clean", "state.boot"}

// openStore opens the state machine.
func openStore(cfg Config) (*store.DB, error) {
	for _, name := range oldStateFiles {
		if err := os.Remove(filepath.Join(cfg.DataDir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("remove %s: %w", name, err)
		}
	}
	return store.Open(filepath.Join(cfg.DataDir, stateFile), store.Config{
		Logger:         cfg.Logger,
		Metrics:        cfg.Metrics,
		CommitInterval: max(cfg.StoreCommitInterval, 0),
		Retention:      cfg.LogRetention,
		KVFlushRecords: cfg.StoreKVFlushRecords,
	})
}

// releaseInterval is how often the node checks its file-backed resident
// memory, and releaseAbove how much of it makes the node drop the store's
// memory-mapped pages from its resident set (see store.DB.ReleaseMemory). A
// dropped page that is touched again costs a minor fault, so the node drops them
// only when they add up: a store smaller than releaseAbove is never released.
const (
	releaseInterval = 2 * time.Second
	releaseAbove    = 64 << 20
)

// releaseLoop runs until life ends (see releaseInterval).
func releaseLoop(life context.Context, db *store.DB, log *slog.Logger) {
	every(life, releaseInterval, nil, func() bool {
		if rss, ok := fileRSS(); ok && rss < releaseAbove {
			return false
		}
		if err := db.ReleaseMemory(); err != nil && !errors.Is(err, store.ErrClosed) {
			log.Warn("release store memory", "err", err)
		}
		return false
	})
}

// fileRSS returns the process's file-backed resident memory in bytes (RssFile
// of /proc/self/status), and false where that cannot be read.
func fileRSS() (int64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(b)) {
		rest, ok := strings.CutPrefix(line, "RssFile:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0, false
		}
		return kb << 10, true
	}
	return 0, false
}
