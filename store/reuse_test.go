package store

import (
	"testing"

	"github.com/txlog/txlog/txid"
)

// TestIdemBatchLastLookup: a batch's lookup of a key it looked up before
// sees the batch's changes since (the last lookup is remembered only until
// a change), and a batch made after a commit, in the last batch's maps,
// starts empty.
func TestIdemBatchLastLookup(t *testing.T) {
	x := newIdemIndex()
	records := map[txid.ID]string{}
	keyOf := func(id txid.ID) (string, bool, error) {
		k, ok := records[id]
		return k, ok, nil
	}
	b := x.batch()
	if id, ok := b.candidate("a"); ok {
		t.Fatalf("empty index: a found %d", id)
	}
	records[1] = "a"
	if err := b.insert("a", 1, keyOf); err != nil {
		t.Fatal(err)
	}
	if id, ok := b.candidate("a"); !ok || id != 1 {
		t.Fatalf("after the insert: a found %d, %v; want 1", id, ok)
	}
	b.remove("a", 1)
	if id, ok := b.candidate("a"); ok {
		t.Fatalf("after the remove: a found %d", id)
	}
	records[2] = "a"
	if err := b.insert("a", 2, keyOf); err != nil {
		t.Fatal(err)
	}
	x.commit(b)
	b = x.batch()
	if len(b.hashes) != 0 || len(b.exact) != 0 {
		t.Fatalf("a batch after a commit holds %v %v, want nothing", b.hashes, b.exact)
	}
	if id, ok := b.candidate("a"); !ok || id != 2 {
		t.Fatalf("next batch: a found %d, %v; want 2", id, ok)
	}
	b.remove("a", 2)
	x.commit(b)
	if id, ok := x.batch().candidate("a"); ok {
		t.Fatalf("after a committed remove: a found %d", id)
	}
}

// TestKVBatchReused: a batch made after a commit, in the last batch's map,
// starts empty and counts its new keys afresh.
func TestKVBatchReused(t *testing.T) {
	ov := newKVOverlay()
	b := ov.batch()
	b.set("a", kvState{version: 1, modIndex: 1, value: []byte("1")}, false)
	b.set("b", kvState{version: 1, modIndex: 1, value: []byte("1")}, false)
	ov.commit(b)
	b = ov.batch()
	if len(b.keys) != 0 || b.newKeys != 0 {
		t.Fatalf("a batch after a commit holds %v (%d new)", b.keys, b.newKeys)
	}
	if s, ok := ov.get("a"); !ok || s.version != 1 {
		t.Fatalf("committed a = %+v, %v", s, ok)
	}
	ver, overlaid, err := b.version(nil, "a")
	if err != nil || ver != 1 || !overlaid {
		t.Fatalf("version(a) = %d, %v, %v; want 1, overlaid", ver, overlaid, err)
	}
	b.set("a", kvState{version: 2, modIndex: 2, value: []byte("2")}, overlaid)
	if b.newKeys != 0 {
		t.Fatalf("a key the overlay has counted as new: %d", b.newKeys)
	}
	b.set("c", kvState{version: 1, modIndex: 2, value: []byte("3")}, false)
	ov.commit(b)
	if len(ov.keys) != 3 {
		t.Fatalf("overlay keys = %d, want 3", len(ov.keys))
	}
}
