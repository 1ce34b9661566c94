package store

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/txlog/txlog/txid"
	bolt "go.etcd.io/bbolt"
)

// view is what the read methods return about a DB.
type view struct {
	applied uint64
	log     []LogRecord
	kvs     map[string]KV
	txs     map[txid.ID]Outcome
	nodes   []NodeInfo
}

// readView reads db through its public methods; keys and txids are the ones
// looked up.
func readView(t *testing.T, db *DB, keys []string, ids []txid.ID) view {
	t.Helper()
	v := view{applied: db.AppliedIndex(), kvs: map[string]KV{}, txs: map[txid.ID]Outcome{}}
	var err error
	if v.log, _, err = db.Reads().Log(0, 1000); err != nil {
		t.Fatalf("Log() = %v", err)
	}
	for _, k := range keys {
		if kv, err := db.Reads().Get(k); err == nil {
			v.kvs[k] = kv
		} else if !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get(%q) = %v", k, err)
		}
	}
	for _, id := range ids {
		if o, err := db.Reads().Tx(id); err == nil {
			v.txs[id] = o
		} else if !errors.Is(err, ErrNotFound) {
			t.Fatalf("Tx(%d) = %v", id, err)
		}
	}
	if v.nodes, err = db.Reads().Nodes(); err != nil {
		t.Fatalf("Nodes() = %v", err)
	}
	return v
}

var (
	viewKeys = []string{"a", "b", "c", "d", "e", "f", "g", "x"}
	viewIDs  = []txid.ID{1, 2, 3, 4, 5, 6, 7, 8, 100, 101}
)

func TestSnapshotRestore(t *testing.T) {
	a := openTest(t)
	entries := mixedEntries()
	applyOK(t, a, entries...)
	wantDump, wantView := dump(t, a), readView(t, a, viewKeys, viewIDs)

	snap, err := a.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	if got, want := snap.AppliedIndex(), a.AppliedIndex(); got != want {
		t.Fatalf("Snapshot.AppliedIndex() = %d, want %d", got, want)
	}

	// Write the snapshot out while A applies more, as Raft does.
	var buf bytes.Buffer
	var wg sync.WaitGroup
	var writeErr error
	wg.Go(func() { _, writeErr = snap.WriteTo(&buf) })
	next := entries[len(entries)-1].Index
	more := []Entry{
		txEntry(next+1, 100, "", put("a", "after"), del("d")),
		txEntry(next+2, 101, "", put("g", "1")),
		entryAt(next+3, KindRegisterNode, t0, 0, EncodeNode(NodeInfo{ID: "n9"})),
	}
	for _, e := range more {
		applyOne(t, a, e)
	}
	wg.Wait()
	if writeErr != nil {
		t.Fatalf("WriteTo() = %v", writeErr)
	}
	snap.Release()

	// B has state of its own, which the restore replaces.
	b := openTest(t)
	applyOK(t, b, txEntry(1, 50, "", put("x", "1")), txEntry(500, 51, "", put("x", "2")))
	if err := b.Restore(&buf); err != nil {
		t.Fatalf("Restore() = %v", err)
	}
	if got := dump(t, b); !reflect.DeepEqual(got, wantDump) {
		t.Fatalf("restored state differs from A at snapshot time:\ngot  %v\nwant %v", got, wantDump)
	}
	if got := readView(t, b, viewKeys, viewIDs); !reflect.DeepEqual(got, wantView) {
		t.Fatalf("restored view = %+v\nwant %+v", got, wantView)
	}

	// B goes on from the snapshot exactly as A did.
	for _, e := range more {
		applyOne(t, b, e)
	}
	if ga, gb := dump(t, a), dump(t, b); !reflect.DeepEqual(ga, gb) {
		t.Fatalf("after the same entries, A and B differ:\nA %v\nB %v", ga, gb)
	}

	// The restored file is what B reopens.
	path := b.path
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	reopened := openAt(t, path)
	if got, want := dump(t, reopened), dump(t, a); !reflect.DeepEqual(got, want) {
		t.Fatalf("reopened restored DB differs:\ngot  %v\nwant %v", got, want)
	}
}

func TestRestoreRejects(t *testing.T) {
	src := openTest(t)
	applyOK(t, src, mixedEntries()...)
	var good bytes.Buffer
	writeSnapshot(t, src, &good)

	foreign := foreignBolt(t)
	ps := src.bolt.Info().PageSize
	if ps == os.Getpagesize() {
		t.Fatalf("page size %d is the machine's: the cases below would not show that the checks read it from the file", ps)
	}

	tests := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"garbage", []byte(strings.Repeat("garbage!", 1024))},
		{"truncated", good.Bytes()[:good.Len()/2]},
		{"one page short", good.Bytes()[:good.Len()-ps]},
		{"meta pages only", good.Bytes()[:2*ps]},
		{"both meta pages flipped", flip(flip(good.Bytes(), 16), ps+16)},
		// bbolt then finds meta page 1 by trying page sizes, and so must the
		// length check that runs before bbolt maps the file.
		{"meta page 0 flipped, one page short", flip(good.Bytes(), 16)[:good.Len()-ps]},
		{"bbolt file of another kind", foreign},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := openTest(t)
			applyOK(t, db, txEntry(1, 1, "k", put("a", "1")))
			before := dump(t, db)
			if err := db.Restore(bytes.NewReader(tt.data)); err == nil {
				t.Fatalf("Restore(%s) = nil, want an error", tt.name)
			}
			if got := dump(t, db); !reflect.DeepEqual(got, before) {
				t.Fatalf("failed Restore changed the state")
			}
			if got := db.AppliedIndex(); got != 1 {
				t.Fatalf("AppliedIndex() after failed Restore = %d, want 1", got)
			}
			entries, _ := os.ReadDir(filepath.Dir(db.path))
			if len(entries) != 1 {
				t.Fatalf("files after failed Restore = %v, want only the database", entries)
			}
			applyOne(t, db, txEntry(2, 2, "", put("a", "2")))
		})
	}
}

// foreignBolt returns a sound bbolt file without the store's buckets.
func foreignBolt(t *testing.T) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "other.db")
	return editBolt(t, path, func(tx *bolt.Tx) error {
		_, err := tx.CreateBucket([]byte("something"))
		return err
	})
}

func flip(b []byte, at int) []byte {
	b = bytes.Clone(b)
	b[at] ^= 0xff
	return b
}

func writeSnapshot(t *testing.T, db *DB, w *bytes.Buffer) {
	t.Helper()
	snap, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	if _, err := snap.WriteTo(w); err != nil {
		t.Fatal(err)
	}
}

// TestReadDuringRestore runs readers while Restore swaps the database under them:
// they must never fail or see a mix of the two states.
func TestReadDuringRestore(t *testing.T) {
	states := make([]bytes.Buffer, 2)
	for i := range states {
		src := openTest(t)
		applyOK(t, src, txEntry(1, 1, "", put("a", string(rune('0'+i))), put("b", string(rune('0'+i)))))
		writeSnapshot(t, src, &states[i])
	}

	db := openTest(t)
	if err := db.Restore(bytes.NewReader(states[0].Bytes())); err != nil {
		t.Fatal(err)
	}
	stop := readConcurrently(t, 4, 0, "read during Restore", func(int, *rand.Rand) error {
		recs, _, err := db.Reads().Log(0, 10)
		if err == nil && (len(recs) != 1 || len(recs[0].Ops) != 2) {
			err = fmt.Errorf("Log() = %+v, want one tx of two ops", recs)
		}
		if err == nil {
			_, err = db.Reads().Get("a")
		}
		if err == nil {
			_, err = db.Reads().Tx(1)
		}
		if err == nil {
			_, err = db.Reads().Nodes()
		}
		return err
	})
	for i := range 20 {
		if err := db.Restore(bytes.NewReader(states[i%2].Bytes())); err != nil {
			t.Fatalf("Restore() = %v", err)
		}
	}
	stop()
}

func TestSnapshotRelease(t *testing.T) {
	db := openTest(t)
	applyOne(t, db, txEntry(1, 1, "", put("a", "1")))
	snap, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	snap.Release()
	snap.Release()
	if _, err := snap.WriteTo(&bytes.Buffer{}); err == nil {
		t.Fatalf("WriteTo() after Release = nil, want an error")
	}
	// A released snapshot does not hold up Close.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestClosed(t *testing.T) {
	db := openTest(t)
	applyOne(t, db, txEntry(1, 1, "k", put("a", "1")))
	for range 2 {
		if err := db.Close(); err != nil {
			t.Fatalf("Close() = %v", err)
		}
	}
	checks := map[string]error{
		"Apply":              second(db.Apply([]Entry{txEntry(2, 2, "", put("b", "1"))})),
		"Tx":                 second(db.Reads().Tx(1)),
		"TxByIdempotencyKey": second(db.Reads().TxByIdempotencyKey("k")),
		// A key the index never had: the read, not the index, answers.
		"TxByIdempotencyKey(unknown)": second(db.Reads().TxByIdempotencyKey("unknown")),
		"Get":                         second(db.Reads().Get("a")),
		"Nodes":                       second(db.Reads().Nodes()),
		"Snapshot":                    second(db.Snapshot()),
		"Restore":                     db.Restore(bytes.NewReader(nil)),
	}
	_, _, checks["Log"] = db.Reads().Log(0, 10)
	for name, err := range checks {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", name, err)
		}
	}
}

// TestResultsOutliveDB checks that what the read methods return is not bbolt
// memory: it stays valid after the database is closed and unmapped.
func TestResultsOutliveDB(t *testing.T) {
	db := openTest(t)
	applyOK(t, db,
		txEntry(1, 1, "ik", put("a", `{"v":"value"}`)),
		entryAt(2, KindRegisterNode, t0, 0, EncodeNode(NodeInfo{ID: "n1", HTTPAddr: "h"})),
	)
	kv := mustGet(t, db, "a")
	recs, _, _ := db.Reads().Log(0, 10)
	o, _ := db.Reads().Tx(1)
	nodes, _ := db.Reads().Nodes()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if string(kv.Value) != `{"v":"value"}` || string(recs[0].Ops[0].Value) != `{"v":"value"}` ||
		o.IdempotencyKey != "ik" || o.Versions["a"] != 1 || nodes[0].HTTPAddr != "h" {
		t.Fatalf("results changed after Close: %+v %+v %+v %+v", kv, recs, o, nodes)
	}
}

func TestOpenRemovesRestoreTemps(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	stale := filepath.Join(dir, "state.db.restore-123")
	if err := os.WriteFile(stale, []byte("half a snapshot"), 0o600); err != nil {
		t.Fatal(err)
	}
	openAt(t, path)
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stale restore file after Open: %v, want removed", err)
	}
}

// TestPageSize checks that a new file gets Config.PageSize (DefaultPageSize when
// zero), that a file keeps the page size it was created with when it is opened
// with another, and that a restored file keeps the snapshot's: each then reads
// and applies on as before.
func TestPageSize(t *testing.T) {
	pageSize := func(db *DB) int { return db.bolt.Info().PageSize }
	dir := t.TempDir()
	def := openAt(t, filepath.Join(dir, "default.db"))
	if got := pageSize(def); got != DefaultPageSize {
		t.Fatalf("new file's page size = %d, want DefaultPageSize %d", got, DefaultPageSize)
	}

	path := filepath.Join(dir, "small.db")
	small := openCfg(t, path, Config{NoSync: true, PageSize: 4 << 10})
	applyOK(t, small, mixedEntries()...)
	want := dump(t, small)
	if err := small.Close(); err != nil {
		t.Fatal(err)
	}
	re := openAt(t, path) // the default asks for 16 KiB pages
	if got := pageSize(re); got != 4<<10 {
		t.Fatalf("reopened file's page size = %d, want the 4096 it was created with", got)
	}
	if got := dump(t, re); !reflect.DeepEqual(got, want) {
		t.Fatalf("reopened with another PageSize: state differs")
	}
	entries := mixedEntries()
	next := entries[len(entries)-1].Index + 1
	applyOne(t, re, txEntry(next, txid.ID(next), "", put("after-reopen", "1")))

	var snap bytes.Buffer
	writeSnapshot(t, re, &snap)
	want = dump(t, re)
	if err := def.Restore(bytes.NewReader(snap.Bytes())); err != nil {
		t.Fatal(err)
	}
	if got := pageSize(def); got != 4<<10 {
		t.Fatalf("restored file's page size = %d, want the snapshot's 4096", got)
	}
	if got := dump(t, def); !reflect.DeepEqual(got, want) {
		t.Fatalf("restored across page sizes: state differs")
	}
	applyOne(t, def, txEntry(next+1, txid.ID(next+1), "", put("after-restore", "1")))
}

func TestConfigValidate(t *testing.T) {
	err := Config{
		LockTimeout: -1, InitialMmapBytes: -1,
		KVFlushKeys: -1, KVFlushLogBytes: -1, KVFlushRecords: -1, KVFlushStepKeys: -1,
		PageSize: 3000,
	}.Validate()
	for _, field := range []string{"LockTimeout", "InitialMmapBytes", "KVFlushKeys", "KVFlushLogBytes", "KVFlushRecords", "KVFlushStepKeys", "PageSize"} {
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("Validate() = %v, want a problem with %s", err, field)
		}
	}
	for _, ps := range []int{-4096, 512, 128 << 10, 12 << 10} {
		if err := (Config{PageSize: ps}).Validate(); err == nil {
			t.Errorf("Config{PageSize: %d}.Validate() = nil, want an error", ps)
		}
	}
	for _, ps := range []int{0, 1 << 10, 4 << 10, 64 << 10} {
		if err := (Config{PageSize: ps}).Validate(); err != nil {
			t.Errorf("Config{PageSize: %d}.Validate() = %v, want nil", ps, err)
		}
	}
	if _, err := Open(filepath.Join(t.TempDir(), "db"), Config{LockTimeout: -1}); err == nil {
		t.Errorf("Open() with a bad Config = nil, want an error")
	}
}
