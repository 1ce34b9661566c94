package wal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// crashImage is a log left by a crash before Close: its files as the OS has
// them (written) and as of their last fsync (synced), to build what a power
// loss may leave from the two.
type crashImage struct {
	dir     string // the crashed log's directory, as written
	st      *syncTracker
	acked   []Record // records whose Append returned: fsynced
	lazy    []Record // records written after the last fsync, none synced
	syncEnd int      // the last segment's length at its last fsync: where the unsynced write starts
	seg     string   // the last segment's name
}

// newCrashImage appends 4 records with Append (each fsynced, and each but
// the last named by the sync mark that the next Append's write carries),
// then 4 with AppendBatchLazy in one write that begins with the sync mark
// of the fourth, and leaves the log open: the crash.
func newCrashImage(t *testing.T) crashImage {
	t.Helper()
	ci := crashImage{st: &syncTracker{synced: map[string][]byte{}}}
	ci.dir = t.TempDir()
	l, err := openFS(ci.dir, Config{}, faultFS{beforeSync: ci.st.beforeSync})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	ci.acked = appendN(t, l, 0, 4, 100)
	ci.seg = segName(segHeader{id: 1, firstSeq: 1})
	synced := ci.st.synced[ci.seg]
	ci.syncEnd = recordsEnd(t, synced)
	payloads := [][]byte{payloadFor(4, 100), payloadFor(5, 100), payloadFor(6, 100), payloadFor(7, 100)}
	seqs, err := l.AppendBatchLazy(context.Background(), payloads)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range seqs {
		ci.lazy = append(ci.lazy, Record{Seq: s, Payload: payloads[i]})
	}
	return ci
}

// written returns the last segment as the OS has it.
func (ci crashImage) written(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ci.dir, ci.seg))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// image writes seg as the last segment of a copy of the crashed log and
// returns the copy's directory and the segment's path.
func (ci crashImage) image(t *testing.T, seg []byte) (string, string) {
	t.Helper()
	dir := copyDir(t, ci.dir)
	path := filepath.Join(dir, ci.seg)
	if err := os.WriteFile(path, seg, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, path
}

// TestTornAfterSync opens power-loss images of a log whose last write, not
// fsynced, reached the disk in part: whatever follows the last record that a
// completed fsync covered is a torn tail, truncated with a warning that names
// the file, the offset and the bytes dropped; damage to data that a fsync
// covered stops Open with a *CorruptError naming the file and the offset.
func TestTornAfterSync(t *testing.T) {
	ci := newCrashImage(t)
	w := ci.written(t)
	end := recordsEnd(t, w)
	offs := recordOffsets(t, w) // the 8 data records
	lazyAt := offs[4]           // the first lazy record, after the write's sync mark
	markOffs, named := syncMarks(t, w)
	if len(markOffs) != 4 || markOffs[3] != ci.syncEnd || named[3] != int64(ci.syncEnd) {
		t.Fatalf("sync marks at %v naming %v; want 4, the last at %d naming it, at the start of the lazy write", markOffs, named, ci.syncEnd)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	garbage := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}

	torn := []struct {
		name   string
		image  func(b []byte) []byte
		tornAt int // the offset the warning must name
	}{
		{
			name:   "a hole of zeros after the last synced record",
			image:  func(b []byte) []byte { clear(b[lazyAt+30 : end]); return b },
			tornAt: lazyAt,
		},
		{
			name:   "a hole of zeros over the sync mark, then the write's records",
			image:  func(b []byte) []byte { clear(b[ci.syncEnd : ci.syncEnd+50]); return b },
			tornAt: ci.syncEnd,
		},
		{
			name:   "a valid record after a hole",
			image:  func(b []byte) []byte { clear(b[lazyAt:offs[6]]); return b },
			tornAt: lazyAt,
		},
		{
			name:   "garbage after the last synced record",
			image:  func(b []byte) []byte { copy(b[ci.syncEnd:], garbage(end-ci.syncEnd)); return b },
			tornAt: ci.syncEnd,
		},
		{
			name:   "garbage after the sync mark, then valid records",
			image:  func(b []byte) []byte { copy(b[lazyAt:], garbage(150)); return b },
			tornAt: lazyAt,
		},
		{
			name:   "the synced records alone, then garbage past the old end of the file",
			image:  func(b []byte) []byte { return append(b[:ci.syncEnd:ci.syncEnd], garbage(5000)...) },
			tornAt: ci.syncEnd,
		},
	}
	for _, tt := range torn {
		t.Run(tt.name, func(t *testing.T) {
			dir, path := ci.image(t, tt.image(bytes.Clone(w)))
			size := int64(len(tt.image(bytes.Clone(w))))
			var out bytes.Buffer
			l, err := Open(dir, Config{Logger: slog.New(slog.NewTextHandler(&out, nil))})
			if err != nil {
				t.Fatalf("Open() = %v, want the tail truncated", err)
			}
			checkPending(t, l, ci.acked)
			line := fmt.Sprintf(`level=WARN msg="torn tail truncated" component=wal file=%s offset=%d dropped_bytes=%d`, path, tt.tornAt, size-int64(tt.tornAt))
			if !strings.Contains(out.String(), line) {
				t.Fatalf("log is\n%s\nwant a line with\n%s", out.String(), line)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			checkRecovered(t, dir, Config{}, ci.acked, 5)
		})
	}

	// Records fsynced but named by no sync mark (the mark's write never
	// reached the disk) sit in the tail, and are kept if they read back
	// whole: the synced image alone.
	t.Run("synced records whose mark was lost", func(t *testing.T) {
		dir, _ := ci.image(t, ci.st.synced[ci.seg])
		var out bytes.Buffer
		l, err := Open(dir, Config{Logger: slog.New(slog.NewTextHandler(&out, nil))})
		if err != nil {
			t.Fatal(err)
		}
		checkPending(t, l, ci.acked)
		if strings.Contains(out.String(), "torn") {
			t.Fatalf("Open() of a segment ending in zeros logged\n%s", out.String())
		}
		l.Close()
	})

	// The whole lazy write reached the disk: nothing is torn.
	t.Run("the whole write", func(t *testing.T) {
		dir, _ := ci.image(t, bytes.Clone(w))
		checkRecovered(t, dir, Config{}, append(append([]Record{}, ci.acked...), ci.lazy...), 9)
	})

	corrupt := []struct {
		name   string
		image  func(b []byte) []byte
		offset int
		err    error
	}{
		{
			name:   "a flipped bit inside synced data",
			image:  func(b []byte) []byte { b[offs[1]+recHeaderLen+7] ^= 0x10; return b },
			offset: offs[1],
			err:    errChecksum,
		},
		{
			name:   "a flipped bit in the last synced record, named by the lazy write's mark",
			image:  func(b []byte) []byte { b[offs[3]+recHeaderLen] ^= 1; return b },
			offset: offs[3],
			err:    errChecksum,
		},
		{
			name:   "synced records zeroed, with a hole after them too",
			image:  func(b []byte) []byte { clear(b[offs[2]:offs[3]]); clear(b[lazyAt:offs[6]]); return b },
			offset: offs[2],
			err:    errBadHeader,
		},
	}
	for _, tt := range corrupt {
		t.Run(tt.name, func(t *testing.T) {
			dir, path := ci.image(t, tt.image(bytes.Clone(w)))
			l, err := Open(dir, Config{})
			if err == nil {
				l.Close()
				t.Fatalf("Open() = nil error, want *CorruptError at offset %d", tt.offset)
			}
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.File != path || ce.Offset != int64(tt.offset) || !errors.Is(err, tt.err) {
				t.Fatalf("Open() = %v, want a *CorruptError at %s offset %d wrapping %v", err, path, tt.offset, tt.err)
			}
			if !errors.Is(err, tt.err) {
				t.Fatalf("Open() = %v, want it to wrap %v", err, tt.err)
			}
		})
	}
}

// TestPartialWriteback acts out power losses in which the unsynced part of
// the last segment reaches the disk in random 4 KiB pages, as a disk's
// writeback can leave it, after a random mix of synced and lazy appends and
// done-marks across rotations. Open must never refuse such an image, and
// must keep every record whose Append returned.
func TestPartialWriteback(t *testing.T) {
	const page = 4096
	for round := range 40 {
		t.Run(fmt.Sprintf("round %d", round), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(round), 7))
			st := &syncTracker{synced: map[string][]byte{}}
			dir := t.TempDir()
			cfg := Config{SegmentBytes: 64 << 10, PreallocBytes: 16 << 10}
			l, err := openFS(dir, cfg, faultFS{beforeSync: st.beforeSync})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			var acked []Record
			done := map[uint64]bool{}
			ctx := context.Background()
			for i := range 60 + rng.IntN(200) {
				p := payloadFor(i, 50+rng.IntN(900))
				switch rng.IntN(4) {
				case 0:
					seq, err := l.Append(ctx, p)
					if err != nil {
						t.Fatal(err)
					}
					acked = append(acked, Record{Seq: seq, Payload: p})
				case 1, 2:
					if _, err := l.AppendBatchLazy(ctx, [][]byte{p}); err != nil {
						t.Fatal(err)
					}
				case 3:
					if len(acked) > 0 {
						s := acked[rng.IntN(len(acked))].Seq
						done[s] = true
						l.MarkDone(s)
					}
				}
			}
			// A last run of lazy appends that no fsync covers, over many
			// pages: the part a power loss leaves in pieces.
			for i := range 10 + rng.IntN(60) {
				if _, err := l.AppendBatchLazy(ctx, [][]byte{payloadFor(1000+i, 50+rng.IntN(900))}); err != nil {
					t.Fatal(err)
				}
			}
			names := segFiles(t, dir)
			last := names[len(names)-1]
			cp := st.powerLoss(t, dir)
			w, err := os.ReadFile(filepath.Join(dir, last))
			if err != nil {
				t.Fatal(err)
			}
			img := st.synced[last]
			if rng.IntN(2) == 0 { // the new size reached the disk
				img = append(img, make([]byte, max(len(w)-len(img), 0))...)
			}
			for off := 0; off < len(img); off += page {
				if rng.IntN(2) == 0 && off < len(w) {
					copy(img[off:min(off+page, len(img))], w[off:])
				}
			}
			if err := os.WriteFile(filepath.Join(cp, last), img, 0o644); err != nil {
				t.Fatal(err)
			}
			rl, err := Open(cp, Config{SegmentBytes: cfg.SegmentBytes})
			if err != nil {
				t.Fatalf("Open() of a partly written back image = %v", err)
			}
			defer rl.Close()
			pend := map[uint64][]byte{}
			for _, r := range rl.Pending() {
				pend[r.Seq] = r.Payload
			}
			for _, r := range acked {
				if p, ok := pend[r.Seq]; ok && !bytes.Equal(p, r.Payload) {
					t.Fatalf("record %d came back as %q, was %q", r.Seq, p, r.Payload)
				} else if !ok && !done[r.Seq] {
					t.Fatalf("acknowledged record %d lost (pending %d records, next seq %d)", r.Seq, len(pend), rl.Stats().NextSeq)
				}
			}
			if n := rl.Stats().NextSeq; len(acked) > 0 && n <= acked[len(acked)-1].Seq {
				t.Fatalf("NextSeq %d after recovery, want past the last acknowledged %d", n, acked[len(acked)-1].Seq)
			}
		})
	}
}

// TestOpenWithoutSyncMarks opens a log written without sync marks, as the
// format before them (and Config.NoSync) writes it: it opens with every
// record, its last segment read as a tail; the first write after Open
// carries a mark that names all of it, so from then on damage there is
// refused.
func TestOpenWithoutSyncMarks(t *testing.T) {
	fx := newFixture(t, Config{NoSync: true}, 5, 2)
	path, buf := fx.lastSeg(t, fx.dir)
	if offs, _ := syncMarks(t, buf); len(offs) != 0 {
		t.Fatalf("a log written with NoSync has sync marks at %v", offs)
	}
	l := openT(t, fx.dir, Config{})
	checkPending(t, l, fx.want)
	if _, err := l.Append(context.Background(), []byte("sixth")); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	after := readRecords(t, path)
	if _, named := syncMarks(t, after); len(named) == 0 || named[0] != int64(len(buf)) {
		t.Fatalf("sync marks after the first append name %v, want the first to name the old records' %d bytes", named, len(buf))
	}
	offs := recordOffsets(t, after)
	after[offs[1]+recHeaderLen] ^= 1
	if err := os.WriteFile(path, after, 0o644); err != nil {
		t.Fatal(err)
	}
	var ce *CorruptError
	if _, err := Open(fx.dir, Config{}); !errors.As(err, &ce) || ce.Offset != int64(offs[1]) {
		t.Fatalf("Open() with a flipped bit in a record the mark names = %v, want a *CorruptError at offset %d", err, offs[1])
	}
}
