package store

import (
	"encoding/hex"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/txlog/txlog/txid"
	bolt "go.etcd.io/bbolt"
)

// t0 is the leader time of test entries unless a test says otherwise.
var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano()

// openTest opens a DB in a new temporary directory, closed at cleanup.
func openTest(t testing.TB) *DB {
	t.Helper()
	return openAt(t, filepath.Join(t.TempDir(), "state.db"))
}

// openAt opens the DB at path, closed at cleanup.
func openAt(t testing.TB, path string) *DB {
	t.Helper()
	db, err := Open(path, Config{NoSync: true})
	if err != nil {
		t.Fatalf("Open(%s) = %v", path, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func put(key, value string) Op { return Op{Kind: OpPut, Key: key, Value: []byte(value)} }

func del(key string) Op { return Op{Kind: OpDelete, Key: key} }

// ifv returns op with the precondition IfVersion v.
func ifv(op Op, v uint64) Op {
	op.HasIfVersion, op.IfVersion = true, v
	return op
}

// entryAt encodes a command entry at index (term 1).
func entryAt(index uint64, kind CommandKind, at int64, window time.Duration, payload []byte) Entry {
	c := Command{Kind: kind, Time: at, DedupWindow: window, Payload: payload}
	return Entry{Index: index, Term: 1, Data: EncodeCommand(c)}
}

// txEntry is a tx entry at index with time t0 and the default window.
func txEntry(index uint64, id txid.ID, idem string, ops ...Op) Entry {
	return entryAt(index, KindTx, t0, 0, EncodeTx(Tx{ID: id, IdempotencyKey: idem, Ops: ops}))
}

// applyOK applies entries and fails the test on an error.
func applyOK(t testing.TB, db *DB, entries ...Entry) []Result {
	t.Helper()
	res, err := db.Apply(entries)
	if err != nil {
		t.Fatalf("Apply() = %v", err)
	}
	if len(res) != len(entries) {
		t.Fatalf("Apply() returned %d results for %d entries", len(res), len(entries))
	}
	return res
}

// applyOne applies one entry and returns its Result.
func applyOne(t testing.TB, db *DB, e Entry) Result {
	t.Helper()
	return applyOK(t, db, e)[0]
}

// dump returns every key and value of every bucket, hex-encoded: two databases
// with equal dumps are in the same state. The kv bucket is dumped with the kv
// overlay on top and kv_applied is left out, so that where a key's state is
// kept (overlay or bucket) does not count.
func dump(t testing.TB, db *DB) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	err := db.view(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			m := map[string]string{}
			out[string(name)] = m
			return b.ForEach(func(k, v []byte) error {
				m[hex.EncodeToString(k)] = hex.EncodeToString(v)
				return nil
			})
		})
	})
	if err != nil {
		t.Fatalf("dump: %v", err)
	}
	delete(out["meta"], hex.EncodeToString(metaKVApplied))
	delete(out["meta"], hex.EncodeToString(metaRestored)) // this file's history, not state
	db.mu.RLock()
	defer db.mu.RUnlock()
	db.kv.mu.RLock()
	defer db.kv.mu.RUnlock()
	for k, s := range db.kv.keys {
		if s.version == 0 {
			delete(out["kv"], hex.EncodeToString([]byte(k)))
			continue
		}
		out["kv"][hex.EncodeToString([]byte(k))] = hex.EncodeToString(encodeKV(s.version, s.modIndex))
	}
	return out
}

// mustGet returns a key's state, failing the test if it is not there.
func mustGet(t testing.TB, db *DB, key string) KV {
	t.Helper()
	kv, err := db.Reads().Get(key)
	if err != nil {
		t.Fatalf("Get(%q) = %v", key, err)
	}
	return kv
}

// editBolt opens the bbolt file at path (created if missing) outside the
// store, runs fn in one write transaction, closes the file and returns its
// bytes.
func editBolt(t testing.TB, path string, fn func(*bolt.Tx) error) []byte {
	t.Helper()
	b, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = b.Update(fn)
	if cerr := b.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// readConcurrently runs read in n goroutines, each again and again with its own
// random source (seeded with its number r and seed), until stop is called. A
// goroutine ends at its first error; stop waits for all of them and fails t
// with the first error, prefixed by what.
func readConcurrently(t testing.TB, n int, seed uint64, what string, read func(r int, rnd *rand.Rand) error) (stop func()) {
	done := make(chan struct{})
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(r), seed))
			for {
				select {
				case <-done:
					return
				default:
				}
				if err := read(r, rnd); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	return func() {
		t.Helper()
		close(done)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("%s: %v", what, err)
		}
	}
}
