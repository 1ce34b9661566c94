package wal

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecodeRecord checks that decodeRecord never panics, that what it
// accepts re-encodes to the same bytes, and that any payload round-trips.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(appendRecord(nil, record{typ: recData, seq: 1, payload: []byte("hello")}))
	f.Add(appendRecord(nil, record{typ: recData, seq: 1 << 40}))
	f.Add(appendDone(nil, []uint64{1, 2, 3}))
	f.Add(appendRecord(nil, record{typ: recData, seq: 7, payload: []byte("torn")})[:22])
	f.Add(make([]byte, recHeaderLen))
	f.Add([]byte{})
	f.Add(appendSynced(nil, segHeaderLen))
	f.Add(appendSynced(nil, 1<<40))
	f.Add(appendRecord(nil, record{typ: recSynced, payload: make([]byte, 16)}))
	f.Add(appendRecord(nil, record{typ: recSynced, seq: 3, payload: make([]byte, 8)}))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, n, err := decodeRecord(data)
		if err != nil {
			if !errors.Is(err, errShort) && !errors.Is(err, errBadHeader) && !errors.Is(err, errChecksum) {
				t.Fatalf("decodeRecord() = %v, not one of its documented errors", err)
			}
		} else {
			if n < recHeaderLen || n > len(data) {
				t.Fatalf("decodeRecord() length %d outside [%d, %d]", n, recHeaderLen, len(data))
			}
			if enc := appendRecord(nil, r); !bytes.Equal(enc, data[:n]) {
				t.Fatalf("re-encoded record %x, decoded from %x", enc, data[:n])
			}
		}

		want := record{typ: recData, seq: uint64(len(data)) + 1, payload: data}
		enc := appendRecord(nil, want)
		got, n, err := decodeRecord(enc)
		if err != nil || n != len(enc) || got.seq != want.seq || got.typ != want.typ || !bytes.Equal(got.payload, data) {
			t.Fatalf("round trip of %x: got %+v, %d, %v", data, got, n, err)
		}
	})
}

// FuzzRecover feeds Open arbitrary bytes, either as a whole segment file or
// written after the records of the last segment of a valid log, over the
// zeros written ahead of them. Open must not panic; it either fails with a
// *CorruptError or gives a log that is consistent: records in order, the
// valid ones intact, and appends that survive a reopen. The valid log's
// records are all named by its last sync mark, so whatever follows them,
// Open never drops one of them: it keeps them or refuses.
func FuzzRecover(f *testing.F) {
	seg := fuzzLog(f, f.TempDir())
	end := recordsEnd(f, seg)
	f.Add(seg, true)
	f.Add(seg[:end], true)
	f.Add(seg[:segHeaderLen], true)
	f.Add(seg[:end-3], true)
	f.Add(append(seg[:end-3:end-3], make([]byte, 64)...), true)
	f.Add([]byte{}, true)
	f.Add([]byte("txlogwal"), true)
	f.Add([]byte{}, false)
	f.Add(make([]byte, 64), false)
	f.Add(appendRecord(nil, record{typ: recData, seq: 4, payload: []byte("next")}), false)
	f.Add(appendRecord(nil, record{typ: recData, seq: 4, payload: []byte("next record")})[:30], false)
	f.Add(appendDone(nil, []uint64{1, 3}), false)
	f.Add(append(appendDone(nil, []uint64{2}), 0xff, 0xff), false)
	// Sync marks after the valid records (at offset end): one that names
	// what precedes it, one after a hole that names the hole (corrupt), one
	// after a hole that names only the valid records (torn), one that names
	// bytes past itself, and a valid record after a hole.
	data4 := appendRecord(nil, record{typ: recData, seq: 4, payload: []byte("next")})
	f.Add(appendSynced(bytes.Clone(data4), int64(end+len(data4))), false)
	hole := make([]byte, 40)
	f.Add(appendSynced(append(bytes.Clone(hole), data4...), int64(end+len(hole)+len(data4))), false)
	f.Add(appendSynced(append(bytes.Clone(hole), data4...), int64(end)), false)
	f.Add(appendSynced(nil, int64(end+1)), false)
	f.Add(append(bytes.Clone(hole), data4...), false)

	cfg := Config{NoSync: true, SegmentBytes: MinSegmentBytes}
	f.Fuzz(func(t *testing.T, data []byte, asSegment bool) {
		dir := t.TempDir()
		var orig []Record // records that must survive intact
		path := filepath.Join(dir, segName(segHeader{id: 1, firstSeq: 1}))
		img := data
		if !asSegment {
			img = append(bytes.Clone(seg), make([]byte, max(end+len(data)-len(seg), 0))...)
			copy(img[end:], data)
			orig = []Record{{Seq: 1, Payload: payloadFor(0, 12)}, {Seq: 3, Payload: payloadFor(2, 12)}}
		}
		if err := os.WriteFile(path, img, 0o644); err != nil {
			t.Fatal(err)
		}

		l, err := Open(dir, cfg)
		if err != nil {
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("Open() = %v, want nil or a *CorruptError", err)
			}
			return
		}
		defer l.Close()
		pend := l.Pending()
		next := l.Stats().NextSeq
		for i, r := range pend {
			if (i > 0 && r.Seq <= pend[i-1].Seq) || r.Seq >= next {
				t.Fatalf("Pending() seqs %v not increasing and below NextSeq %d", seqsOf(pend), next)
			}
		}
		if !asSegment && next < 4 {
			t.Fatalf("NextSeq %d after recovery: records named by a sync mark were dropped", next)
		}
		for _, o := range orig {
			for _, r := range pend {
				if r.Seq == o.Seq && !bytes.Equal(r.Payload, o.Payload) {
					t.Fatalf("record %d is %q after recovery, was %q", r.Seq, r.Payload, o.Payload)
				}
			}
		}
		seq, err := l.Append(context.Background(), []byte("new"))
		if err != nil || seq != next {
			t.Fatalf("Append() = %d, %v; want %d", seq, err, next)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l, err = Open(dir, cfg)
		if err != nil {
			t.Fatalf("Open() after recovery and an append = %v", err)
		}
		defer l.Close() // the first defer closes the first Log only
		want := append(pend, Record{Seq: seq, Payload: []byte("new")})
		checkPending(t, l, want)
	})
}

// fuzzLog writes a small valid log into dir, fsync on: records 1 to 3, with
// 2 done, and zeros after them up to MinSegmentBytes. Close writes the done
// record after a sync mark that names all three records. It returns the
// segment file's bytes.
func fuzzLog(t testing.TB, dir string) []byte {
	l, err := Open(dir, Config{SegmentBytes: MinSegmentBytes})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 0, 3, 12)
	l.MarkDone(2)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	seg, err := os.ReadFile(filepath.Join(dir, segName(segHeader{id: 1, firstSeq: 1})))
	if err != nil {
		t.Fatal(err)
	}
	if _, synced := syncMarks(t, seg); len(synced) == 0 || synced[len(synced)-1] < int64(recordOffsets(t, seg)[2]+recHeaderLen+12) {
		t.Fatalf("the valid log's sync marks name %v, want the last to name all three records", synced)
	}
	return seg
}
