package node

import (
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

// The store runs without an fsync per applied batch unless --store-fsync is set.
// That is safe because the Raft log, fsynced before any answer, holds every
// committed entry until a snapshot covers it, and hashicorp/raft restores the
// latest snapshot and replays the log after it at every start. What it must not
// do is open a store file torn by a machine crash. The rule:
//
//   - A clean stop syncs the store and then writes stateClean.
//   - Every start removes stateClean and records the machine's boot ID in
//     stateBoot (both fsynced) before the store is written again.
//   - A start that finds no stateClean (the node crashed) checks stateBoot: the
//     same boot ID means only the process died, and the page cache kept every
//     completed bbolt commit, so the file is whole; another boot ID (or none)
//     means the machine went down and unsynced pages may be lost, so the file
//     is thrown away and the state is rebuilt from the snapshot and the log.
const (
	stateFile  = "state.db"
	stateClean = "state.clean"
	stateBoot  = "state.boot"
)

// DefaultBootIDFile is where Linux exposes the ID of the current boot.
const DefaultBootIDFile = "/proc/sys/kernel/random/boot_id"

// openStore opens the state machine, applying the recovery rule above when the
// store runs without per-commit fsync.
func openStore(cfg Config) (*store.DB, error) {
	path := filepath.Join(cfg.DataDir, stateFile)
	if !cfg.StoreFsync {
		if err := prepareUnsyncedStore(cfg.DataDir, cfg.BootIDFile, cfg.Logger); err != nil {
			return nil, err
		}
	}
	return store.Open(path, store.Config{Logger: cfg.Logger, NoSync: !cfg.StoreFsync})
}

// prepareUnsyncedStore discards a store file that a machine crash may have torn,
// then marks the store as in use in this boot.
func prepareUnsyncedStore(dir, bootIDFile string, log *slog.Logger) error {
	b, err := os.ReadFile(bootIDFile)
	boot := strings.TrimSpace(string(b))
	if err != nil || boot == "" {
		// Without a boot ID every crash counts as a machine crash: always safe,
		// at the price of a rebuild after a mere process crash.
		log.Warn("no boot id; a crash will always rebuild the store", "boot_id_file", bootIDFile, "err", err)
		boot = "unknown"
	}
	path := filepath.Join(dir, stateFile)
	_, statErr := os.Stat(path)
	_, cleanErr := os.Stat(filepath.Join(dir, stateClean))
	last, _ := os.ReadFile(filepath.Join(dir, stateBoot))
	switch {
	case statErr != nil || cleanErr == nil:
		// No store yet, or a clean stop.
	case strings.TrimSpace(string(last)) == boot && boot != "unknown":
		log.Info("store kept after a process crash in the same boot", "path", path)
	default:
		log.Warn("store discarded after a crash across a machine restart; rebuilding it from the raft snapshot and log", "path", path)
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("discard store: %w", err)
		}
	}
	if err := os.Remove(filepath.Join(dir, stateClean)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove clean marker: %w", err)
	}
	if err := writeFileSync(filepath.Join(dir, stateBoot), []byte(boot+"\n")); err != nil {
		return err
	}
	return syncDir(dir)
}

// closeStore closes the store; without per-commit fsync it syncs it first and
// then marks the stop as clean.
func closeStore(db *store.DB, cfg Config) error {
	if cfg.StoreFsync {
		return db.Close()
	}
	if err := db.Sync(); err != nil {
		db.Close()
		return err // no clean marker: the next start treats this as a crash
	}
	if err := db.Close(); err != nil {
		return err
	}
	if err := writeFileSync(filepath.Join(cfg.DataDir, stateClean), []byte("clean\n")); err != nil {
		return err
	}
	return syncDir(cfg.DataDir)
}

// writeFileSync writes data to path through a temporary file, fsynced, and a rename.
func writeFileSync(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	return nil
}

// syncDir fsyncs a directory, making renames and removals in it durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}

// fileSize returns a function reporting the size of the file at path, 0 when it
// cannot be read: the store's size, which sets how often raft snapshots it.
func fileSize(path string) func() int64 {
	return func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			return 0
		}
		return fi.Size()
	}
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

func (n *Node) releaseLoop() {
	n.every(releaseInterval, nil, func() bool {
		if rss, ok := fileRSS(); ok && rss < releaseAbove {
			return false
		}
		if err := n.db.ReleaseMemory(); err != nil && !errors.Is(err, store.ErrClosed) {
			n.log.Warn("release store memory", "err", err)
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
