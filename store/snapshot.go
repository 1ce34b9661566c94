package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// restoreTempPattern names the temporary file Restore writes next to the
// database; Open removes any left over by a crash.
const restoreTempPattern = ".restore-*"

// Snapshot is a consistent, point-in-time view of a DB being written out. It
// holds a bbolt read transaction from Snapshot until Release.
type Snapshot struct {
	mu    sync.Mutex // held by WriteTo and Release, so that Release waits for a WriteTo
	tx    *bolt.Tx   // nil after Release
	index uint64
	term  uint64
}

// Snapshot starts a consistent snapshot of the database: the state after the
// last Apply, which later Applies do not change. Call it from the apply goroutine
// (between Applies); WriteTo may then run on another goroutine while Apply goes
// on. The caller must Release it: until then Close and Restore wait for it, and
// bbolt cannot reuse the pages it sees. It needs no flush of the kv overlay: the
// file holds kv_applied and the log records after it, which Restore replays.
func (db *DB) Snapshot() (*Snapshot, error) {
	if err := db.commits.commitPending(); err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", db.path, err)
	}
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.bolt == nil {
		return nil, ErrClosed
	}
	tx, err := db.bolt.Begin(false)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", db.path, err)
	}
	st, err := readState(tx)
	if err != nil {
		tx.Rollback()
		return nil, fmt.Errorf("snapshot %s: %w", db.path, err)
	}
	return &Snapshot{tx: tx, index: st.index, term: st.term}, nil
}

// AppliedIndex returns the applied index of the snapshot's state.
func (s *Snapshot) AppliedIndex() uint64 { return s.index }

// Size returns the length in bytes of the stream WriteTo writes.
func (s *Snapshot) Size() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tx == nil {
		return 0
	}
	return s.tx.Size()
}

// AppliedTerm returns the term of the snapshot's applied index.
func (s *Snapshot) AppliedTerm() uint64 { return s.term }

// WriteTo writes the snapshot stream to w: a complete bbolt database file, which
// Restore reads back. It may be called again to write the same stream.
func (s *Snapshot) WriteTo(w io.Writer) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tx == nil {
		return 0, errors.New("write snapshot: released")
	}
	n, err := s.tx.WriteTo(w)
	if err != nil {
		return n, fmt.Errorf("write snapshot at index %d: %w", s.index, err)
	}
	return n, nil
}

// Release frees the snapshot. It is safe to call twice, and waits for a running
// WriteTo.
func (s *Snapshot) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tx != nil {
		s.tx.Rollback()
		s.tx = nil
	}
}

// Restore replaces the database with a snapshot stream written by
// Snapshot.WriteTo, and reloads the applied index, the idempotency index and the
// kv overlay from it (the overlay by replaying the stream's log after its
// kv_applied, as Open does). Call it from the apply goroutine, never during
// Apply.
//
// Restore writes the stream to a temporary file next to the database, fsyncs it,
// and checks that it is a sound bbolt file with the store's buckets. Only then
// does it rename it over the database, fsync the directory and open it. Readers
// keep reading the old state until the switch, which holds them off for no I/O;
// a reader never sees a mix. After the switch Restore closes the old database,
// which waits for open Snapshots of it to be released.
//
// An error before the rename leaves the database as it was. An error after it
// (opening the new file) leaves the DB closed to Apply; the caller must stop the
// node, which reopens the restored file when it starts.
func (db *DB) Restore(r io.Reader) error {
	// What Apply left open is committed first, so that an error below leaves
	// the database as it was, and so that the old database can close.
	if err := db.commits.commitPending(); err != nil {
		return err
	}

	tmp, err := db.file.writeTemp(r)
	if err != nil {
		return err
	}
	if err := db.file.checkFile(tmp); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := db.file.markRestored(tmp); err != nil {
		os.Remove(tmp)
		return err
	}
	// The side file describes the old file: it goes, after the old file's last
	// commit is durable, before the new file takes the old one's name.
	if err := db.file.dropSideFile(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("restore %s: %w", db.path, err)
	}
	if err := os.Rename(tmp, db.path); err != nil {
		os.Remove(tmp)
		return errors.Join(fmt.Errorf("restore %s: %w", db.path, err), db.file.resumeDurability())
	}
	if err := db.cfg.syncDir(filepath.Dir(db.path)); err != nil {
		return fmt.Errorf("restore %s: %w", db.path, err)
	}
	o, err := db.file.openBolt(db.path)

	db.mu.Lock()
	old := db.bolt
	switch {
	case old == nil: // closed meanwhile
	case err != nil:
		db.bolt, db.idem, db.kv = nil, nil, nil
	default:
		db.bolt, db.idem, db.kv, db.dur = o.bolt, o.idem, o.kv, o.dur
		db.appliedTerm.Store(o.st.term)
		db.applied.Store(o.st.index)
		db.committed.Store(o.st.index)
		db.restored.Store(o.restored)
		if db.retain != nil {
			*db.retain = retainState{cfg: db.retain.cfg} // gates start again (retain.go)
		}
	}
	db.mu.Unlock()

	if old == nil {
		if o.bolt != nil {
			o.bolt.Close()
		}
		return ErrClosed
	}
	if cerr := old.Close(); cerr != nil {
		db.logger.Warn("close replaced database", "path", db.path, "err", cerr)
	}
	if err != nil {
		return fmt.Errorf("restore %s: %w", db.path, err)
	}
	if err := db.ReleaseMemory(); err != nil {
		db.logger.Warn("release memory after restore", "err", err)
	}
	db.logger.Info("store restored", o.logAttrs(db.path)...)
	return nil
}

// dropSideFile waits until the database's last commit is durable, stops
// making commits durable and removes the side file (durable.go). Nothing is
// left to commit: Restore committed what was open, and it runs on the apply
// goroutine.
func (df *dbFile) dropSideFile() error {
	db := df.db
	return db.commits.withWriter(func() error {
		dur := db.dur
		if dur == nil {
			return nil
		}
		db.dur = nil
		if err := dur.close(); err != nil {
			db.failed = err
			db.broken.Store(true)
			return err
		}
		if err := os.Remove(db.path + metaFileSuffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return db.cfg.syncDir(filepath.Dir(db.path))
	})
}

// resumeDurability undoes dropSideFile when the database file stays.
func (df *dbFile) resumeDurability() error {
	db := df.db
	if db.cfg.NoSync {
		return nil
	}
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.bolt == nil {
		return ErrClosed
	}
	dur, err := newDurability(db.path, db.bolt.Info().PageSize, db.cfg.syncDir, db.fsync)
	if err == nil {
		err = df.makeDurable(db.bolt, dur)
	}
	db.wmu.Lock()
	defer db.wmu.Unlock()
	if err != nil {
		db.failed = fmt.Errorf("store: commits cannot be made durable: %w", err)
		db.broken.Store(true)
		return db.failed
	}
	db.dur = dur
	return nil
}

// writeTemp copies r into a new fsynced file next to the database and returns its
// name.
func (df *dbFile) writeTemp(r io.Reader) (string, error) {
	db := df.db
	f, err := os.CreateTemp(filepath.Dir(db.path), filepath.Base(db.path)+restoreTempPattern)
	if err != nil {
		return "", fmt.Errorf("restore %s: %w", db.path, err)
	}
	_, err = io.Copy(f, r)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("restore %s: write %s: %w", db.path, f.Name(), err)
	}
	return f.Name(), nil
}

// markRestored writes the restored key (metaRestored) into the checked
// snapshot file at path: its own applied index and term, in a bbolt commit
// with bbolt's fsyncs (none with Config.NoSync), before Restore renames it.
func (df *dbFile) markRestored(path string) error {
	db := df.db
	b, err := bolt.Open(path, 0o600, df.boltOptions(db.cfg.NoSync))
	if err != nil {
		return fmt.Errorf("restore %s: mark snapshot: %w", db.path, err)
	}
	err = b.Update(func(tx *bolt.Tx) error {
		st, err := readState(tx)
		if err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(metaRestored, encodeApplied(st.index, st.term))
	})
	if cerr := b.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("restore %s: mark snapshot: %w", db.path, err)
	}
	return nil
}

// checkFile opens the bbolt file at path and checks its length, page structure,
// buckets, schema and the log records that rebuild the kv overlay. It cannot see a flipped byte inside a value: bbolt has no
// checksums on data pages, so the integrity of the stream is the transport's job
// (Raft's file snapshot store keeps a CRC).
func (df *dbFile) checkFile(path string) error {
	db := df.db
	if err := checkLength(path); err != nil {
		return fmt.Errorf("restore %s: check snapshot: %w", db.path, err)
	}
	b, err := bolt.Open(path, 0o600, df.boltOptions(true)) // it only reads
	if err != nil {
		return fmt.Errorf("restore %s: check snapshot: %w", db.path, err)
	}
	err = b.View(func(tx *bolt.Tx) error {
		var errs []error
		for err := range tx.Check() {
			errs = append(errs, err)
		}
		if len(errs) > 0 {
			return fmt.Errorf("%w: %w", ErrCorrupt, errors.Join(errs...))
		}
		st, err := readState(tx)
		if err != nil {
			return err
		}
		_, err = loadKVOverlay(tx, st, nil) // Open replays it: check it first
		return err
	})
	if cerr := b.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("restore %s: check snapshot: %w", db.path, err)
	}
	return nil
}

// Offsets in a bbolt meta page (bbolt's internal/common: a 16-byte page header,
// then the meta fields), in the machine's byte order.
const (
	boltMagic         = 0xED0CDAED
	boltMetaMagic     = 16
	boltMetaPageSize  = 24
	boltMetaHighWater = 56 // pgid: the number of pages in use
	boltMetaEnd       = 64
)

// checkLength checks that the bbolt file at path is as long as its meta pages
// say. bbolt maps the file into memory and would fault, killing the process,
// when it follows a page number past the end of a truncated file; this check
// runs first. It finds the meta pages where bbolt does: meta page 1 one page
// after meta page 0, or, when meta page 0 is bad, at the first of the page
// sizes from 1 KiB up that holds a meta page of that page size.
func checkLength(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	// meta reads the meta page at off: its page size, or 0 when off holds no
	// meta page, and an error when its pages do not fit in the file.
	meta := func(page int, off int64) (int64, error) {
		var buf [boltMetaEnd]byte
		if _, err := f.ReadAt(buf[:], off); err != nil {
			return 0, fmt.Errorf("%w: meta page %d: %w", ErrCorrupt, page, err)
		}
		if binary.NativeEndian.Uint32(buf[boltMetaMagic:]) != boltMagic {
			return 0, nil
		}
		ps := int64(binary.NativeEndian.Uint32(buf[boltMetaPageSize:]))
		pages := binary.NativeEndian.Uint64(buf[boltMetaHighWater:])
		if ps == 0 || pages > uint64(fi.Size()/ps) {
			return 0, fmt.Errorf("%w: %d bytes, meta page %d says %d pages of %d", ErrCorrupt, fi.Size(), page, pages, ps)
		}
		return ps, nil
	}
	ps, err := meta(0, 0)
	if err != nil {
		return err
	}
	if ps != 0 {
		_, err = meta(1, ps)
		return err
	}
	for ps := int64(1 << 10); ps <= 16<<20 && ps < fi.Size()-1024; ps <<= 1 {
		var buf [boltMetaEnd]byte
		if _, err := f.ReadAt(buf[:], ps); err != nil {
			return nil
		}
		if binary.NativeEndian.Uint32(buf[boltMetaMagic:]) == boltMagic &&
			int64(binary.NativeEndian.Uint32(buf[boltMetaPageSize:])) == ps {
			_, err = meta(1, ps)
			return err
		}
	}
	return nil
}

// removeRestoreTemps removes temporary files of a Restore that did not finish.
func (df *dbFile) removeRestoreTemps() {
	db := df.db
	names, _ := filepath.Glob(filepath.Join(filepath.Dir(db.path), globEscape(filepath.Base(db.path))+restoreTempPattern))
	for _, name := range names {
		if err := os.Remove(name); err != nil {
			db.logger.Warn("remove restore temp file", "path", name, "err", err)
		}
	}
}

// globEscape escapes the metacharacters of filepath.Match in s.
func globEscape(s string) string {
	var b []byte
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', '\\':
			b = append(b, '\\')
		}
		b = append(b, s[i])
	}
	return string(b)
}
