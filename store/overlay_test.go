package store

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/txlog/txlog/txid"
	bolt "go.etcd.io/bbolt"
)

// tinyFlush flushes the kv overlay every few records.
var tinyFlush = Config{NoSync: true, KVFlushKeys: 4, KVFlushLogBytes: 1000, KVFlushRecords: 5}

// openCfg opens the DB at path with cfg; the caller closes it.
func openCfg(t testing.TB, path string, cfg Config) *DB {
	t.Helper()
	db, err := Open(path, cfg)
	if err != nil {
		t.Fatalf("Open(%s) = %v", path, err)
	}
	return db
}

// metaState reads the meta bucket of db's committed state.
func metaState(t testing.TB, db *DB) appliedState {
	t.Helper()
	var st appliedState
	if err := db.view(func(tx *bolt.Tx) error {
		var err error
		st, err = readState(tx)
		return err
	}); err != nil {
		t.Fatalf("read meta: %v", err)
	}
	return st
}

// crashCopy copies the file of db, open and between Applies, to a new file, as
// a process killed at that point leaves it, and returns the new file's path.
func crashCopy(t testing.TB, db *DB) string {
	t.Helper()
	data, err := os.ReadFile(db.path)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "crashed.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// modelKV is a key's state in the model of TestOverlayModel.
type modelKV struct {
	version, mod uint64
	value        string
}

// modelApply applies tx at index to model as Apply specifies it: ops in order,
// each seeing the ones before, all or nothing, the first failed if_version a
// conflict. It returns the outcome's status, versions and conflict.
func modelApply(model map[string]modelKV, index uint64, tx Tx) (Status, map[string]uint64, *Conflict) {
	cur := map[string]modelKV{}
	for _, op := range tx.Ops {
		s, ok := cur[op.Key]
		if !ok {
			s = model[op.Key]
		}
		if op.HasIfVersion && op.IfVersion != s.version {
			return StatusRejected, nil, &Conflict{Key: op.Key, Expected: op.IfVersion, Actual: s.version}
		}
		if op.Kind == OpPut {
			s = modelKV{version: s.version + 1, mod: index, value: string(op.Value)}
		} else {
			s = modelKV{}
		}
		cur[op.Key] = s
	}
	versions := map[string]uint64{}
	for k, s := range cur {
		versions[k] = s.version
		if s.version == 0 {
			delete(model, k)
		} else {
			model[k] = s
		}
	}
	return StatusCommitted, versions, nil
}

// checkModel compares Get of every key with the model.
func checkModel(t *testing.T, db *DB, keys []string, model map[string]modelKV, when string) {
	t.Helper()
	for _, k := range keys {
		kv, err := db.Reads().Get(k)
		want, ok := model[k]
		switch {
		case !ok && errors.Is(err, ErrNotFound):
		case !ok:
			t.Fatalf("%s: Get(%q) = %+v, %v; want not found", when, k, kv, err)
		case err != nil || kv.Version != want.version || kv.ModIndex != want.mod || string(kv.Value) != want.value || kv.Key != k:
			t.Fatalf("%s: Get(%q) = %+v, %v; want %+v", when, k, kv, err, want)
		}
	}
}

// TestOverlayModel applies random transactions (puts, deletes, if_version
// preconditions that hold or fail, duplicates) in batches of random sizes with
// tiny flush limits, and compares Results and Get of every key with a map
// after every batch. At random points it reopens the database, cleanly or from
// a copy of the file taken while it was open (a crash), and compares again.
//
// With commit=deferred, Applies leave their transaction open (CommitInterval),
// so a crash loses the entries after the last commit: the reopened database
// must have an applied index at or below the last one, and applying the lost
// entries again, as raft does from its log, must give the model's state. Syncs,
// clean stops and kv flushes commit in between.
func TestOverlayModel(t *testing.T) {
	for _, commit := range []string{"each", "deferred", "each-retain"} {
		t.Run("commit="+commit, func(t *testing.T) {
			midFlush, lost := 0, 0 // crashes while a flush was half done, or with entries uncommitted
			for _, nkeys := range []int{3, 300} {
				for seed := range uint64(6) {
					t.Run(fmt.Sprintf("keys=%d/seed=%d", nkeys, seed), func(t *testing.T) {
						m, l := testOverlayModel(t, nkeys, seed, commit == "deferred", commit == "each-retain")
						midFlush, lost = midFlush+m, lost+l
					})
				}
			}
			if midFlush < 5 {
				t.Fatalf("%d crashes in the middle of a flush: the test tests too little", midFlush)
			}
			if commit == "deferred" && lost < 20 {
				t.Fatalf("%d crashes lost uncommitted entries: the test tests too little", lost)
			}
		})
	}
}

// With retain, the store keeps 10 to 40 entries of log (retain.go), the
// entries' leader times advance a millisecond per index and their dedup
// window is 20ms, so that old records go; resubmissions are of recent txids.
func testOverlayModel(t *testing.T, nkeys int, seed uint64, deferred, retain bool) (midFlush, lost int) {
	rnd := rand.New(rand.NewPCG(seed, uint64(nkeys)))
	// One of the limits is tiny; which one depends on the seed.
	cfg := Config{NoSync: true, KVFlushKeys: 1 << 30, KVFlushLogBytes: 1 << 30, KVFlushRecords: 1 << 30,
		KVFlushStepKeys: 1 + rnd.IntN(3)}
	if deferred {
		cfg.CommitInterval = time.Hour // commits only when something needs one
	}
	if nkeys > 10 { // a flush of a few steps, so that it ends between reopens
		cfg.KVFlushStepKeys = 10 + rnd.IntN(nkeys/5)
		// The cache of the bucket's versions fills up and starts again.
		defer func(n int) { maxCleanKeys = n }(maxCleanKeys)
		maxCleanKeys = 20 + rnd.IntN(100)
	}
	switch seed % 3 {
	case 0:
		cfg.KVFlushKeys = min(nkeys, 3+rnd.IntN(20))
	case 1:
		cfg.KVFlushLogBytes = 300 + rnd.IntN(3000)
	case 2:
		cfg.KVFlushRecords = 5 + rnd.IntN(40)
	}
	txEntry := txEntry
	if retain {
		cfg.Retention = Retention{Entries: 10 + uint64(rnd.IntN(30))}
		txEntry = func(index uint64, id txid.ID, idem string, ops ...Op) Entry {
			return txAt(index, t0+int64(index)*int64(time.Millisecond), 20*time.Millisecond, id, idem, ops...)
		}
	}
	keys := make([]string, nkeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("key-%d", i)
	}
	db := openCfg(t, filepath.Join(t.TempDir(), "state.db"), cfg)
	defer func() { db.Close() }()

	model := map[string]modelKV{}
	var index uint64
	var nextID txid.ID
	sentOps := map[txid.ID][]Op{} // each txid's ops, for its resubmissions
	var flushes, replays, crashes int
	var history []Entry // every entry applied, for what a crash loses
	kvApplied := uint64(0)
	for batch := range 150 {
		var entries []Entry
		type want struct {
			status    Status
			versions  map[string]uint64
			conflict  *Conflict
			duplicate bool
			conflict2 bool // TxIDConflict: the txid with other bytes
		}
		var wants []want
		for range 1 + rnd.IntN(12) {
			index += 1 + uint64(rnd.IntN(2)) // indexes have gaps
			if nextID > 0 && rnd.IntN(15) == 0 {
				// A resubmission: a duplicate that writes nothing, or, with
				// other bytes, refused and writing nothing either.
				id := 1 + txid.ID(rnd.IntN(int(nextID)))
				if retain {
					id = nextID - txid.ID(rnd.IntN(int(min(nextID, 3))))
				}
				if rnd.IntN(2) == 0 {
					entries = append(entries, txEntry(index, id, "", sentOps[id]...))
					wants = append(wants, want{duplicate: true})
				} else {
					entries = append(entries, txEntry(index, id, "", put(keys[0], "dup")))
					wants = append(wants, want{conflict2: true})
				}
				continue
			}
			nextID++
			tx := Tx{ID: nextID}
			for range 1 + rnd.IntN(4) {
				k := keys[rnd.IntN(nkeys)]
				op := put(k, strconv.Quote(fmt.Sprint("v", index, "-", rnd.IntN(1000))))
				if rnd.IntN(4) == 0 {
					op = del(k)
				}
				if rnd.IntN(3) == 0 {
					v := model[k].version
					if rnd.IntN(3) == 0 {
						v = uint64(rnd.IntN(3))
					}
					op = ifv(op, v)
				}
				tx.Ops = append(tx.Ops, op)
			}
			entries = append(entries, txEntry(index, tx.ID, "", tx.Ops...))
			sentOps[tx.ID] = tx.Ops
			s, v, c := modelApply(model, index, tx)
			wants = append(wants, want{status: s, versions: v, conflict: c})
		}
		res := applyOK(t, db, entries...)
		history = append(history, entries...)
		for i, r := range res {
			w := wants[i]
			if w.conflict2 {
				if !r.TxIDConflict || r.Duplicate {
					t.Fatalf("batch %d, entry %d: Result %+v, want TxIDConflict", batch, entries[i].Index, r)
				}
				continue
			}
			if w.duplicate {
				if !r.Duplicate {
					t.Fatalf("batch %d, entry %d: Result %+v, want a duplicate", batch, entries[i].Index, r)
				}
				continue
			}
			o := r.Outcome
			if r.Duplicate || o.Status != w.status || !reflect.DeepEqual(o.Conflict, w.conflict) ||
				(w.status == StatusCommitted && !maps.Equal(o.Versions, w.versions)) {
				t.Fatalf("batch %d, entry %d: Outcome %+v, want %+v", batch, entries[i].Index, o, w)
			}
		}
		checkModel(t, db, keys, model, fmt.Sprintf("batch %d", batch))
		if deferred && rnd.IntN(6) == 0 {
			// A read that misses everywhere commits nothing; Sync commits.
			if _, err := db.Reads().Tx(nextID + 1000); !errors.Is(err, ErrNotFound) {
				t.Fatalf("batch %d: Tx(%d) = %v, want ErrNotFound", batch, nextID+1000, err)
			}
			if err := db.Sync(); err != nil {
				t.Fatal(err)
			}
			if db.stale() {
				t.Fatalf("batch %d: Sync left entries uncommitted", batch)
			}
		}
		if st := metaState(t, db); st.kvApplied != kvApplied {
			flushes++
			kvApplied = st.kvApplied
		}

		switch rnd.IntN(12) {
		case 0: // crash: the file as it is now, with no flush at Close
			if db.kv.frozen != nil {
				midFlush++
			}
			path := crashCopy(t, db)
			db.Close()
			db = openCfg(t, path, cfg)
			crashes++
			if got := db.AppliedIndex(); got < index {
				lost++
				var again []Entry
				for _, e := range history {
					if e.Index > got {
						again = append(again, e)
					}
				}
				applyOK(t, db, again...)
			}
		case 1: // clean stop
			db.Close()
			db = openCfg(t, db.path, cfg)
		default:
			continue
		}
		if db.kv.records > 0 {
			replays++
		}
		if got := db.AppliedIndex(); got != index {
			t.Fatalf("batch %d: AppliedIndex() after reopen = %d, want %d", batch, got, index)
		}
		checkModel(t, db, keys, model, fmt.Sprintf("batch %d, reopened", batch))
		kvApplied = metaState(t, db).kvApplied
	}
	t.Logf("limits %d keys, %d log bytes, %d records, steps of %d keys: %d flushes, %d crashes (%d mid-flush), %d replays, %d keys at the end",
		cfg.KVFlushKeys, cfg.KVFlushLogBytes, cfg.KVFlushRecords, cfg.KVFlushStepKeys, flushes, crashes, midFlush, replays, len(model))
	if first, _ := db.Reads().FirstIndex(); retain && first < index/2 {
		t.Fatalf("FirstIndex() = %d at index %d with retention %s: the test tests too little", first, index, cfg.Retention)
	}
	if flushes < 5 || replays < 2 || len(model) == 0 {
		t.Fatalf("%d flushes, %d reopens with a log to replay, %d keys: the test tests too little", flushes, replays, len(model))
	}
	return midFlush, lost
}

// overlayCopy returns a copy of db's committed overlay.
func overlayCopy(db *DB) map[string]kvState {
	db.kv.mu.RLock()
	defer db.kv.mu.RUnlock()
	return maps.Clone(db.kv.keys)
}

// TestOverlayFailedApply checks that an Apply that fails, in a batch that
// would flush the overlay, leaves the overlay, the kv bucket and the reads as
// they were, and that the batch then applies as it would have.
func TestOverlayFailedApply(t *testing.T) {
	cfg := Config{NoSync: true, KVFlushRecords: 4}
	first := []Entry{
		txEntry(1, 1, "", put("a", "1"), put("b", "1")),
		txEntry(2, 2, "", put("c", "1")),
	}
	batch := []Entry{
		txEntry(3, 3, "", put("a", "2"), del("b")),
		txEntry(4, 4, "", put("d", "1")),
		txEntry(5, 5, "", ifv(put("c", "2"), 1)),
	}
	keys := []string{"a", "b", "c", "d"}

	db := openCfg(t, filepath.Join(t.TempDir(), "state.db"), cfg)
	defer db.Close()
	twin := openCfg(t, filepath.Join(t.TempDir(), "twin.db"), cfg)
	defer twin.Close()
	applyOK(t, db, first...)
	applyOK(t, twin, first...)
	corruptTxid(t, db, 999)

	overlay, before, kvBefore := overlayCopy(db), readView(t, db, keys, nil), rawBucket(t, db, bucketKV)
	if len(overlay) != 3 {
		t.Fatalf("overlay of %d keys before the failing batch, want 3", len(overlay))
	}
	_, err := db.Apply(append(batch[:len(batch):len(batch)], txEntry(6, 999, "", put("e", "1"))))
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Apply() = %v, want ErrCorrupt", err)
	}
	if got := overlayCopy(db); !reflect.DeepEqual(got, overlay) {
		t.Fatalf("failed Apply changed the overlay: %v, was %v", got, overlay)
	}
	if got := readView(t, db, keys, nil); !reflect.DeepEqual(got, before) {
		t.Fatalf("failed Apply changed the reads: %+v, was %+v", got, before)
	}
	if got := rawBucket(t, db, bucketKV); !reflect.DeepEqual(got, kvBefore) {
		t.Fatalf("failed Apply changed the kv bucket: %v, was %v", got, kvBefore)
	}

	res, twinRes := applyOK(t, db, batch...), applyOK(t, twin, batch...)
	if !reflect.DeepEqual(res, twinRes) {
		t.Fatalf("Results after a failed Apply %+v, want %+v", res, twinRes)
	}
	// The batch flushed the overlay as it was before it (index 2); its own
	// keys are the next overlay's.
	if st := metaState(t, db); st.kvApplied != 2 {
		t.Fatalf("kv_applied = %d after the batch, want 2 (a flush)", st.kvApplied)
	}
	if got := len(overlayCopy(db)); got != 4 {
		t.Fatalf("overlay of %d keys after the flush, want the batch's 4", got)
	}
	if got, want := readView(t, db, keys, nil), readView(t, twin, keys, nil); !reflect.DeepEqual(got, want) {
		t.Fatalf("reads after a failed Apply %+v, want %+v", got, want)
	}
}

// rawBucket returns the bucket's keys and values as bbolt holds them.
func rawBucket(t *testing.T, db *DB, name []byte) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := db.view(func(tx *bolt.Tx) error {
		return tx.Bucket(name).ForEach(func(k, v []byte) error {
			m[string(k)] = string(v)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestOverlayReadsDuringFlush runs readers while batches apply and flush, some
// failing: a reader never sees a key's version go back, never sees less than
// what an Apply that returned before the read wrote, and never sees a value of
// a failed batch. Run it with -race.
func TestOverlayReadsDuringFlush(t *testing.T) {
	db := openCfg(t, filepath.Join(t.TempDir(), "state.db"), Config{NoSync: true, KVFlushKeys: 5, KVFlushRecords: 7, KVFlushStepKeys: 2})
	defer db.Close()
	corruptTxid(t, db, 1<<40)
	const nkeys, batches = 10, 300
	key := func(i int) string { return fmt.Sprintf("key-%d", i) }
	var committed [nkeys]atomic.Uint64 // versions Apply has returned
	var last [3][nkeys]uint64          // per reader: the versions it read
	stop := readConcurrently(t, 3, 3, "read during flushes", func(r int, rnd *rand.Rand) error {
		i := rnd.IntN(nkeys)
		floor := committed[i].Load()
		kv, err := db.Reads().Get(key(i))
		switch {
		case errors.Is(err, ErrNotFound):
			if floor > 0 {
				return fmt.Errorf("Get(%s) = not found after version %d was applied", key(i), floor)
			}
			return nil
		case err != nil:
			return err
		case string(kv.Value) != strconv.FormatUint(kv.Version, 10):
			return fmt.Errorf("Get(%s) = %+v: the value of another version or of a failed Apply", key(i), kv)
		case kv.Version < floor || kv.Version < last[r][i]:
			return fmt.Errorf("Get(%s) = version %d, after %d was applied and %d read", key(i), kv.Version, floor, last[r][i])
		}
		if kv.Version > 0 {
			last[r][i] = kv.Version
		}
		return nil
	})
	rnd := rand.New(rand.NewPCG(9, 9))
	var versions [nkeys]uint64
	var index uint64
	var id txid.ID
	flushes, kvApplied := 0, uint64(0)
	for b := range batches {
		if b%5 == 0 {
			// A batch that fails: its values ("bad") never show.
			var bad []Entry
			for j := range 3 {
				bad = append(bad, txEntry(index+1+uint64(j), txid.ID(1<<30+b*10+j), "", put(key(rnd.IntN(nkeys)), `"bad"`)))
			}
			bad = append(bad, txEntry(index+4, 1<<40, "", put("x", "1")))
			if _, err := db.Apply(bad); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Apply(failing batch) = %v, want ErrCorrupt", err)
			}
		}
		var entries []Entry
		next := versions
		for range 1 + rnd.IntN(6) {
			i := rnd.IntN(nkeys)
			next[i]++
			index++
			id++
			entries = append(entries, txEntry(index, id, "", put(key(i), strconv.FormatUint(next[i], 10))))
		}
		applyOK(t, db, entries...)
		versions = next
		for i := range nkeys {
			committed[i].Store(versions[i])
		}
		if st := metaState(t, db); st.kvApplied != kvApplied {
			flushes, kvApplied = flushes+1, st.kvApplied
		}
	}
	stop()
	if flushes < 30 {
		t.Fatalf("%d flushes: the test tests too little", flushes)
	}
}

// TestOverlaySnapshot restores a snapshot taken while the overlay holds keys
// the kv bucket does not: the restored DB replays the log and reads the same,
// and goes on as the original.
func TestOverlaySnapshot(t *testing.T) {
	a := openCfg(t, filepath.Join(t.TempDir(), "a.db"), Config{NoSync: true, KVFlushRecords: 4})
	defer a.Close()
	entries := mixedEntries()
	for _, e := range entries { // the fourth record (index 9) flushes
		applyOne(t, a, e)
	}
	st := metaState(t, a)
	if st.kvApplied == 0 || st.kvApplied == st.index || a.kv.len() == 0 {
		t.Fatalf("kv_applied %d, applied %d, overlay of %d keys: want a flushed and an unflushed part", st.kvApplied, st.index, a.kv.len())
	}
	var buf bytes.Buffer
	writeSnapshot(t, a, &buf)
	want, wantDump := readView(t, a, viewKeys, viewIDs), dump(t, a)

	b := openTest(t)
	applyOK(t, b, txEntry(1, 50, "", put("a", "x"), put("zz", "1")))
	if err := b.Restore(&buf); err != nil {
		t.Fatalf("Restore() = %v", err)
	}
	if got := metaState(t, b); got.kvApplied != st.kvApplied {
		t.Fatalf("restored kv_applied = %d, want %d: the snapshot flushed", got.kvApplied, st.kvApplied)
	}
	if got := readView(t, b, append(viewKeys, "zz"), viewIDs); !reflect.DeepEqual(got, want) {
		t.Fatalf("restored view %+v\nwant %+v", got, want)
	}
	if got := dump(t, b); !reflect.DeepEqual(got, wantDump) {
		t.Fatalf("restored state %v\nwant %v", got, wantDump)
	}
	next := entries[len(entries)-1].Index
	more := []Entry{
		txEntry(next+1, 100, "", ifv(put("a", "4"), 3), del("d")),
		txEntry(next+2, 101, "", ifv(put("e", "2"), 1), put("g", "1")),
	}
	if ra, rb := applyOK(t, a, more...), applyOK(t, b, more...); !reflect.DeepEqual(ra, rb) {
		t.Fatalf("after Restore, B's results %+v differ from A's %+v", rb, ra)
	}
	if ga, gb := readView(t, a, viewKeys, viewIDs), readView(t, b, viewKeys, viewIDs); !reflect.DeepEqual(ga, gb) {
		t.Fatalf("after the same entries, B %+v, A %+v", gb, ga)
	}
}

// mixedFile applies mixedEntries to a new store at path, each Apply flushing
// the overlay's keys of the one before (KVFlushRecords 1), closes it (which
// flushes the rest) and returns what it read before the close.
func mixedFile(t *testing.T, path string) view {
	t.Helper()
	db := openCfg(t, path, Config{NoSync: true, KVFlushRecords: 1})
	for _, e := range mixedEntries() {
		applyOne(t, db, e)
	}
	v := readView(t, db, viewKeys, viewIDs)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestOpenSchema2 opens a schema 2 file (kv current up to the applied index,
// no kv_applied) with Open and with Restore: the state reads the same, nothing
// is replayed, and the file becomes schema 4.
func TestOpenSchema2(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v2.db")
	// Flushed by every Apply that writes a record, the kv bucket is current up
	// to the applied index, as schema 2 kept it.
	want := mixedFile(t, path)
	data := editBolt(t, path, func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if err := meta.Delete(metaKVApplied); err != nil {
			return err
		}
		return meta.Put(metaSchema, []byte{2})
	})

	check := func(what string, db *DB) {
		t.Helper()
		if got := readView(t, db, viewKeys, viewIDs); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: view %+v\nwant %+v", what, got, want)
		}
		st := metaState(t, db)
		if st.schema != schemaVersion || st.kvApplied != st.index || db.kv.records != 0 {
			t.Fatalf("%s: schema %d, kv_applied %d, applied %d, %d records replayed; want schema 4, kv_applied = applied, none",
				what, st.schema, st.kvApplied, st.index, db.kv.records)
		}
		next := db.AppliedIndex() + 1
		applyOne(t, db, txEntry(next, 900, "", ifv(put("a", "9"), 3)))
		if kv := mustGet(t, db, "a"); kv.Version != 4 || kv.ModIndex != next {
			t.Fatalf("%s: Get(a) after an Apply = %+v, want version 4", what, kv)
		}
	}
	check("Open", openAt(t, path))
	restored := openTest(t)
	if err := restored.Restore(bytes.NewReader(data)); err != nil {
		t.Fatalf("Restore(schema 2) = %v", err)
	}
	check("Restore", restored)
}

// TestOverlayCorruptRedo checks that a log record after kv_applied that does
// not decode stops Open, and Restore before it replaces the database.
func TestOverlayCorruptRedo(t *testing.T) {
	a := openTest(t)
	applyOK(t, a, mixedEntries()...)
	path := crashCopy(t, a)
	data := editBolt(t, path, func(tx *bolt.Tx) error {
		return tx.Bucket(bucketLog).Put(u64Key(2), []byte{codecVersion, 1})
	})
	if _, err := Open(path, Config{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open() = %v, want ErrCorrupt", err)
	}
	db := openTest(t)
	applyOne(t, db, txEntry(1, 1, "", put("a", "1")))
	if err := db.Restore(bytes.NewReader(data)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Restore() = %v, want ErrCorrupt", err)
	}
	if kv := mustGet(t, db, "a"); kv.Version != 1 || db.AppliedIndex() != 1 {
		t.Fatalf("after a refused Restore: Get(a) = %+v, applied %d; want the state before", kv, db.AppliedIndex())
	}
}

// TestOverlayFreezeKeepsMap checks that a flush freezes the overlay's map
// itself, not a copy of it, so that a flush does not hold every key twice:
// the Apply that starts it flushes the overlay as of before it, and its own
// keys are the next overlay's.
func TestOverlayFreezeKeepsMap(t *testing.T) {
	db := openCfg(t, filepath.Join(t.TempDir(), "state.db"), Config{NoSync: true, KVFlushRecords: 3, KVFlushStepKeys: 1})
	defer db.Close()
	applyOK(t, db, txEntry(1, 1, "", put("a", "1")), txEntry(2, 2, "", put("b", "1")))
	db.kv.mu.RLock()
	keys := reflect.ValueOf(db.kv.keys).UnsafePointer()
	db.kv.mu.RUnlock()

	applyOK(t, db, txEntry(3, 3, "", put("c", "1"), put("a", "2")))
	db.kv.mu.RLock()
	frozen, n, flushTo := reflect.ValueOf(db.kv.frozen).UnsafePointer(), len(db.kv.keys), db.kv.flushTo
	db.kv.mu.RUnlock()
	if frozen == nil {
		t.Fatal("no flush in progress after the batch that filled the overlay")
	}
	if frozen != keys {
		t.Error("the flush froze a copy of the overlay, not the overlay")
	}
	if flushTo != 2 || n != 2 {
		t.Errorf("flush as of %d with %d keys after it, want as of 2 with the batch's 2", flushTo, n)
	}
	applyOK(t, db, txEntry(4, 4, "", put("d", "1")))
	if st := metaState(t, db); st.kvApplied != 2 {
		t.Errorf("kv_applied = %d after the flush's last step, want 2", st.kvApplied)
	}
	if v, err := db.Reads().Get("a"); err != nil || string(v.Value) != "2" {
		t.Errorf(`Get("a") = %+v, %v; want the batch's "2"`, v, err)
	}
}
