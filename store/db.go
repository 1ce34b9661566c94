package store

// This file holds the signatures of DB that other packages build against; the
// store's owner replaces the bodies.

import (
	"io"
	"log/slog"

	"github.com/txlog/txlog/txid"
)

// Config holds the settings of a DB.
type Config struct {
	// Logger receives the store's logs; nil discards them.
	Logger *slog.Logger
}

// DB is the bbolt state machine.
type DB struct{}

// Open opens or creates the state machine database at path.
func Open(path string, cfg Config) (*DB, error) { panic("TODO") }

// Close closes the database. It is safe to call twice.
func (db *DB) Close() error { panic("TODO") }

// Apply applies committed entries in order, all in one bbolt transaction, and
// returns one Result per entry. Entries at or below AppliedIndex are skipped. A
// non-nil error means the database could not be written: the caller must stop
// the node rather than diverge. Called from one goroutine at a time.
func (db *DB) Apply(entries []Entry) ([]Result, error) { panic("TODO") }

// AppliedIndex returns the index of the last applied entry.
func (db *DB) AppliedIndex() uint64 { panic("TODO") }

// Tx returns the outcome of a transaction by ID, or ErrNotFound.
func (db *DB) Tx(id txid.ID) (Outcome, error) { panic("TODO") }

// TxByIdempotencyKey returns the outcome of a transaction by idempotency key, or ErrNotFound.
func (db *DB) TxByIdempotencyKey(key string) (Outcome, error) { panic("TODO") }

// Get returns a key's current state, or ErrNotFound.
func (db *DB) Get(key string) (KV, error) { panic("TODO") }

// Log returns up to limit committed transactions with index >= from, in index
// order, and the index to continue from.
func (db *DB) Log(from uint64, limit int) ([]LogRecord, uint64, error) { panic("TODO") }

// Nodes returns the registered nodes, ordered by ID.
func (db *DB) Nodes() ([]NodeInfo, error) { panic("TODO") }

// Snapshot starts a consistent snapshot of the database.
func (db *DB) Snapshot() (*Snapshot, error) { panic("TODO") }

// Restore replaces the database with a snapshot stream.
func (db *DB) Restore(r io.Reader) error { panic("TODO") }

// Snapshot is a consistent, point-in-time view of a DB being written out.
type Snapshot struct{}

// WriteTo writes the snapshot stream to w.
func (s *Snapshot) WriteTo(w io.Writer) (int64, error) { panic("TODO") }

// Release frees the snapshot. It is safe to call twice.
func (s *Snapshot) Release() { panic("TODO") }
