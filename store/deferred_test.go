package store

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/txlog/txlog/txid"
)

// TestDeferredReads checks that with CommitInterval the read methods see every
// applied entry while the file does not hold it yet, and that a read which
// misses in committed state commits what Apply left open.
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
	if _, err := db.TxByIdempotencyKey("nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("TxByIdempotencyKey(nope) = %v, want ErrNotFound", err)
	}
	if !db.stale() {
		t.Fatal("a key the idempotency index lacks committed the open entries")
	}
	// A txid committed state does not have: commit, and find it.
	o, err := db.TxByIdempotencyKey("b")
	if err != nil || o.TxID != 2 || o.Index != 2 {
		t.Fatalf("TxByIdempotencyKey(b) = %+v, %v; want txid 2 at index 2", o, err)
	}
	if db.stale() || db.committed.Load() != 3 {
		t.Fatalf("after a read that missed: committed %d, want 3", db.committed.Load())
	}

	// Log reads to the end: it commits when it comes up short.
	applyOK(t, db, txEntry(5, 5, "", put("z", "5")))
	recs, next, err := db.Log(1, 10)
	if err != nil || len(recs) != 4 || next != 6 {
		t.Fatalf("Log(1, 10) = %d records, next %d, %v; want 4, next 6", len(recs), next, err)
	}
	applyOK(t, db, txEntry(6, 6, "", put("z", "6")))
	if recs, _, err := db.Log(1, 2); err != nil || len(recs) != 2 || !db.stale() {
		t.Fatalf("Log(1, 2) = %d records, %v, stale %v; want 2, and no commit (it did not come up short)", len(recs), err, db.stale())
	}
	if o, err := db.Tx(6); err != nil || o.Index != 6 {
		t.Fatalf("Tx(6) = %+v, %v", o, err)
	}
	if _, err := db.Tx(7); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Tx(7) = %v, want ErrNotFound", err)
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
		if nodes, err := db.Nodes(); err != nil || len(nodes) != 1 {
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
	if _, err := db.Get("x"); err == nil {
		t.Fatal("Get after a rolled back open transaction succeeded")
	}
	if _, err := db.Tx(1); err == nil {
		t.Fatal("Tx after a rolled back open transaction succeeded")
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
