package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/txlog/txlog/txid"
)

// TestDeferredReads checks that with CommitInterval the read methods see every
// applied entry while the file does not hold it yet: a read which misses in
// committed state reads the open transaction, without committing it.
func TestDeferredReads(t *testing.T) {
	db := openCfg(t, filepath.Join(t.TempDir(), "state.db"), Config{NoSync: true, CommitInterval: time.Hour})
	defer db.Close()
	applyOK(t, db, txEntry(1, 1, "a", put("x", "1")))
	applyOK(t, db, txEntry(2, 2, "b", put("y", "2")), txEntry(3, 3, "", put("x", "3")))
	if !db.stale() || db.committed.Load() != 0 || db.AppliedIndex() != 3 {
		t.Fatalf("committed %d, applied %d: want 0 and 3, entries left open", db.committed.Load(), db.AppliedIndex())
	}
	if st := openCfg(t, crashCopy(t, db), Config{NoSync: true}); st.AppliedIndex() != 0 {
		t.Fatalf("a copy of the file has applied index %d, want 0: nothing committed yet", st.AppliedIndex())
	} else {
		st.Close()
	}

	// Get reads the overlay: no commit needed.
	if kv := mustGet(t, db, "x"); kv.Version != 2 || string(kv.Value) != "3" {
		t.Fatalf("Get(x) = %+v, want version 2, value 3", kv)
	}
	if !db.stale() {
		t.Fatal("Get committed the open entries; it needs no commit")
	}
	// The idempotency index is in memory: a key it does not have needs no commit.
	if _, err := db.Reads().TxByIdempotencyKey("nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("TxByIdempotencyKey(nope) = %v, want ErrNotFound", err)
	}
	if !db.stale() {
		t.Fatal("a key the idempotency index lacks committed the open entries")
	}
	// A txid committed state does not have: found in the open transaction.
	o, err := db.Reads().TxByIdempotencyKey("b")
	if err != nil || o.TxID != 2 || o.Index != 2 {
		t.Fatalf("TxByIdempotencyKey(b) = %+v, %v; want txid 2 at index 2", o, err)
	}
	if o, err := db.Reads().Tx(3); err != nil || o.Index != 3 || o.Versions["x"] != 2 {
		t.Fatalf("Tx(3) = %+v, %v; want x at version 2, index 3", o, err)
	}
	if !db.stale() || db.committed.Load() != 0 {
		t.Fatalf("after reads that missed in committed state: committed %d, want 0 (no commit)", db.committed.Load())
	}

	// Log reads to the end, through the open transaction when committed
	// state comes up short.
	applyOK(t, db, txEntry(5, 5, "", put("z", "5")))
	recs, next, err := db.Reads().Log(1, 10)
	if err != nil || len(recs) != 4 || next != 6 {
		t.Fatalf("Log(1, 10) = %d records, next %d, %v; want 4, next 6", len(recs), next, err)
	}
	if err := db.Sync(); err != nil {
		t.Fatal(err)
	}
	// Committed state and the open transaction: each read sees both.
	applyOK(t, db, txEntry(6, 6, "", put("z", "6")))
	if recs, next, err := db.Reads().Log(2, 10); err != nil || len(recs) != 4 || next != 7 || recs[3].Index != 6 {
		t.Fatalf("Log(2, 10) = %+v, next %d, %v; want indexes 2, 3, 5, 6", recs, next, err)
	}
	if o, err := db.Reads().Tx(6); err != nil || o.Index != 6 {
		t.Fatalf("Tx(6) = %+v, %v", o, err)
	}
	if o, err := db.Reads().Tx(1); err != nil || o.Index != 1 {
		t.Fatalf("Tx(1) = %+v, %v", o, err)
	}
	if _, err := db.Reads().Tx(7); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Tx(7) = %v, want ErrNotFound", err)
	}
	if !db.stale() || db.committed.Load() != 5 {
		t.Fatalf("committed %d, want 5 (the Sync's) and entry 6 still open", db.committed.Load())
	}
}

// TestDeferredCommits checks when an open transaction is committed: by the
// idle timer, at the entry limit, when a node registers, and by Sync, Snapshot
// and Close.
func TestDeferredCommits(t *testing.T) {
	t.Run("timer", func(t *testing.T) {
		db := openCfg(t, filepath.Join(t.TempDir(), "state.db"), Config{NoSync: true, CommitInterval: 20 * time.Millisecond})
		defer db.Close()
		applyOK(t, db, txEntry(1, 1, "", put("x", "1")))
		deadline := time.Now().Add(5 * time.Second)
		for db.stale() {
			if time.Now().After(deadline) {
				t.Fatal("the open entry was not committed within 5 s of a 20 ms interval")
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	t.Run("limit", func(t *testing.T) {
		db := openCfg(t, filepath.Join(t.TempDir(), "state.db"), Config{NoSync: true, CommitInterval: time.Hour})
		defer db.Close()
		var index uint64
		for db.committed.Load() == 0 {
			if index > 2*maxOpenEntries {
				t.Fatalf("%d entries applied and none committed; the limit is %d", index, maxOpenEntries)
			}
			batch := make([]Entry, 1000)
			for i := range batch {
				index++
				batch[i] = txEntry(index, txid.ID(index), "", put("k", "1"))
			}
			applyOK(t, db, batch...)
		}
		if c := db.committed.Load(); c < maxOpenEntries || c > maxOpenEntries+1000 {
			t.Fatalf("first commit at index %d, want at the limit of %d entries", c, maxOpenEntries)
		}
	})
	t.Run("node", func(t *testing.T) {
		db := openCfg(t, filepath.Join(t.TempDir(), "state.db"), Config{NoSync: true, CommitInterval: time.Hour})
		defer db.Close()
		applyOK(t, db, txEntry(1, 1, "", put("x", "1")))
		applyOK(t, db, entryAt(2, KindRegisterNode, 1, 0, EncodeNode(NodeInfo{ID: "n1", HTTPAddr: "127.0.0.1:1"})))
		if db.stale() {
			t.Fatal("a node registration left its entry uncommitted; Nodes reads committed state")
		}
		if nodes, err := db.Reads().Nodes(); err != nil || len(nodes) != 1 {
			t.Fatalf("Nodes() = %v, %v", nodes, err)
		}
	})
	for _, how := range []string{"sync", "snapshot", "close"} {
		t.Run(how, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.db")
			db := openCfg(t, path, Config{NoSync: true, CommitInterval: time.Hour})
			applyOK(t, db, txEntry(1, 1, "", put("x", "1")))
			switch how {
			case "sync":
				if err := db.Sync(); err != nil {
					t.Fatal(err)
				}
			case "snapshot":
				s, err := db.Snapshot()
				if err != nil {
					t.Fatal(err)
				}
				if s.AppliedIndex() != 1 {
					t.Fatalf("snapshot at index %d, want 1", s.AppliedIndex())
				}
				s.Release()
			case "close":
				if err := db.Close(); err != nil {
					t.Fatal(err)
				}
				db = openCfg(t, path, Config{NoSync: true})
			}
			defer db.Close()
			if st := openCfg(t, crashCopy(t, db), Config{NoSync: true}); st.AppliedIndex() != 1 {
				t.Fatalf("after %s the file has applied index %d, want 1", how, st.AppliedIndex())
			} else {
				st.Close()
			}
		})
	}
}

// TestDeferredFailure checks that an Apply that fails while earlier entries
// are uncommitted breaks the database: their Results are out and the rollback
// took them, so nothing may be applied or read after it.
func TestDeferredFailure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db := openCfg(t, path, Config{NoSync: true, CommitInterval: time.Hour})
	corruptTxid(t, db, 999)
	applyOK(t, db, txEntry(1, 1, "", put("x", "1")))
	_, err := db.Apply([]Entry{txEntry(2, 999, "", put("y", "1"))})
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Apply(bad txid) = %v, want ErrCorrupt", err)
	}
	if _, err := db.Apply([]Entry{txEntry(3, 3, "", put("z", "1"))}); err == nil {
		t.Fatal("Apply after a rolled back open transaction succeeded")
	}
	if _, err := db.Reads().Get("x"); err == nil {
		t.Fatal("Get after a rolled back open transaction succeeded")
	}
	if _, err := db.Reads().Tx(1); err == nil {
		t.Fatal("Tx after a rolled back open transaction succeeded")
	}
	if _, err := db.Reads().TxByIdempotencyKey("unknown"); err == nil || errors.Is(err, ErrNotFound) {
		t.Fatalf("TxByIdempotencyKey(unknown) after a rolled back open transaction = %v, want the failure", err)
	}
	if err := db.Close(); err == nil {
		t.Fatal("Close of a broken database reported no error")
	}
	// The file holds what was committed: entry 1 is applied again from the log.
	db = openCfg(t, path, Config{NoSync: true})
	defer db.Close()
	if db.AppliedIndex() != 0 {
		t.Fatalf("reopened at applied index %d, want 0", db.AppliedIndex())
	}
}

// TestDeferredReadsDuringApply reads transactions and the log's end from
// several goroutines while Applies leave their transaction open and commit it
// now and then: every entry applied before a read starts must be found, with
// its index, whether it is committed or still open (run it with -race).
func TestDeferredReadsDuringApply(t *testing.T) {
	db := openCfg(t, filepath.Join(t.TempDir(), "state.db"), Config{NoSync: true, CommitInterval: 3 * time.Millisecond})
	defer db.Close()
	const batches, perBatch = 300, 4
	var applied atomic.Uint64 // entries 1..applied have been applied
	var opened atomic.Int64   // reads that found their entry while it was uncommitted
	stop := readConcurrently(t, 4, 3, "read during Applies", func(r int, rnd *rand.Rand) error {
		n := applied.Load()
		if n == 0 {
			return nil
		}
		stale := db.stale()
		var err error
		switch i := n - rnd.Uint64N(min(n, 8)); r % 3 {
		case 0:
			var o Outcome
			if o, err = db.Reads().Tx(txid.ID(i)); err == nil && o.Index != i {
				err = fmt.Errorf("Tx(%d) at index %d", i, o.Index)
			}
		case 1:
			var o Outcome
			if o, err = db.Reads().TxByIdempotencyKey(fmt.Sprint("k", i)); err == nil && o.Index != i {
				err = fmt.Errorf("TxByIdempotencyKey(k%d) at index %d", i, o.Index)
			}
		case 2:
			var recs []LogRecord
			recs, _, err = db.Reads().Log(i, 100)
			if err == nil && (len(recs) < int(n-i+1) || recs[0].Index != i) {
				err = fmt.Errorf("Log(%d) = %d records from %v, want at least %d from %d", i, len(recs), recs, n-i+1, i)
			}
		}
		if err == nil && stale && db.stale() {
			opened.Add(1)
		}
		return err
	})
	var index uint64
	for range batches {
		entries := make([]Entry, perBatch)
		for j := range entries {
			index++
			entries[j] = txEntry(index, txid.ID(index), fmt.Sprint("k", index), put(fmt.Sprint("x", index%7), "1"))
		}
		applyOK(t, db, entries...)
		applied.Store(index)
		time.Sleep(100 * time.Microsecond)
	}
	stop()
	if opened.Load() == 0 || db.committed.Load() == 0 {
		t.Fatalf("%d reads while entries were open, committed index %d: the test tests too little", opened.Load(), db.committed.Load())
	}
	t.Logf("%d reads ran while entries were open", opened.Load())
}
