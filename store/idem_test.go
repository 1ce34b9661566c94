package store

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/txlog/txlog/txid"
	bolt "go.etcd.io/bbolt"
)

// idemHashes are the hash functions the index tests run with: the real one, and
// one under which every key collides with every other, so that every key but
// one per hash goes through the exact map and every hit must be checked.
var idemHashes = []struct {
	name string
	hash func(maphash.Seed, string) uint64
}{
	{"maphash", maphash.String},
	{"all collide", func(maphash.Seed, string) uint64 { return 42 }},
}

// withIdemHash makes the DBs opened from now until the test ends hash
// idempotency keys with h.
func withIdemHash(t testing.TB, h func(maphash.Seed, string) uint64) {
	t.Helper()
	old := idemHash
	idemHash = h
	t.Cleanup(func() { idemHash = old })
}

// forEachIdemHash runs f as a subtest under each of idemHashes.
func forEachIdemHash(t *testing.T, f func(t *testing.T)) {
	for _, h := range idemHashes {
		t.Run(h.name, func(t *testing.T) {
			withIdemHash(t, h.hash)
			f(t)
		})
	}
}

// byKey returns the txid TxByIdempotencyKey finds for each key, 0 for none,
// failing the test on any other error or on an outcome of another key.
func byKey(t *testing.T, db *DB, keys ...string) map[string]txid.ID {
	t.Helper()
	got := map[string]txid.ID{}
	for _, k := range keys {
		o, err := db.Reads().TxByIdempotencyKey(k)
		switch {
		case errors.Is(err, ErrNotFound):
			got[k] = 0
		case err != nil:
			t.Fatalf("TxByIdempotencyKey(%q) = %v", k, err)
		case o.IdempotencyKey != k:
			t.Fatalf("TxByIdempotencyKey(%q) = outcome of key %q", k, o.IdempotencyKey)
		default:
			got[k] = o.TxID
		}
	}
	return got
}

// wantByKey fails the test unless TxByIdempotencyKey finds want (0: nothing).
func wantByKey(t *testing.T, db *DB, want map[string]txid.ID) {
	t.Helper()
	if got := byKey(t, db, slices.Collect(maps.Keys(want))...); !reflect.DeepEqual(got, want) {
		t.Fatalf("TxByIdempotencyKey: got %v, want %v", got, want)
	}
}

// indexMaps returns copies of db's committed index.
func indexMaps(db *DB) (map[uint64]txid.ID, map[string]txid.ID) {
	db.mu.RLock()
	defer db.mu.RUnlock()
	db.idem.mu.RLock()
	defer db.idem.mu.RUnlock()
	return maps.Clone(db.idem.byHash), maps.Clone(db.idem.exact)
}

// TestIdemBatch runs the index's operations on colliding keys, through
// batches, without a database: records stands for the log records that keyOf
// reads.
func TestIdemBatch(t *testing.T) {
	withIdemHash(t, idemHashes[1].hash)
	x := newIdemIndex()
	records := map[txid.ID]string{}
	keyOf := func(id txid.ID) (string, bool, error) {
		k, ok := records[id]
		return k, ok, nil
	}
	insert := func(b *idemBatch, key string, id txid.ID) {
		t.Helper()
		records[id] = key
		if err := b.insert(key, id, keyOf); err != nil {
			t.Fatal(err)
		}
	}
	// want checks what lookups through c find: for each key its txid, or 0 for
	// nothing (not indexed, or a hit on another key's hash).
	want := func(what string, c interface {
		candidate(string) (txid.ID, bool)
	}, want map[string]txid.ID) {
		t.Helper()
		for key, wantID := range want {
			id, ok := c.candidate(key)
			if ok && records[id] != key {
				id = 0 // what readers do on a hit of another key
			}
			if id != wantID {
				t.Fatalf("%s: %q found %d, want %d", what, key, id, wantID)
			}
		}
	}

	b := x.batch()
	insert(b, "a", 1)
	insert(b, "b", 2) // a has the hash: b goes to exact
	want("batch", b, map[string]txid.ID{"a": 1, "b": 2, "c": 0})
	want("index before commit", x, map[string]txid.ID{"a": 0, "b": 0})
	x.commit(b)
	want("index", x, map[string]txid.ID{"a": 1, "b": 2, "c": 0})

	// remove takes a key only from the txid it names. (It is called with the
	// key of the txid's record, so a hash owned by that txid is the key's.)
	b = x.batch()
	b.remove("a", 2)
	b.remove("b", 1)
	b.remove("c", 3)
	want("wrong txids", b, map[string]txid.ID{"a": 1, "b": 2})

	// A batch that is dropped changes nothing; its reads see its own changes.
	b.remove("a", 1)
	want("removed in batch", b, map[string]txid.ID{"a": 0, "b": 2})
	insert(b, "c", 3) // the free hash
	insert(b, "a", 4) // c has the hash now
	b.remove("b", 2)
	insert(b, "b", 5)
	want("batch", b, map[string]txid.ID{"a": 4, "b": 5, "c": 3})
	want("index with a batch pending", x, map[string]txid.ID{"a": 1, "b": 2, "c": 0})

	// Committed, the same changes land.
	x.commit(b)
	want("index", x, map[string]txid.ID{"a": 4, "b": 5, "c": 3})
	if len(x.byHash) != 1 || len(x.exact) != 2 {
		t.Fatalf("index: %v %v, want c by its hash, a and b exact", x.byHash, x.exact)
	}

	// A key recorded again replaces itself wherever it is; the hash's owner
	// without a record (a stale entry) gives its place up.
	b = x.batch()
	insert(b, "a", 6)
	insert(b, "c", 7)
	delete(records, 7)
	insert(b, "d", 8)
	x.commit(b)
	want("index", x, map[string]txid.ID{"a": 6, "b": 5, "c": 0, "d": 8})
	if len(x.exact) != 2 || x.len() != 3 {
		t.Fatalf("index: %v %v, want d by its hash, a and b exact", x.byHash, x.exact)
	}
}

func TestIdemDedup(t *testing.T) {
	forEachIdemHash(t, func(t *testing.T) {
		tests := []struct {
			name    string
			batches [][]Entry
		}{
			{"across Apply calls", [][]Entry{
				{txEntry(1, 1, "k1", put("a", "1")), txEntry(2, 2, "k2", put("b", "1"))},
				{txEntry(3, 3, "k1", put("a", "1")), txEntry(4, 4, "k2", put("b", "1"))},
			}},
			{"within one batch", [][]Entry{
				{txEntry(1, 1, "k1", put("a", "1")), txEntry(2, 2, "k2", put("b", "1")),
					txEntry(3, 3, "k1", put("a", "1")), txEntry(4, 4, "k2", put("b", "1"))},
			}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				db := openTest(t)
				var res []Result
				for _, batch := range tt.batches {
					res = append(res, applyOK(t, db, batch...)...)
				}
				for i, orig := range []int{0, 1} {
					dup := res[2+i]
					if res[orig].Duplicate || !dup.Duplicate || !reflect.DeepEqual(dup.Outcome, res[orig].Outcome) {
						t.Fatalf("entries %d and %d: %+v, %+v; want the second a duplicate of the first", orig+1, 3+i, res[orig], dup)
					}
				}
				if a, b := mustGet(t, db, "a"), mustGet(t, db, "b"); a.Version != 1 || b.Version != 1 {
					t.Fatalf("versions of a and b = %d, %d; want 1: duplicates write nothing", a.Version, b.Version)
				}
				wantByKey(t, db, map[string]txid.ID{"k1": 1, "k2": 2, "k3": 0, "": 0})
				// The resubmissions' txids are aliases of the originals.
				for alias, orig := range map[txid.ID]txid.ID{3: 1, 4: 2} {
					if o, err := db.Reads().Tx(alias); err != nil || o.TxID != orig {
						t.Fatalf("Tx(%d) = %+v, %v; want the outcome of txid %d", alias, o, err, orig)
					}
				}
			})
		}
	})
}

// TestIdemCollision runs lookups, inserts, prunes and a rebuild with keys whose
// hashes collide.
func TestIdemCollision(t *testing.T) {
	withIdemHash(t, idemHashes[1].hash)
	path := filepath.Join(t.TempDir(), "state.db")
	db := openAt(t, path)
	hour := int64(time.Hour)
	w := time.Hour
	reopen := func() {
		t.Helper()
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		db = openAt(t, path)
	}

	// Insert: k1 takes the hash, k2 and k3 go to exact.
	applyOK(t, db,
		txAt(1, t0, w, 1, "k1", put("a", "1")),
		txAt(2, t0+hour/2, w, 2, "k2", put("a", "2")),
		txAt(3, t0+hour/2, w, 3, "k3", put("a", "3")),
	)
	byHash, exact := indexMaps(db)
	if len(byHash) != 1 || len(exact) != 2 {
		t.Fatalf("index: %d hashes, %d exact keys; want 1 and 2", len(byHash), len(exact))
	}
	// Lookup: k4 hits k1's hash and must not get k1's outcome.
	want := map[string]txid.ID{"k1": 1, "k2": 2, "k3": 3, "k4": 0}
	wantByKey(t, db, want)
	res := applyOK(t, db,
		txAt(4, t0+hour/2, w, 11, "k1", put("a", "1")),
		txAt(5, t0+hour/2, w, 12, "k2", put("a", "2")),
		txAt(6, t0+hour/2, w, 14, "k4", put("b", "1")),
	)
	if !res[0].Duplicate || res[0].Outcome.TxID != 1 || !res[1].Duplicate || res[1].Outcome.TxID != 2 || res[2].Duplicate {
		t.Fatalf("resubmissions of k1, k2 and a new k4 = %+v", res)
	}
	want["k4"] = 14
	wantByKey(t, db, want)

	// Rebuild.
	reopen()
	wantByKey(t, db, want)

	// Prune: k1, the hash's owner, goes; the exact keys stay.
	applyOK(t, db, txAt(7, t0+hour+1, w, 15, "", put("c", "1")))
	want["k1"] = 0
	wantByKey(t, db, want)
	if res := applyOne(t, db, txAt(8, t0+hour+1, w, 16, "k2", put("a", "2"))); !res.Duplicate {
		t.Fatalf("k2 after k1 is pruned = %+v, want a duplicate", res)
	}
	// k5 takes the free hash; k1 comes back under a new txid.
	applyOK(t, db,
		txAt(9, t0+hour+1, w, 17, "k5", put("c", "3")),
		txAt(10, t0+hour+1, w, 18, "k1", put("c", "4")),
	)
	want["k5"], want["k1"] = 17, 18
	wantByKey(t, db, want)
	reopen()
	wantByKey(t, db, want)

	// Prune the exact keys k2, k3 and k4.
	applyOK(t, db, txAt(11, t0+3*hour/2+1, w, 19, "", put("c", "5")))
	want["k2"], want["k3"], want["k4"] = 0, 0, 0
	wantByKey(t, db, want)
	if n := db.idem.len(); n != 2 {
		t.Fatalf("index of %d keys after the prune, want 2 (k1 and k5)", n)
	}
	reopen()
	wantByKey(t, db, want)
}

// TestIdemPruneInBatch prunes, in the batch that recorded it, a key whose
// leader time then jumps past the window, and records the key again.
func TestIdemPruneInBatch(t *testing.T) {
	forEachIdemHash(t, func(t *testing.T) {
		hour := int64(time.Hour)
		tests := []struct {
			name  string
			batch []Entry
			want  map[string]txid.ID
		}{
			{"pruned", []Entry{
				txAt(1, t0, time.Hour, 1, "k", put("a", "1")),
				txAt(2, t0, time.Hour, 2, "j", put("a", "1")),
				txAt(3, t0+2*hour, time.Hour, 3, "", put("a", "2")),
			}, map[string]txid.ID{"k": 0, "j": 0}},
			{"recorded again", []Entry{
				txAt(1, t0, time.Hour, 1, "k", put("a", "1")),
				txAt(2, t0, time.Hour, 2, "j", put("a", "1")),
				txAt(3, t0+2*hour, time.Hour, 3, "k", put("a", "2")),
				txAt(4, t0+2*hour, time.Hour, 4, "k", put("a", "2")),
			}, map[string]txid.ID{"k": 3, "j": 0}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "state.db")
				db := openAt(t, path)
				res := applyOK(t, db, tt.batch...)
				if len(res) == 4 && (res[2].Duplicate || !res[3].Duplicate || res[3].Outcome.TxID != 3) {
					t.Fatalf("k after its prune, then again = %+v, %+v; want new, then its duplicate", res[2], res[3])
				}
				wantByKey(t, db, tt.want)
				if err := db.Close(); err != nil {
					t.Fatal(err)
				}
				wantByKey(t, openAt(t, path), tt.want)
			})
		}
	})
}

// idemWorkload returns batches of transactions with idempotency keys k0..k39:
// new keys, resubmissions under new txids and after their txid, rejected
// transactions, keys without a key, and leader time that prunes old keys so
// that some are recorded again.
func idemWorkload(seed uint64) [][]Entry {
	rnd := rand.New(rand.NewPCG(seed, 1))
	var batches [][]Entry
	var index, id uint64
	at := t0
	for range 30 {
		batch := make([]Entry, 1+rnd.IntN(8))
		for i := range batch {
			index++
			id++
			at += int64(rnd.IntN(10)) * int64(time.Minute)
			key := fmt.Sprintf("k%d", rnd.IntN(40))
			if rnd.IntN(8) == 0 {
				key = ""
			}
			tid := txid.ID(id)
			if rnd.IntN(8) == 0 && id > 1 {
				tid = txid.ID(1 + rnd.Uint64N(id-1)) // a txid seen before
			}
			op := put(fmt.Sprintf("x%d", rnd.IntN(5)), "1")
			if rnd.IntN(4) == 0 {
				op = ifv(op, 0)
			}
			batch[i] = txAt(index, at, time.Hour, tid, key, op)
		}
		batches = append(batches, batch)
	}
	return batches
}

var workloadKeys = func() []string {
	keys := []string{"", "k40", "other"}
	for i := range 40 {
		keys = append(keys, fmt.Sprintf("k%d", i))
	}
	return keys
}()

// TestIdemRebuild checks that the index rebuilt at Open answers as the one
// Apply built, after each batch of a workload, and that with colliding hashes
// the answers are those of the real hash.
func TestIdemRebuild(t *testing.T) {
	for seed := range uint64(5) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			var answers []map[string]txid.ID // per batch, under the first hash
			for hi, h := range idemHashes {
				withIdemHash(t, h.hash)
				path := filepath.Join(t.TempDir(), "state.db")
				db := openAt(t, path)
				for i, batch := range idemWorkload(seed) {
					applyOK(t, db, batch...)
					got := byKey(t, db, workloadKeys...)
					if hi == 0 {
						answers = append(answers, got)
					} else if !reflect.DeepEqual(got, answers[i]) {
						t.Fatalf("%s, batch %d: %v, want %v as with %s", h.name, i, got, answers[i], idemHashes[0].name)
					}
					if err := db.Close(); err != nil {
						t.Fatal(err)
					}
					db = openAt(t, path)
					if again := byKey(t, db, workloadKeys...); !reflect.DeepEqual(again, got) {
						t.Fatalf("%s, batch %d: after reopen %v, want %v", h.name, i, again, got)
					}
				}
				found := 0
				for _, id := range answers[len(answers)-1] {
					if id != 0 {
						found++
					}
				}
				if found < 5 {
					t.Fatalf("only %d keys found at the end: the workload tests too little", found)
				}
			}
		})
	}
}

// TestIdemRestore checks that Restore replaces the index with the snapshot's.
func TestIdemRestore(t *testing.T) {
	forEachIdemHash(t, func(t *testing.T) {
		batches := idemWorkload(7)
		a := openTest(t)
		for _, batch := range batches[:20] {
			applyOK(t, a, batch...)
		}
		var snap bytes.Buffer
		writeSnapshot(t, a, &snap)
		want := byKey(t, a, workloadKeys...)

		// B knows keys of its own, some also known to A under other txids.
		b := openTest(t)
		applyOK(t, b,
			txEntry(1, 1000, "k1", put("a", "1")),
			txEntry(2, 1001, "k2", put("a", "1")),
			txEntry(3, 1002, "other", put("a", "1")),
		)
		if err := b.Restore(&snap); err != nil {
			t.Fatalf("Restore() = %v", err)
		}
		if got := byKey(t, b, workloadKeys...); !reflect.DeepEqual(got, want) {
			t.Fatalf("after Restore: %v, want %v", got, want)
		}
		for _, batch := range batches[20:] {
			ra, rb := applyOK(t, a, batch...), applyOK(t, b, batch...)
			if !reflect.DeepEqual(ra, rb) {
				t.Fatalf("after Restore, B's results %+v differ from A's %+v", rb, ra)
			}
		}
		if ga, gb := byKey(t, a, workloadKeys...), byKey(t, b, workloadKeys...); !reflect.DeepEqual(ga, gb) {
			t.Fatalf("after the same batches, B %v, A %v", gb, ga)
		}
	})
}

// corruptTxid plants a txs record that lookupTx rejects, so that an entry with
// txid id fails Apply: the only way to fail an Apply without a broken disk.
func corruptTxid(t *testing.T, db *DB, id txid.ID) {
	t.Helper()
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketTxs).Put(txidKey(id), []byte{1, 2, 3})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestIdemFailedApply checks that an Apply that fails leaves the index as it
// was: neither the keys it recorded nor those it pruned.
func TestIdemFailedApply(t *testing.T) {
	forEachIdemHash(t, func(t *testing.T) {
		db := openTest(t)
		hour := int64(time.Hour)
		applyOK(t, db,
			txAt(1, t0, time.Hour, 1, "old", put("a", "1")),
			txAt(2, t0+hour, time.Hour, 2, "kept", put("a", "2")),
		)
		corruptTxid(t, db, 999)
		byHash, exact := indexMaps(db)

		_, err := db.Apply([]Entry{
			txAt(3, t0+2*hour, time.Hour, 3, "new", put("b", "1")), // prunes "old"
			txAt(4, t0+2*hour, time.Hour, 4, "kept", put("a", "2")),
			txAt(5, t0+2*hour, time.Hour, 5, "old", put("b", "1")),
			txAt(6, t0+2*hour, time.Hour, 999, "bad", put("b", "1")),
		})
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Apply() = %v, want ErrCorrupt", err)
		}
		if h, e := indexMaps(db); !reflect.DeepEqual(h, byHash) || !reflect.DeepEqual(e, exact) {
			t.Fatalf("failed Apply changed the index: %v %v, was %v %v", h, e, byHash, exact)
		}
		wantByKey(t, db, map[string]txid.ID{"old": 1, "kept": 2, "new": 0, "bad": 0})

		// Applied again without the failing entry, the batch does what it would have.
		res := applyOK(t, db,
			txAt(3, t0+2*hour, time.Hour, 3, "new", put("b", "1")),
			txAt(4, t0+2*hour, time.Hour, 4, "kept", put("a", "2")),
			txAt(5, t0+2*hour, time.Hour, 5, "old", put("b", "1")),
		)
		if res[0].Duplicate || !res[1].Duplicate || res[2].Duplicate {
			t.Fatalf("Results = %+v, want new, duplicate, new", res)
		}
		wantByKey(t, db, map[string]txid.ID{"old": 5, "kept": 2, "new": 3, "bad": 0})
	})
}

// TestIdemUncommittedInvisible reads, while Apply is in the middle of a batch,
// the keys the batch has pruned and recorded: readers must see the state before
// the batch. The reads run from the hash function, called by the batch's last
// entry.
func TestIdemUncommittedInvisible(t *testing.T) {
	for _, h := range idemHashes {
		t.Run(h.name, func(t *testing.T) {
			var db *DB
			var during map[string]txid.ID
			withIdemHash(t, func(seed maphash.Seed, key string) uint64 {
				if key == "probe" && during == nil {
					during = map[string]txid.ID{} // no probe from the probe's reads
					during = byKey(t, db, "old", "new")
				}
				return h.hash(seed, key)
			})
			db = openTest(t)
			hour := int64(time.Hour)
			applyOne(t, db, txAt(1, t0, time.Hour, 1, "old", put("a", "1")))
			applyOK(t, db,
				txAt(2, t0+2*hour, time.Hour, 2, "new", put("a", "2")), // prunes "old"
				txAt(3, t0+2*hour, time.Hour, 3, "probe", put("a", "3")),
			)
			if want := map[string]txid.ID{"old": 1, "new": 0}; !reflect.DeepEqual(during, want) {
				t.Fatalf("during Apply: %v, want %v", during, want)
			}
			wantByKey(t, db, map[string]txid.ID{"old": 0, "new": 2, "probe": 3})
		})
	}
}

// TestIdemReadsDuringApply runs readers while batches apply, some of which
// fail: a reader finds every key of a batch that Apply has returned, finds each
// key only with its own txid, and never finds a key of a failed batch. Run it
// with -race.
func TestIdemReadsDuringApply(t *testing.T) {
	forEachIdemHash(t, func(t *testing.T) {
		db := openTest(t)
		corruptTxid(t, db, 1<<40)
		const batches, perBatch = 60, 8
		key := func(i uint64) string { return fmt.Sprintf("key-%d", i) }
		var applied atomic.Uint64 // keys key-1..key-applied are committed
		stop := readConcurrently(t, 4, 2, "read during Applies", func(_ int, rnd *rand.Rand) error {
			n := applied.Load()
			i := 1 + rnd.Uint64N(batches*perBatch)
			k := key(i)
			if rnd.IntN(4) == 0 {
				k = "failed-" + k
			}
			o, err := db.Reads().TxByIdempotencyKey(k)
			switch {
			case errors.Is(err, ErrNotFound):
				if i <= n && k == key(i) {
					return fmt.Errorf("TxByIdempotencyKey(%q) = not found, after its Apply", k)
				}
				return nil
			case err != nil:
				return err
			case k != key(i):
				return fmt.Errorf("TxByIdempotencyKey(%q) = %+v: a key of a failed Apply", k, o)
			case o.TxID != txid.ID(i) || o.IdempotencyKey != k:
				return fmt.Errorf("TxByIdempotencyKey(%q) = %+v, want txid %d", k, o, i)
			}
			return nil
		})
		var index uint64
		for b := range uint64(batches) {
			entries := make([]Entry, perBatch)
			for j := range entries {
				i := b*perBatch + uint64(j) + 1
				index++
				entries[j] = txEntry(index, txid.ID(i), key(i), put("a", "1"))
			}
			if b%3 == 0 {
				// A batch that fails: its keys and its txids never show.
				bad := make([]Entry, perBatch+1)
				for j := range perBatch {
					i := b*perBatch + uint64(j) + 1
					bad[j] = txEntry(index+1+uint64(j), txid.ID(i+1<<30), "failed-"+key(i), put("b", "1"))
				}
				bad[perBatch] = txEntry(index+perBatch+1, 1<<40, "", put("b", "1"))
				if _, err := db.Apply(bad); !errors.Is(err, ErrCorrupt) {
					t.Fatalf("Apply(failing batch) = %v, want ErrCorrupt", err)
				}
			}
			applyOK(t, db, entries...)
			applied.Store((b + 1) * perBatch)
		}
		stop()
	})
}

// TestOpenRefusesSchema1 checks that a database of schema 1, which kept the
// idempotency index in an idem bucket, is refused by Open and by Restore.
func TestOpenRefusesSchema1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	data := editBolt(t, path, func(tx *bolt.Tx) error {
		for _, name := range []string{"meta", "log", "txs", "idem", "dedup_time", "kv", "nodes"} {
			if _, err := tx.CreateBucket([]byte(name)); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketMeta).Put(metaSchema, []byte{1})
	})

	wantErr := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "schema version 01, want 2 to 4") {
			t.Fatalf("%s of a schema 1 database = %v, want ErrCorrupt naming the schema", what, err)
		}
	}
	_, err := Open(path, Config{})
	wantErr("Open", err)

	db := openTest(t)
	applyOne(t, db, txEntry(1, 1, "k", put("a", "1")))
	wantErr("Restore", db.Restore(bytes.NewReader(data)))
	wantByKey(t, db, map[string]txid.ID{"k": 1})
}

// BenchmarkIdemIndexMemory reports the heap the index takes per key, for
// 1,000,000 keys (a day of transactions at about 12/s), all different.
func BenchmarkIdemIndexMemory(b *testing.B) {
	const n = 1_000_000
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		x := newIdemIndex()
		batch := &idemBatch{idx: x}
		noRecord := func(txid.ID) (string, bool, error) { return "", false, nil }
		for i := range uint64(n) {
			if err := batch.insert(fmt.Sprintf("%032x", i*0x9e3779b97f4a7c15), txid.ID(i+1), noRecord); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		if x.len() != n {
			b.Fatalf("index of %d keys, want %d", x.len(), n)
		}
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "heap-bytes/key")
		runtime.KeepAlive(x)
	}
}

// TestIdemReused: an idempotency key resubmitted with another transaction is
// refused (Result.Reused, naming the original), writes nothing, and the
// resubmission's txid stays unknown; the same transaction under another txid
// is a duplicate. It holds within a batch, across Apply calls and after a
// reopen rebuilt the index, under both hash functions.
func TestIdemReused(t *testing.T) {
	orig := []Op{put("a", "1"), ifv(put("b", "2"), 0)}
	others := []struct {
		name string
		ops  []Op
	}{
		{"other value", []Op{put("a", "2"), ifv(put("b", "2"), 0)}},
		{"value with a space", []Op{put("a", " 1"), ifv(put("b", "2"), 0)}},
		{"other key", []Op{put("c", "1"), ifv(put("b", "2"), 0)}},
		{"no if_version", []Op{put("a", "1"), put("b", "2")}},
		{"other if_version", []Op{put("a", "1"), ifv(put("b", "2"), 1)}},
		{"extra op", []Op{put("a", "1"), ifv(put("b", "2"), 0), del("c")}},
		{"fewer ops", []Op{put("a", "1")}},
		{"ops swapped", []Op{ifv(put("b", "2"), 0), put("a", "1")}},
		{"delete for put", []Op{del("a"), ifv(put("b", "2"), 0)}},
	}
	forEachIdemHash(t, func(t *testing.T) {
		for _, tt := range others {
			for _, batched := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/batched=%v", tt.name, batched), func(t *testing.T) {
					path := filepath.Join(t.TempDir(), "state.db")
					db := openAt(t, path)
					first := txEntry(1, 1, "k", orig...)
					other := txEntry(2, 2, "k", tt.ops...)
					same := txEntry(3, 3, "k", orig...)
					var res []Result
					if batched {
						res = applyOK(t, db, first, other, same)
					} else {
						res = append(applyOK(t, db, first), applyOne(t, db, other), applyOne(t, db, same))
					}
					if res[0].Reused || res[0].Duplicate || res[0].Outcome.Status != StatusCommitted {
						t.Fatalf("original = %+v, want a new committed outcome", res[0])
					}
					if r := res[1]; !r.Reused || r.Duplicate || r.Err != nil || r.Kind != KindTx || !reflect.DeepEqual(r.Outcome, res[0].Outcome) {
						t.Fatalf("other transaction under the key = %+v, want Reused with the original outcome %+v", r, res[0].Outcome)
					}
					if r := res[2]; r.Reused || !r.Duplicate || !reflect.DeepEqual(r.Outcome, res[0].Outcome) {
						t.Fatalf("same transaction under the key = %+v, want a duplicate", r)
					}
					// Nothing of the refused entry is recorded: compared with a
					// store that never saw it, only the applied index differs.
					ref := openTest(t)
					applyOK(t, ref, txEntry(1, 1, "k", orig...), txEntry(3, 3, "k", orig...))
					got, want := dump(t, db), dump(t, ref)
					delete(got, "meta")
					delete(want, "meta")
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("state after the refused entry:\n got %v\nwant %v", got, want)
					}
					for round := range 2 {
						if _, err := db.Reads().Tx(2); !errors.Is(err, ErrNotFound) {
							t.Fatalf("round %d: Tx(2) of the refused entry = %v, want ErrNotFound", round, err)
						}
						payload := EncodeTx(Tx{ID: 99, IdempotencyKey: "k", Ops: tt.ops})
						_, err := db.Reads().TxByIdempotencyKeyFor("k", payload)
						if e, ok := errors.AsType[*KeyReusedError](err); !ok || e.TxID != 1 || e.Key != "k" || !errors.Is(err, ErrKeyReused) {
							t.Fatalf("round %d: TxByIdempotencyKeyFor(k, other) = %v, want a KeyReusedError naming txid 1", round, err)
						}
						for _, p := range [][]byte{nil, EncodeTx(Tx{ID: 99, IdempotencyKey: "k", Ops: orig})} {
							if o, err := db.Reads().TxByIdempotencyKeyFor("k", p); err != nil || o.TxID != 1 {
								t.Fatalf("round %d: TxByIdempotencyKeyFor(k, %x) = %+v, %v; want txid 1", round, p, o, err)
							}
						}
						// Applied again after a reopen, the refusal is the same.
						if round == 0 {
							if err := db.Close(); err != nil {
								t.Fatal(err)
							}
							db = openAt(t, path)
							if r := applyOne(t, db, txEntry(4, 2, "k", tt.ops...)); !r.Reused || r.Outcome.TxID != 1 {
								t.Fatalf("after reopen: %+v, want Reused naming txid 1", r)
							}
						}
					}
				})
			}
		}
	})
}
