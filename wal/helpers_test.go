package wal

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// openT opens a log in dir and closes it when the test ends.
func openT(t testing.TB, dir string, cfg Config) *Log {
	t.Helper()
	l, err := Open(dir, cfg)
	if err != nil {
		t.Fatalf("Open(%q) = %v", dir, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// payloadFor returns a distinct payload of n bytes for record i.
func payloadFor(i, n int) []byte {
	p := make([]byte, n)
	for j := range p {
		p[j] = byte(i*131 + j*7 + 1)
	}
	copy(p, fmt.Sprintf("rec-%d:", i))
	return p
}

// appendN appends n records of size bytes, numbered from first, one Append
// each, and returns what it appended.
func appendN(t testing.TB, l *Log, first, n, size int) []Record {
	t.Helper()
	var recs []Record
	for i := first; i < first+n; i++ {
		p := payloadFor(i, size)
		seq, err := l.Append(context.Background(), p)
		if err != nil {
			t.Fatalf("Append(record %d) = %v", i, err)
		}
		recs = append(recs, Record{Seq: seq, Payload: p})
	}
	return recs
}

// checkPending fails the test unless l.Pending() equals want.
func checkPending(t testing.TB, l *Log, want []Record) {
	t.Helper()
	got := l.Pending()
	if len(got) != len(want) {
		t.Fatalf("Pending() has %d records %v, want %d %v", len(got), seqsOf(got), len(want), seqsOf(want))
	}
	for i := range got {
		if got[i].Seq != want[i].Seq || string(got[i].Payload) != string(want[i].Payload) {
			t.Fatalf("Pending()[%d] = seq %d %q, want seq %d %q", i, got[i].Seq, got[i].Payload, want[i].Seq, want[i].Payload)
		}
	}
	if s := l.Stats(); s.Pending != len(want) {
		t.Fatalf("Stats().Pending = %d, want %d", s.Pending, len(want))
	}
}

func seqsOf(recs []Record) []uint64 {
	seqs := make([]uint64, len(recs))
	for i, r := range recs {
		seqs[i] = r.Seq
	}
	return seqs
}

// segFiles returns the names of the segment files in dir, in order.
func segFiles(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if _, ok := parseSegName(e.Name()); ok {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names
}

// copyDir copies the regular files of src into a new temporary directory.
func copyDir(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// recordOffsets returns the offset of each data and done record in a
// segment file's bytes, which may end in zeros written ahead
// (Config.PreallocBytes). Sync marks are left out: tests number the records
// they appended.
func recordOffsets(t testing.TB, buf []byte) []int {
	t.Helper()
	var offs []int
	for off := segHeaderLen; off < len(buf) && !allZero(buf[off:]); {
		r, n, err := decodeRecord(buf[off:])
		if err != nil {
			t.Fatalf("decode record at %d: %v", off, err)
		}
		if r.typ != recSynced {
			offs = append(offs, off)
		}
		off += n
	}
	return offs
}

// syncMarks returns the offset and the named length of each sync mark in a
// segment file's bytes.
func syncMarks(t testing.TB, buf []byte) (offs []int, synced []int64) {
	t.Helper()
	for off := segHeaderLen; off < len(buf) && !allZero(buf[off:]); {
		r, n, err := decodeRecord(buf[off:])
		if err != nil {
			t.Fatalf("decode record at %d: %v", off, err)
		}
		if r.typ == recSynced {
			offs, synced = append(offs, off), append(synced, syncedLen(r))
		}
		off += n
	}
	return offs, synced
}

// recordsEnd returns the length of a segment file's bytes without the zeros
// written ahead of its records.
func recordsEnd(t testing.TB, buf []byte) int {
	t.Helper()
	end := segHeaderLen
	for end < len(buf) && !allZero(buf[end:]) {
		_, n, err := decodeRecord(buf[end:])
		if err != nil {
			t.Fatalf("decode record at %d: %v", end, err)
		}
		end += n
	}
	return end
}
