package store

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/txlog/txlog/dirsync"
	bolt "go.etcd.io/bbolt"
)

// Defaults of Config.
const (
	DefaultLockTimeout      = 5 * time.Second
	DefaultInitialMmapBytes = 1 << 30
	DefaultKVFlushKeys      = 64 << 10
	DefaultKVFlushLogBytes  = 32 << 20
	DefaultKVFlushRecords   = 64 << 10
	DefaultKVFlushStepKeys  = 4 << 10
	DefaultPageSize         = 16 << 10
)

// Config holds the settings of a DB. Zero values mean the defaults.
type Config struct {
	// Logger receives the store's logs; nil discards them.
	Logger *slog.Logger
	// Metrics is the registry the store registers its metrics with
	// (metrics.go: txlog_store_bytes, txlog_fsync_duration_seconds{log="store"});
	// nil: no metrics.
	Metrics prometheus.Registerer
	// NoSync turns off every fsync of the store: bbolt's, and the background
	// ones of durable.go that make each commit durable without holding up Apply.
	// A process crash loses nothing (the page cache keeps every completed
	// commit), but after a machine crash the file may be torn. For tests and
	// benchmarks. Default false.
	NoSync bool
	// LockTimeout is how long Open and Restore wait for the database file's lock,
	// which another process may hold. Default DefaultLockTimeout (5s).
	LockTimeout time.Duration
	// InitialMmapBytes is the size, in bytes, of bbolt's initial memory map. A
	// bbolt commit that outgrows the map waits until every read transaction ends,
	// including an open Snapshot being written out; a map larger than the database
	// avoids that stall. It reserves address space, not memory or disk.
	// Default DefaultInitialMmapBytes (1 GiB).
	InitialMmapBytes int
	// PageSize is the bbolt page size, in bytes, of a database file the store
	// creates: a power of two from 1 KiB to 64 KiB. A file that exists keeps the
	// page size it was created with, and so does a file restored from a
	// snapshot (the source's). Larger pages mean fewer pages per commit and
	// shallower trees: the log, txs and dedup_time buckets grow at their ends,
	// where a large page fills before it is written out (docs/store.md).
	// Default DefaultPageSize (16 KiB).
	PageSize int

	// KVFlushKeys, KVFlushLogBytes and KVFlushRecords bound the kv overlay, the
	// key states in memory that the kv bucket does not hold yet (overlay.go).
	// Once the overlay reaches one of them, Applies write it into the
	// bucket, in steps of KVFlushStepKeys keys: pauses of the apply goroutine,
	// in exchange for writing each bucket page once per flush instead of once
	// per transaction. They bound the overlay's memory and the log records
	// that Open replays.
	//
	// KVFlushKeys is the number of keys in the overlay, deleted ones included.
	// Default DefaultKVFlushKeys (65,536).
	KVFlushKeys int
	// KVFlushLogBytes is the size, in bytes, of the log records written since
	// the last flush, which hold every value in the overlay.
	// Default DefaultKVFlushLogBytes (32 MiB).
	KVFlushLogBytes int
	// KVFlushRecords is the number of log records written since the last
	// flush, so that a key rewritten many times still gets flushed.
	// Default DefaultKVFlushRecords (65,536).
	KVFlushRecords int
	// KVFlushStepKeys is how many keys of a flush one Apply writes into the
	// kv bucket: a flush of n keys takes n/KVFlushStepKeys Applies, and each
	// pauses the apply goroutine for that share of it. The keys written since
	// the flush began wait for the next one, so the overlay may hold up to
	// twice the limits above. Default DefaultKVFlushStepKeys (4,096).
	KVFlushStepKeys int

	// CommitInterval lets Apply leave its bbolt transaction open, so that the
	// next Applies add to it, until it is this old: one commit (and, without
	// NoSync, one fsync) for all the entries applied in the interval instead of
	// one per Apply. Apply commits earlier when the transaction holds 32Ki
	// entries, when a kv flush ends or a node registers, and a timer commits an
	// open transaction after the interval when no Apply comes. The read methods
	// see every applied entry all the same: a read that misses in committed
	// state while entries are uncommitted reads the open transaction. What a
	// crash loses is the open transaction: the file then holds an applied index
	// that much older, and the caller must apply the entries after it again, as
	// raft does from its log. Default 0: every Apply commits.
	CommitInterval time.Duration

	// Retention is how much of the log the store keeps (retain.go): a node's
	// own setting, which changes which old log records it serves and nothing
	// else. Default: the zero Retention, keep everything.
	Retention Retention

	// syncDir fsyncs a directory after an entry in it was created, renamed or
	// removed. Default: syncDir. Tests record the calls (dirsync_test.go).
	syncDir func(dir string) error
}

// Validate reports every invalid field of c.
func (c Config) Validate() error {
	var errs []error
	if c.LockTimeout < 0 {
		errs = append(errs, fmt.Errorf("store: LockTimeout %v is negative", c.LockTimeout))
	}
	if c.InitialMmapBytes < 0 {
		errs = append(errs, fmt.Errorf("store: InitialMmapBytes %d is negative", c.InitialMmapBytes))
	}
	if c.KVFlushKeys < 0 {
		errs = append(errs, fmt.Errorf("store: KVFlushKeys %d is negative", c.KVFlushKeys))
	}
	if c.KVFlushLogBytes < 0 {
		errs = append(errs, fmt.Errorf("store: KVFlushLogBytes %d is negative", c.KVFlushLogBytes))
	}
	if c.KVFlushRecords < 0 {
		errs = append(errs, fmt.Errorf("store: KVFlushRecords %d is negative", c.KVFlushRecords))
	}
	if c.CommitInterval < 0 {
		errs = append(errs, fmt.Errorf("store: CommitInterval %v is negative", c.CommitInterval))
	}
	if c.KVFlushStepKeys < 0 {
		errs = append(errs, fmt.Errorf("store: KVFlushStepKeys %d is negative", c.KVFlushStepKeys))
	}
	if ps := c.PageSize; ps != 0 && (ps < 1<<10 || ps > maxPageSize || ps&(ps-1) != 0) {
		errs = append(errs, fmt.Errorf("store: PageSize %d is not a power of two from 1 KiB to 64 KiB", ps))
	}
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.LockTimeout == 0 {
		c.LockTimeout = DefaultLockTimeout
	}
	if c.InitialMmapBytes == 0 {
		c.InitialMmapBytes = DefaultInitialMmapBytes
	}
	if c.KVFlushKeys == 0 {
		c.KVFlushKeys = DefaultKVFlushKeys
	}
	if c.KVFlushLogBytes == 0 {
		c.KVFlushLogBytes = DefaultKVFlushLogBytes
	}
	if c.KVFlushRecords == 0 {
		c.KVFlushRecords = DefaultKVFlushRecords
	}
	if c.PageSize == 0 {
		c.PageSize = DefaultPageSize
	}
	if c.KVFlushStepKeys == 0 {
		c.KVFlushStepKeys = DefaultKVFlushStepKeys
	}
	if c.syncDir == nil {
		c.syncDir = dirsync.Sync
	}
	return c
}

// DB is the bbolt state machine. Apply, Snapshot and Restore are called from one
// goroutine (the apply goroutine); the reads are on Reads (a Reader), safe from
// any goroutine at any time, including during Apply and Restore, as are
// AppliedIndex, AppliedTerm and RestoredIndex.
type DB struct {
	// The parts, each a view of this DB: reads (reads.go and the files of
	// each bucket), commits (the bbolt transaction Apply leaves open,
	// apply.go) and file (opening, creating and restoring the file, db.go and
	// snapshot.go).
	reads   Reader
	commits committer
	file    dbFile

	path  string
	fsync prometheus.Observer // durable.go's fdatasyncs of the file (metrics.go); nil without Config.Metrics
	// txidConflicts counts the entries Apply refused with Result.TxIDConflict
	// (metrics.go); registered with Config.Metrics, if set.
	txidConflicts prometheus.Counter
	cfg           Config
	kvLimits      kvLimits // from cfg
	// retain is the retention progress (retain.go), nil when Config.Retention
	// is off; used by the apply goroutine only.
	retain *retainState
	logger *slog.Logger

	// mu guards the bolt, idem and kv pointers, not the data (bbolt,
	// idemIndex.mu and kvOverlay.mu guard that). Every user of a pointer holds
	// mu.RLock while it uses it; Restore and Close swap them under mu.Lock,
	// which is held for no I/O. Lock order: mu, then idemIndex.mu or
	// kvOverlay.mu.
	mu   sync.RWMutex
	bolt *bolt.DB // nil after Close
	// idem is the idempotency index of bolt's committed state (idem.go); nil
	// after Close. Invariant: it matches bolt once each Apply has returned.
	idem *idemIndex
	// kv is the kv overlay of bolt's committed state (overlay.go); nil after
	// Close. Invariant: once each Apply has returned, it holds the key states
	// written by the log records after kv_applied.
	kv *kvOverlay

	// applied is the last applied index. Invariant: it equals the meta bucket's
	// applied index, in the open transaction if there is one, once each Apply
	// or Restore has returned.
	applied atomic.Uint64
	// appliedTerm is the term of the entry at applied, stored before it.
	appliedTerm atomic.Uint64
	// restored is the applied index of the snapshot the file was last
	// restored from (the meta bucket's restored key), 0 if never.
	restored atomic.Uint64
	// committed is the applied index of committed state, which the read
	// methods see: applied, or less while Apply leaves a transaction open.
	committed atomic.Uint64

	// wmu guards the transaction Apply leaves open (Config.CommitInterval) and
	// the fields below. Apply holds it throughout. Lock order: mu, then wmu.
	wmu        sync.Mutex
	wtx        *bolt.Tx // nil, or the open transaction
	wtxSince   time.Time
	wtxIndex   uint64 // the applied index in wtx
	wtxEntries int    // entries applied in wtx
	timerArmed bool   // commitIdle will run
	// failed is set when applied entries were lost with their transaction
	// (a failed commit, or a failed Apply that rolled back earlier ones): the
	// database no longer matches what Apply returned, and everything fails.
	failed error
	broken atomic.Bool // failed != nil, for readers that do not take wmu

	// dur makes commits durable in the background (durable.go); nil with
	// Config.NoSync. Swapped under mu.Lock with bolt, used under wmu.
	dur *durability
	// durable is the applied index of the last commit made durable.
	durable atomic.Uint64
}

// Open opens or creates the state machine database at path.
func Open(path string, cfg Config) (*DB, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	db := &DB{
		path: path,
		cfg:  cfg,
		kvLimits: kvLimits{
			keys: cfg.KVFlushKeys, logBytes: cfg.KVFlushLogBytes, records: cfg.KVFlushRecords,
			stepKeys: cfg.KVFlushStepKeys,
		},
		logger:        cfg.Logger.With("component", "store"),
		txidConflicts: newTxIDConflicts(),
	}
	db.reads.db, db.commits.db, db.file.db = db, db, db
	if cfg.Retention.On() {
		db.retain = &retainState{cfg: cfg.Retention}
	}
	db.file.removeRestoreTemps()
	var met []prometheus.Collector
	if cfg.Metrics != nil {
		met = db.metrics()
	}

	_, statErr := os.Stat(path)
	o, err := db.file.openBolt(path)
	if err != nil {
		return nil, err
	}
	if errors.Is(statErr, os.ErrNotExist) {
		if err := db.cfg.syncDir(filepath.Dir(path)); err != nil {
			o.bolt.Close()
			return nil, err
		}
	}
	db.bolt, db.idem, db.kv, db.dur = o.bolt, o.idem, o.kv, o.dur
	db.appliedTerm.Store(o.st.term)
	db.applied.Store(o.st.index)
	db.committed.Store(o.st.index)
	db.restored.Store(o.restored)
	// Opening read the dedup records and the log records after kv_applied.
	if err := db.ReleaseMemory(); err != nil {
		db.logger.Warn("release memory after open", "err", err)
	}
	for _, c := range met {
		if err := cfg.Metrics.Register(c); err != nil {
			db.Close()
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	db.logger.Info("store opened", o.logAttrs(path)...)
	return db, nil
}

// opened is a bbolt file opened by openBolt, with what it was read into.
type opened struct {
	bolt *bolt.DB
	dur  *durability // nil with Config.NoSync
	idem *idemIndex
	kv   *kvOverlay
	st   appliedState
	// restored is the meta bucket's restored index (readRestored).
	restored uint64
	took     time.Duration // to open the file and rebuild idem and kv
}

func (o opened) logAttrs(path string) []any {
	return []any{
		"path", path, "index", o.st.index, "term", o.st.term,
		"idempotency_keys", o.idem.len(), "kv_applied", o.st.kvApplied,
		"kv_overlay_keys", o.kv.len(), "kv_replayed_records", o.kv.records, "took", o.took,
	}
}

// dbFile opens, creates and checks the database file of its DB, and puts a
// restored one in its place (snapshot.go). Used by Open, Restore and the
// apply goroutine only.
type dbFile struct{ db *DB }

// openBolt opens the bbolt file at path, creates the buckets if they are
// missing, checks the schema (a schema 2 file is rewritten as 3), reads the
// applied state and builds the idempotency index and the kv overlay.
func (df *dbFile) openBolt(path string) (opened, error) {
	db := df.db
	start := time.Now()
	if !db.cfg.NoSync {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			if err := df.create(path); err != nil {
				return opened{}, err
			}
		} else if _, err := rollBackToSaved(path); err != nil {
			return opened{}, err
		}
	}
	b, err := bolt.Open(path, 0o600, df.boltOptions(true))
	if err != nil {
		return opened{}, fmt.Errorf("open %s: %w", path, err)
	}
	o := opened{bolt: b}
	err = b.Update(func(tx *bolt.Tx) error {
		var err error
		if o.st, err = ensureSchema(tx); err != nil {
			return err
		}
		if o.restored, err = readRestored(tx); err != nil {
			return err
		}
		drop := &pageDropper{tx: tx}
		if o.idem, err = loadIdemIndex(tx, drop); err != nil {
			return err
		}
		o.kv, err = loadKVOverlay(tx, o.st, drop)
		return err
	})
	if err == nil && !db.cfg.NoSync {
		o.dur, err = newDurability(path, b.Info().PageSize, db.cfg.syncDir, db.fsync)
		if err == nil {
			err = df.makeDurable(b, o.dur)
			if err != nil {
				o.dur.close()
			}
		}
	}
	if err != nil {
		b.Close()
		return opened{}, fmt.Errorf("open %s: %w", path, err)
	}
	o.took = time.Since(start)
	return o, nil
}

// ensureSchema creates the store's buckets that tx lacks and writes or
// upgrades the schema (writeSchema).
func ensureSchema(tx *bolt.Tx) (appliedState, error) {
	for _, name := range allBuckets {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return appliedState{}, err
		}
	}
	return writeSchema(tx)
}

// dropEvery is how many records pageDropper lets a walk at open read between
// two drops of the pages it touched. A variable so that tests can make it small.
var dropEvery = 32 << 10

// pageDropper drops the pages of the memory map from the resident set (as
// ReleaseMemory does) every dropEvery records of the walks that build the
// idempotency index and the kv overlay at open, so that with a large store a
// restart's resident memory stays bounded by what a step touches rather than
// by all the pages the walks read. The map cannot move meanwhile: no other
// transaction runs at open, and this write transaction allocates nothing
// before its commit. A nil pageDropper does nothing.
type pageDropper struct {
	tx *bolt.Tx
	n  int
}

// tick counts one record, and drops the pages at every dropEvery-th.
func (p *pageDropper) tick() {
	if p == nil {
		return
	}
	if p.n++; p.n%dropEvery != 0 {
		return
	}
	_ = dropPages(p.tx.DB().Info().Data, p.tx.Size()) // advisory: the pages stay valid either way
}

// boltOptions returns the options bbolt opens the file with. Commits are
// never fsynced by bbolt itself (noSync): durable.go does it off the apply
// goroutine, or nothing does with Config.NoSync.
func (df *dbFile) boltOptions(noSync bool) *bolt.Options {
	db := df.db
	return &bolt.Options{
		Timeout:         db.cfg.LockTimeout,
		NoSync:          noSync,
		FreelistType:    bolt.FreelistMapType,
		NoFreelistSync:  false, // kept in the file: no walk of every page at open
		InitialMmapSize: db.cfg.InitialMmapBytes,
		PageSize:        db.cfg.PageSize, // for a file bbolt creates (create)
	}
}

// create creates a new database file at path whole: under a temporary name,
// with bbolt's own fsyncs, renamed into place. A side file left from another
// database file goes first.
func (df *dbFile) create(path string) error {
	db := df.db
	if err := os.Remove(path + metaFileSuffix); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("create %s: %w", path, err)
	}
	tmp := path + ".new"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("create %s: %w", path, err)
	}
	b, err := bolt.Open(tmp, 0o600, df.boltOptions(false))
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	err = b.Update(func(tx *bolt.Tx) error {
		_, err := ensureSchema(tx)
		return err
	})
	if cerr := b.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = db.cfg.syncDir(filepath.Dir(path))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("create %s: %w", path, err)
	}
	return nil
}

// makeDurable makes b's current commit durable and records it in dur's side
// file, and waits for that.
func (df *dbFile) makeDurable(b *bolt.DB, dur *durability) error {
	db := df.db
	var txid, applied uint64
	if err := b.View(func(tx *bolt.Tx) error {
		st, err := readState(tx)
		txid, applied = uint64(tx.ID()), st.index
		return err
	}); err != nil {
		return err
	}
	if err := dur.wait(); err != nil {
		return err
	}
	if err := dur.committed(b, txid, applied, db.durable.Store); err != nil {
		return err
	}
	return dur.wait()
}

// Close closes the database. It is safe to call twice, and concurrently with the
// read methods, which then return ErrClosed. It waits for a running Apply and for
// every Snapshot to be released.
//
// Close first writes the kv overlay into the kv bucket, and syncs the file
// when Config.NoSync is set, so that the next Open has no log to replay. If
// that fails the database closes all the same and Open replays the log; the
// error is returned.
func (db *DB) Close() error {
	db.mu.Lock()
	b, kv, dur := db.bolt, db.kv, db.dur
	db.bolt, db.idem, db.kv, db.dur = nil, nil, nil, nil
	db.wmu.Lock()
	btx, index, failed := db.wtx, db.wtxIndex, db.failed
	db.wtx, db.wtxEntries = nil, 0
	db.wmu.Unlock()
	db.mu.Unlock()
	if b == nil {
		return nil
	}
	var ferr error
	switch {
	case failed != nil:
		if btx != nil {
			btx.Rollback()
		}
		ferr = failed // and no flush: the overlay is ahead of the file
	case btx != nil:
		if err := db.commits.commitTx(b, dur, btx, index); err != nil {
			ferr = fmt.Errorf("close %s: commit applied entries: %w", db.path, err)
			break
		}
		ferr = db.commits.flushAtClose(b, dur, kv)
	default:
		ferr = db.commits.flushAtClose(b, dur, kv)
	}
	if dur != nil {
		ferr = errors.Join(ferr, dur.close())
	}
	if err := b.Close(); err != nil {
		return errors.Join(ferr, fmt.Errorf("close %s: %w", db.path, err))
	}
	return ferr
}

// commitTx commits btx, whose applied index is index, once the commit before
// it is durable, and starts making it durable (dur may be nil).
func (c *committer) commitTx(b *bolt.DB, dur *durability, btx *bolt.Tx, index uint64) error {
	db := c.db
	if dur != nil {
		if err := dur.wait(); err != nil {
			btx.Rollback()
			return err
		}
	}
	txid := uint64(btx.ID())
	if err := btx.Commit(); err != nil {
		return err
	}
	if dur != nil {
		return dur.committed(b, txid, index, db.durable.Store)
	}
	return nil
}

// flushAtClose writes the overlay kv of b into the kv bucket, if it has
// anything to write, and makes the file durable.
func (c *committer) flushAtClose(b *bolt.DB, dur *durability, kv *kvOverlay) error {
	db := c.db
	if kv.empty() {
		if db.cfg.NoSync {
			return nil
		}
		return dur.wait()
	}
	btx, err := b.Begin(true)
	if err == nil {
		var st appliedState
		if st, err = readState(btx); err == nil {
			err = kv.flushAll(btx.Bucket(bucketKV))
		}
		if err == nil {
			err = btx.Bucket(bucketMeta).Put(metaKVApplied, u64Key(st.index))
		}
		if err != nil {
			btx.Rollback()
		} else {
			err = c.commitTx(b, dur, btx, st.index)
		}
	}
	switch {
	case err != nil:
	case dur != nil:
		err = dur.wait()
	default:
		err = b.Sync()
	}
	if err != nil {
		return fmt.Errorf("close %s: flush kv overlay: %w", db.path, err)
	}
	return nil
}

// Sync commits what Apply left open and makes the file durable: everything
// applied before the call then survives any crash.
func (db *DB) Sync() error {
	if err := db.commits.commitPending(); err != nil {
		return err
	}
	return db.commits.withWriter(func() error {
		if db.dur != nil {
			return db.dur.wait()
		}
		if err := db.bolt.Sync(); err != nil {
			return fmt.Errorf("sync %s: %w", db.path, err)
		}
		return nil
	})
}

// Checkpoint makes everything applied so far durable in the file: it commits
// what Apply left open and syncs the file. It returns the applied index the
// file then holds at least, which later Applies and crashes never take it
// below. Call it from the apply goroutine, between Applies.
func (db *DB) Checkpoint() (uint64, error) {
	if err := db.Sync(); err != nil {
		return 0, err
	}
	if db.cfg.NoSync {
		return db.committed.Load(), nil
	}
	return db.durable.Load(), nil
}

// AppliedIndex returns the index of the last applied entry: 0 for a new
// database. It does not touch the disk.
func (db *DB) AppliedIndex() uint64 { return db.applied.Load() }

// AppliedTerm returns the term of the last applied entry (the entry at
// AppliedIndex, recorded with it in the same transaction): 0 for a new
// database. Between Applies the two agree; replication compares them with its
// Raft log at start. It does not touch the disk.
func (db *DB) AppliedTerm() uint64 { return db.appliedTerm.Load() }

// RestoredIndex returns the applied index of the snapshot stream the file was
// last restored from (Restore), 0 if it never was. While AppliedIndex equals
// it, the store holds exactly that snapshot and nothing applied since, which
// may be past the index raft recorded for the snapshot (a checkpoint is sent
// as the leader's live state). It does not touch the disk.
func (db *DB) RestoredIndex() uint64 { return db.restored.Load() }

// view runs fn in a bbolt read transaction.
func (db *DB) view(fn func(*bolt.Tx) error) error {
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.bolt == nil {
		return ErrClosed
	}
	if db.broken.Load() {
		return db.failure()
	}
	return db.bolt.View(fn)
}

// viewApplied runs fn in a bbolt read transaction on committed state. When fn
// reports a miss (ErrNotFound, or retry) and Apply has left entries open, it
// runs fn again in the open write transaction, which holds every applied
// entry, holding the writer lock so that no Apply uses that transaction
// meanwhile. No commit is needed for the read: it would cost this reader a
// commit, and the fsync of the commit before it. If the open transaction was
// committed in between, fn runs once more on committed state.
func (db *DB) viewApplied(fn func(*bolt.Tx) (retry bool, err error)) error {
	stale := db.stale()
	var retry bool
	read := func(tx *bolt.Tx) error {
		var err error
		retry, err = fn(tx)
		return err
	}
	err := db.view(read)
	if !stale || !(retry || errors.Is(err, ErrNotFound)) {
		return err
	}
	inOpen := false
	err = db.commits.withWriter(func() error {
		if db.failed != nil {
			return db.failed
		}
		if db.wtx == nil {
			return nil // committed since the first read
		}
		inOpen = true
		return read(db.wtx)
	})
	if inOpen || err != nil {
		return err
	}
	return db.view(read)
}

func (db *DB) failure() error {
	db.wmu.Lock()
	defer db.wmu.Unlock()
	return db.failed
}

// ReleaseMemory drops the database's memory-mapped pages from the process's
// resident set. bbolt reads the file through a shared memory map, so every
// page Apply or a read has touched since the file was opened counts as the
// process's resident memory, though the kernel keeps it as page cache anyway:
// with a large store that is most of the RSS. After ReleaseMemory only the pages
// touched again are resident. It holds off Apply and reads for the duration of
// one madvise call.
func (db *DB) ReleaseMemory() error {
	db.mu.Lock() // no bbolt transaction runs, so the map cannot move
	defer db.mu.Unlock()
	if db.bolt == nil {
		return ErrClosed
	}
	// Only up to the high-water mark: bbolt maps every page below it, while the
	// file may extend past the map (it grows in AllocSize steps).
	var size int64
	if err := db.bolt.View(func(tx *bolt.Tx) error { size = tx.Size(); return nil }); err != nil {
		return fmt.Errorf("release memory of %s: %w", db.path, err)
	}
	if err := dropPages(db.bolt.Info().Data, size); err != nil {
		return fmt.Errorf("release memory of %s: madvise: %w", db.path, err)
	}
	return nil
}
