package store

import (
	"bytes"
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// rawKV returns the kv bucket's value of key, or nil.
func rawKV(t *testing.T, db *DB, key string) []byte {
	t.Helper()
	var v []byte
	err := db.view(func(tx *bolt.Tx) error {
		v = bytes.Clone(tx.Bucket(bucketKV).Get([]byte(key)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestKVValueFromLog flushes every Apply's keys into the kv bucket, so that
// reads after a reopen come from the bucket, and checks that a key's value is
// the last put of the transaction at its mod index, which a bucket value of
// format 2 does not hold.
func TestKVValueFromLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db := openCfg(t, path, Config{NoSync: true, KVFlushRecords: 1})
	applyOK(t, db,
		txEntry(1, 1, "", put("a", `"a1"`), put("b", `"b1"`), put("a", `"a2"`), del("b"), put("b", `"b2"`)),
		txEntry(2, 2, "", put("c", `"c1"`), del("c")),
		txEntry(3, 3, "", ifv(put("a", `"no"`), 1)), // rejected: a is at version 2
		txEntry(4, 4, "", put("d", `{"n":[1,2]}`), put("a", `"a3"`), put("a", `"a4"`)),
		txEntry(5, 5, "", put("e", `"e1"`)),
	)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openCfg(t, path, Config{NoSync: true, KVFlushRecords: 1})
	if db.kv.records != 0 {
		t.Fatalf("%d records replayed at open; want the kv bucket current", db.kv.records)
	}
	want := map[string]KV{
		"a": {Key: "a", Value: []byte(`"a4"`), Version: 4, ModIndex: 4},
		"b": {Key: "b", Value: []byte(`"b2"`), Version: 1, ModIndex: 1}, // the delete took it to 0
		"d": {Key: "d", Value: []byte(`{"n":[1,2]}`), Version: 1, ModIndex: 4},
		"e": {Key: "e", Value: []byte(`"e1"`), Version: 1, ModIndex: 5},
	}
	for k, w := range want {
		if got := mustGet(t, db, k); !reflect.DeepEqual(got, w) {
			t.Errorf("Get(%q) = %+v, want %+v", k, got, w)
		}
		raw := rawKV(t, db, k)
		if !bytes.Equal(raw, encodeKV(w.Version, w.ModIndex)) {
			t.Errorf("kv bucket value of %q = %x, want format 2 %x", k, raw, encodeKV(w.Version, w.ModIndex))
		}
	}
	if _, err := db.Reads().Get("c"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(c) = %v, want ErrNotFound", err)
	}
}

// TestOpenSchema3 opens a schema 3 file, whose kv values hold the value
// (format 1), with Open and with Restore: the values read the same, the file
// becomes schema 4, a key keeps format 1 until a flush writes it again, and
// format 2 then.
func TestOpenSchema3(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v3.db")
	cfg := Config{NoSync: true, KVFlushRecords: 1}
	want := mixedFile(t, path)
	// Write the values into the bucket as schema 3 kept them; d's with a mark
	// that only the bucket holds, so that reading it from the log would show.
	d := want.kvs["d"]
	d.Value = []byte(`"only in kv"`)
	want.kvs["d"] = d
	data := editBolt(t, path, func(tx *bolt.Tx) error {
		kv := tx.Bucket(bucketKV)
		for _, k := range viewKeys {
			w, ok := want.kvs[k]
			if !ok {
				continue
			}
			if err := kv.Put([]byte(k), encodeKVInline(w.Version, w.ModIndex, w.Value)); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketMeta).Put(metaSchema, []byte{3})
	})
	if len(want.kvs) < 4 {
		t.Fatalf("only %d keys to read: %+v", len(want.kvs), want.kvs)
	}

	check := func(what string, db *DB) {
		t.Helper()
		if got := readView(t, db, viewKeys, viewIDs); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: view %+v\nwant %+v", what, got, want)
		}
		if st := metaState(t, db); st.schema != schemaVersion {
			t.Fatalf("%s: schema %d, want %d", what, st.schema, schemaVersion)
		}
		a := want.kvs["a"]
		if raw := rawKV(t, db, "a"); !bytes.Equal(raw, encodeKVInline(a.Version, a.ModIndex, a.Value)) {
			t.Fatalf("%s: kv bucket value of a = %x before a flush writes it, want format 1", what, raw)
		}
		next := db.AppliedIndex() + 1
		applyOne(t, db, txEntry(next, 900, "", ifv(put("a", `"a9"`), a.Version)))
		applyOne(t, db, txEntry(next+1, 901, "", put("g", "1"))) // flushes the Apply before
		if err := db.Sync(); err != nil {
			t.Fatal(err)
		}
		if raw := rawKV(t, db, "a"); !bytes.Equal(raw, encodeKV(a.Version+1, next)) {
			t.Fatalf("%s: kv bucket value of a = %x after a flush, want format 2", what, raw)
		}
		if kv := mustGet(t, db, "a"); string(kv.Value) != `"a9"` || kv.Version != a.Version+1 {
			t.Fatalf("%s: Get(a) = %+v after the flush", what, kv)
		}
		for _, k := range []string{"d", "e", "f"} { // still format 1
			if kv := mustGet(t, db, k); !reflect.DeepEqual(kv, want.kvs[k]) {
				t.Fatalf("%s: Get(%q) = %+v, want %+v", what, k, kv, want.kvs[k])
			}
		}
	}
	check("Open", openCfg(t, path, cfg))
	restored := openCfg(t, filepath.Join(t.TempDir(), "restored.db"), cfg)
	if err := restored.Restore(bytes.NewReader(data)); err != nil {
		t.Fatalf("Restore(schema 3) = %v", err)
	}
	check("Restore", restored)
}

// TestKVRefCorrupt: a kv bucket value that names no log record, a record that
// did not write its version, a record whose last op on the key is a delete,
// or an unknown format makes Get fail with ErrCorrupt, not return a value.
func TestKVRefCorrupt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	cfg := Config{NoSync: true, KVFlushRecords: 1}
	db := openCfg(t, path, cfg)
	applyOK(t, db,
		txEntry(1, 1, "", put("a", `"a1"`), put("b", `"b1"`)),
		txEntry(2, 2, "", put("b", `"b2"`), del("b")),
	)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		what, key string
		value     []byte
	}{
		{"no log record", "x", encodeKV(1, 7)},
		{"a record without the key", "x", encodeKV(1, 1)},
		{"another version", "a", encodeKV(2, 1)},
		{"a delete last", "b", encodeKV(0, 2)}, // record 2 ends with a delete of b
		{"format 9", "y", []byte{9, 1, 1}},
		{"truncated", "z", []byte{kvByRef, 1}},
	}
	editBolt(t, path, func(tx *bolt.Tx) error {
		for _, c := range bad {
			if err := tx.Bucket(bucketKV).Put([]byte(c.key), c.value); err != nil {
				return err
			}
		}
		return nil
	})
	db = openCfg(t, path, cfg)
	// An unreadable state is answered as such (TestUnreadableRecords), never
	// a value.
	for _, c := range bad {
		if kv, err := db.Reads().Get(c.key); err != nil || !errors.Is(kv.Unreadable, ErrCorrupt) || kv.Value != nil {
			t.Errorf("%s: Get(%q) = %+v, %v; want Unreadable wrapping ErrCorrupt", c.what, c.key, kv, err)
		}
	}
}
