package replication

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/txlog/txlog/store"
	"github.com/txlog/txlog/txid"
	bolt "go.etcd.io/bbolt"
)

// TestAmnesia opens a server on a store that applied entries, with its Raft
// directory damaged in each way a node forgets what it acknowledged, and
// checks that Open refuses with an *AmnesiaError naming what is missing; and
// that an intact directory, or a store with nothing applied, still opens.
func TestAmnesia(t *testing.T) {
	tests := []struct {
		name    string
		kind    string
		lose    func(t *testing.T, dir string)
		missing string // "" for no refusal
	}{
		{"intact", LogStoreWAL, func(*testing.T, string) {}, ""},
		{"raft-wal log removed", LogStoreWAL, func(t *testing.T, dir string) { removeAll(t, filepath.Join(dir, "wal")) }, missingLog},
		{"raft dir emptied but the store", LogStoreWAL, func(t *testing.T, dir string) {
			removeAll(t, filepath.Join(dir, "wal"))
			removeAll(t, filepath.Join(dir, "snapshots"))
		}, missingLog},
		{"raft-wal stable store lost", LogStoreWAL, func(t *testing.T, dir string) {
			deleteKeys(t, filepath.Join(dir, "wal", "wal-meta.db"), "stable")
		}, missingStable},
		{"raft.db removed", LogStoreBolt, func(t *testing.T, dir string) { removeAll(t, filepath.Join(dir, "raft.db")) }, missingLog},
		{"raft.db stable store lost", LogStoreBolt, func(t *testing.T, dir string) {
			deleteKeys(t, filepath.Join(dir, "raft.db"), "conf")
		}, missingStable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := freeAddrs(t, 1)[0]
			n := &storeNode{cfg: testConfig(t, "n1", addr)}
			n.cfg.Bootstrap = []Server{{ID: "n1", Addr: addr}}
			n.cfg.LogStore = tt.kind
			n.start(t)
			leader(t, []*testNode{{cfg: n.cfg, r: n.r}})
			for i := range 5 {
				if _, _, err := n.r.Apply(ctxTimeout(t, 5*time.Second), put(txid.ID(i+1), "k", fmt.Sprint(i))); err != nil {
					t.Fatal(err)
				}
			}
			n.stop(t)
			tt.lose(t, n.cfg.Dir)

			db, err := store.Open(filepath.Join(n.cfg.Dir, "state.db"), store.Config{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			r, err := Open(n.cfg, db)
			if tt.missing == "" {
				if err != nil {
					t.Fatalf("Open() = %v, want it to open", err)
				}
				r.Close()
				return
			}
			if err == nil {
				r.Close()
				t.Fatalf("Open() with the %s lost succeeded", tt.missing)
			}
			ae, ok := errors.AsType[*AmnesiaError](err)
			if !ok || !errors.Is(err, ErrAmnesia) {
				t.Fatalf("Open() = %v, want an *AmnesiaError", err)
			}
			if ae.Missing != tt.missing || ae.AppliedIndex != db.AppliedIndex() || ae.AppliedTerm != db.AppliedTerm() || ae.AppliedIndex == 0 {
				t.Fatalf("AmnesiaError = %+v, want missing %q at applied index %d term %d", ae, tt.missing, db.AppliedIndex(), db.AppliedTerm())
			}
			t.Logf("Open refused: %v", err)
		})
	}
}

// TestAmnesiaNewStore checks the cases that must open: a new directory and a
// new store; and an intact Raft directory with a store that lost everything
// before any snapshot (raft replays the log into it).
func TestAmnesiaNewStore(t *testing.T) {
	addr := freeAddrs(t, 1)[0]
	n := &storeNode{cfg: testConfig(t, "n1", addr)}
	n.cfg.Bootstrap = []Server{{ID: "n1", Addr: addr}}
	n.start(t)
	leader(t, []*testNode{{cfg: n.cfg, r: n.r}})
	if _, _, err := n.r.Apply(ctxTimeout(t, 5*time.Second), put(1, "k", "v")); err != nil {
		t.Fatal(err)
	}
	n.stop(t)
	removeAll(t, filepath.Join(n.cfg.Dir, "state.db"))
	removeAll(t, filepath.Join(n.cfg.Dir, "state.db.meta"))
	n.start(t)
	waitFor(t, 5*time.Second, "the log replayed into the new store", func() bool { return n.db.AppliedIndex() > 0 })
}

// TestSkippedEntryIsNotApplied makes the state machine skip an entry this
// leader proposed (it claims to have applied past its index, as a store ahead
// of its log does) and checks that Apply reports ErrNotApplied, an unknown
// outcome, and never a Result that the caller would answer as committed.
func TestSkippedEntryIsNotApplied(t *testing.T) {
	addr := freeAddrs(t, 1)[0]
	n := &testNode{cfg: testConfig(t, "n1", addr)}
	n.cfg.Bootstrap = []Server{{ID: "n1", Addr: addr}}
	n.start(t)
	leader(t, []*testNode{n})
	if _, _, err := n.r.Apply(ctxTimeout(t, 5*time.Second), []byte("a")); err != nil {
		t.Fatal(err)
	}
	n.sm.mu.Lock()
	n.sm.applied += 1000
	n.sm.mu.Unlock()
	res, index, err := n.r.Apply(ctxTimeout(t, 5*time.Second), []byte("b"))
	if !errors.Is(err, ErrNotApplied) || !OutcomeUnknown(err) {
		t.Fatalf("Apply() of a skipped entry = %+v, %d, %v; want ErrNotApplied, an unknown outcome", res, index, err)
	}
}

func removeAll(t *testing.T, path string) {
	t.Helper()
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
}

// deleteKeys deletes raft's term and vote from the bucket of the bbolt file
// at path (raft-wal's wal-meta.db "stable", raft-boltdb's raft.db "conf").
func deleteKeys(t *testing.T, path, bucket string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(bucket))
		if b == nil || b.Get([]byte("CurrentTerm")) == nil {
			return fmt.Errorf("no CurrentTerm in bucket %q of %s", bucket, path)
		}
		for _, k := range []string{"CurrentTerm", "LastVoteTerm", "LastVoteCand"} {
			if err := b.Delete([]byte(k)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// memLogs is raft's in-memory log and stable store as a logStore.
type memLogs struct{ *raft.InmemStore }

func (memLogs) Close() error { return nil }

// listedSnapshots is a snapshot store that only lists.
type listedSnapshots struct{ list []*raft.SnapshotMeta }

func (s listedSnapshots) List() ([]*raft.SnapshotMeta, error) { return s.list, nil }

func (listedSnapshots) Create(raft.SnapshotVersion, uint64, uint64, raft.Configuration, uint64, raft.Transport) (raft.SnapshotSink, error) {
	return nil, errors.New("not here")
}

func (listedSnapshots) Open(string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	return nil, nil, errors.New("not here")
}

// TestCheckAmnesia runs the start-up check on the numbers alone: a state
// machine's applied entry (and restored index), a log of entries from first
// to last (of term logTerm, but the one at applied, of term, or of termAt when
// set), a snapshot and a current term.
func TestCheckAmnesia(t *testing.T) {
	tests := []struct {
		name                      string
		applied, term, restored   uint64
		first, last, logTerm      uint64
		termAt                    uint64
		snapIndex, snapTerm, curr uint64
		missing                   string
	}{
		{name: "new", curr: 0},
		{name: "log reaches applied", applied: 10, term: 2, first: 1, last: 12, logTerm: 2, curr: 2},
		{name: "log ends below applied", applied: 10, term: 2, first: 1, last: 5, logTerm: 2, curr: 2, missing: missingLog},
		{name: "log empty, no snapshot", applied: 10, term: 2, curr: 2, missing: missingLog},
		{name: "everything lost", applied: 10, term: 2, missing: missingLog},
		{name: "snapshot covers applied", applied: 10, term: 2, snapIndex: 10, snapTerm: 2, curr: 2},
		{name: "log after a snapshot", applied: 30, term: 3, first: 11, last: 40, logTerm: 3, snapIndex: 10, snapTerm: 2, curr: 3},
		{name: "restored live checkpoint, log not caught up", applied: 12, term: 2, restored: 12, snapIndex: 10, snapTerm: 2, curr: 3},
		{name: "restored, then applied past it, log lost", applied: 13, term: 2, restored: 12, snapIndex: 10, snapTerm: 2, curr: 3, missing: missingLog},
		{name: "restored, snapshot lost", applied: 12, term: 2, restored: 12, curr: 3, missing: missingLog},
		{name: "another entry at applied", applied: 10, term: 2, first: 1, last: 12, logTerm: 3, termAt: 3, curr: 3, missing: missingLog},
		{name: "current term below applied term", applied: 10, term: 2, first: 1, last: 12, logTerm: 2, curr: 1, missing: missingStable},
		{name: "current term below log term", applied: 10, term: 2, first: 1, last: 12, logTerm: 4, termAt: 2, curr: 3, missing: missingStable},
		{name: "stable store lost", applied: 10, term: 2, first: 1, last: 12, logTerm: 2, missing: missingStable},
		{name: "current term below snapshot term", applied: 10, term: 2, snapIndex: 10, snapTerm: 2, curr: 1, missing: missingStable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := raft.NewInmemStore()
			for i := tt.first; i > 0 && i <= tt.last; i++ {
				term := tt.logTerm
				if i == tt.applied {
					term = tt.term
					if tt.termAt != 0 {
						term = tt.termAt
					}
				}
				if err := mem.StoreLog(&raft.Log{Index: i, Term: term, Type: raft.LogCommand}); err != nil {
					t.Fatal(err)
				}
			}
			if tt.curr > 0 {
				if err := mem.SetUint64(keyCurrentTerm, tt.curr); err != nil {
					t.Fatal(err)
				}
			}
			var snaps listedSnapshots
			if tt.snapIndex > 0 {
				snaps.list = []*raft.SnapshotMeta{{ID: "s", Index: tt.snapIndex, Term: tt.snapTerm}}
			}
			sm := &fakeMachine{applied: tt.applied, term: tt.term, restored: tt.restored}
			err := checkAmnesia(Config{ID: "n1", Dir: "raft"}, sm, memLogs{mem}, snaps)
			if tt.missing == "" {
				if err != nil {
					t.Fatalf("checkAmnesia() = %v, want nil", err)
				}
				return
			}
			ae, ok := errors.AsType[*AmnesiaError](err)
			if !ok || ae.Missing != tt.missing {
				t.Fatalf("checkAmnesia() = %v, want an AmnesiaError for the %s", err, tt.missing)
			}
			for _, s := range []string{tt.missing, "DELETE /v1/cluster/nodes/n1", "--join instead of --cluster"} {
				if !strings.Contains(err.Error(), s) {
					t.Fatalf("error %q does not say %q", err, s)
				}
			}
		})
	}
}
