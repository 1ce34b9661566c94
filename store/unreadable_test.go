package store

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestUnreadableRecords writes bytes that do not decode into a copy of a
// store, in its log and kv buckets, with bbolt directly: Log goes on past the
// bad record, which comes back raw and marked, and Get answers the keys whose
// state or value cannot be read with KV.Unreadable, not an error.
func TestUnreadableRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := Open(path, Config{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	applyOK(t, db,
		txEntry(1, 1, "", put("a", `"A"`)),
		txEntry(2, 2, "", put("b", `"B"`)),
		txEntry(3, 3, "", put("c", `"C"`)),
		txEntry(4, 4, "", put("d", `not json`)), // the store keeps a value as it came
	)
	if err := db.Close(); err != nil { // flushes the overlay: kv holds every key
		t.Fatal(err)
	}
	garbage := []byte{0xff, 0x00, 'x', 0xfe}
	editBolt(t, path, func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketLog).Put(u64Key(2), garbage); err != nil {
			return err
		}
		return tx.Bucket(bucketKV).Put([]byte("c"), []byte{9, 9})
	})
	db = openAt(t, path)

	recs, next, err := db.Reads().Log(0, 10)
	if err != nil || next != 5 || len(recs) != 4 {
		t.Fatalf("Log(0, 10) = %d records, next %d, %v; want 4 records and next 5", len(recs), next, err)
	}
	for i, r := range recs {
		bad := i == 1
		if r.Index != uint64(i+1) || (r.Unreadable != nil) != bad {
			t.Fatalf("record %d = index %d, unreadable %v; want index %d, unreadable %v", i, r.Index, r.Unreadable, i+1, bad)
		}
	}
	if r := recs[1]; !errors.Is(r.Unreadable, ErrCorrupt) || !bytes.Equal(r.Raw, garbage) || r.TxID != 0 || r.Ops != nil {
		t.Fatalf("unreadable record = %+v, want Unreadable wrapping ErrCorrupt, Raw %x and nothing else", r, garbage)
	}
	if r := recs[3]; string(r.Ops[0].Value) != "not json" {
		t.Fatalf("record 4's value = %q, want it as stored", r.Ops[0].Value)
	}
	// Paged one record at a time, as a reader with from=next does.
	for from, want := uint64(1), uint64(2); from <= 4; from, want = want, want+1 {
		recs, next, err := db.Reads().Log(from, 1)
		if err != nil || len(recs) != 1 || next != want {
			t.Fatalf("Log(%d, 1) = %d records, next %d, %v; want 1 record, next %d", from, len(recs), next, err, want)
		}
	}

	tests := []struct {
		key        string
		unreadable bool
		value      string
		version    uint64
	}{
		{"a", false, `"A"`, 1},
		{"b", true, "", 1}, // its value is in the record at index 2
		{"c", true, "", 0}, // its kv state itself
		{"d", false, "not json", 1},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			kv, err := db.Reads().Get(tt.key)
			if err != nil {
				t.Fatalf("Get(%q) = %v, want no error", tt.key, err)
			}
			if (kv.Unreadable != nil) != tt.unreadable || string(kv.Value) != tt.value || kv.Version != tt.version || kv.Key != tt.key {
				t.Fatalf("Get(%q) = %+v, want unreadable %v, value %q, version %d", tt.key, kv, tt.unreadable, tt.value, tt.version)
			}
			if tt.unreadable && !errors.Is(kv.Unreadable, ErrCorrupt) {
				t.Fatalf("Get(%q).Unreadable = %v, want ErrCorrupt", tt.key, kv.Unreadable)
			}
		})
	}
}
