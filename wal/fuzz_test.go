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
// zeros written ahead of them. Open must not panic; it
// either fails with a *CorruptError or gives a log that is consistent:
// records in order, the valid ones intact, and appends that survive a
// reopen.
func FuzzRecover(f *testing.F) {
	valid := fuzzLog(f, f.TempDir())
	seg, err := os.ReadFile(filepath.Join(valid, segName(segHeader{id: 1, firstSeq: 1})))
	if err != nil {
		f.Fatal(err)
	}
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

	cfg := Config{NoSync: true, SegmentBytes: MinSegmentBytes}
	f.Fuzz(func(t *testing.T, data []byte, asSegment bool) {
		dir := t.TempDir()
		var orig []Record // records that must survive intact
		path := filepath.Join(dir, segName(segHeader{id: 1, firstSeq: 1}))
		if asSegment {
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
		} else {
			l, err := Open(fuzzLog(t, dir), cfg)
			if err != nil {
				t.Fatal(err)
			}
			orig = l.Pending()
			l.Close()
			buf, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			fl, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			fl.WriteAt(data, int64(recordsEnd(t, buf)))
			fl.Close()
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

// fuzzLog writes a small valid log into dir: records 1 to 3, with 2 done,
// and zeros after them up to MinSegmentBytes.
func fuzzLog(t testing.TB, dir string) string {
	l, err := Open(dir, Config{NoSync: true, SegmentBytes: MinSegmentBytes})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 0, 3, 12)
	l.MarkDone(2)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}
