package wal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixture is a closed log on disk made by a test, to be damaged by copies.
type fixture struct {
	dir  string
	recs []Record // every record appended, done or not
	want []Record // what Pending returns before any damage
	cfg  Config
}

// lastSeg returns the path and records of the fixture's last segment: its
// content without the zeros written ahead, as a segment written with
// PreallocBytes < 0 would be. Tests that damage the tail write it back so.
func (fx fixture) lastSeg(t *testing.T, dir string) (string, []byte) {
	t.Helper()
	names := segFiles(t, dir)
	path := filepath.Join(dir, names[len(names)-1])
	return path, readRecords(t, path)
}

// readRecords returns a segment file's content without the zeros written
// ahead of its records.
func readRecords(t *testing.T, path string) []byte {
	t.Helper()
	buf, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return buf[:recordsEnd(t, buf)]
}

// newFixture appends n records of 40 bytes to a new log, marks done, and
// closes it.
func newFixture(t *testing.T, cfg Config, n int, done ...uint64) fixture {
	t.Helper()
	fx := fixture{dir: t.TempDir(), cfg: cfg}
	l := openT(t, fx.dir, cfg)
	fx.recs = appendN(t, l, 0, n, 40)
	if err := l.MarkDone(done...); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, r := range fx.recs {
		if !contains(done, r.Seq) {
			fx.want = append(fx.want, r)
		}
	}
	return fx
}

// checkRecovered opens dir, expects want pending, appends one record and
// expects it to get nextSeq, and reopens.
func checkRecovered(t *testing.T, dir string, cfg Config, want []Record, nextSeq uint64) {
	t.Helper()
	l, err := Open(dir, cfg)
	if err != nil {
		t.Fatalf("Open() = %v", err)
	}
	checkPending(t, l, want)
	p := []byte("after recovery")
	seq, err := l.Append(context.Background(), p)
	if err != nil {
		t.Fatalf("Append() after recovery = %v", err)
	}
	if seq != nextSeq {
		t.Fatalf("Append() after recovery got seq %d, want %d", seq, nextSeq)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	l, err = Open(dir, cfg)
	if err != nil {
		t.Fatalf("second Open() = %v", err)
	}
	defer l.Close()
	checkPending(t, l, append(want[:len(want):len(want)], Record{Seq: seq, Payload: p}))
}

// TestTornTail cuts the last segment at every byte offset inside its last
// record, as a crash in the middle of a write leaves it.
func TestTornTail(t *testing.T) {
	cfg := Config{NoSync: true}
	tests := []struct {
		name string
		fx   fixture
		want func(fixture) []Record // pending once the last record is gone
	}{
		{
			name: "last record is data",
			fx:   newFixture(t, cfg, 5),
			want: func(fx fixture) []Record { return fx.recs[:4] },
		},
		{
			// A lost done-mark only means a replay.
			name: "last record is a done-mark",
			fx:   newFixture(t, cfg, 5, 2, 4),
			want: func(fx fixture) []Record { return fx.recs },
		},
	}
	for _, tt := range tests {
		_, buf := tt.fx.lastSeg(t, tt.fx.dir)
		offs := recordOffsets(t, buf)
		last := offs[len(offs)-1]
		for cut := last; cut < len(buf); cut++ {
			t.Run(fmt.Sprintf("%s/cut at %d", tt.name, cut), func(t *testing.T) {
				dir := copyDir(t, tt.fx.dir)
				path, _ := tt.fx.lastSeg(t, dir)
				if err := os.Truncate(path, int64(cut)); err != nil {
					t.Fatal(err)
				}
				checkRecovered(t, dir, cfg, tt.want(tt.fx), 5+1-uint64(len(tt.fx.recs)-len(tt.want(tt.fx))))
			})
		}
	}
}

// TestTornTailLogs checks that truncating a torn tail is logged with the
// file and the offset.
func TestTornTailLogs(t *testing.T) {
	fx := newFixture(t, Config{NoSync: true}, 3)
	path, buf := fx.lastSeg(t, fx.dir)
	last := recordOffsets(t, buf)[2]
	cut := len(buf) - 5
	if err := os.Truncate(path, int64(cut)); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	l := openT(t, fx.dir, Config{Logger: slog.New(slog.NewTextHandler(&out, nil))})
	checkPending(t, l, fx.recs[:2])
	line := fmt.Sprintf(`level=WARN msg="torn tail truncated" component=wal file=%s offset=%d dropped_bytes=%d`, path, last, cut-last)
	if !strings.Contains(out.String(), line) {
		t.Fatalf("log is\n%s\nwant a line with\n%s", out.String(), line)
	}
}

// TestTornHeader cuts a segment inside its header, as a crash while
// creating the segment leaves it.
func TestTornHeader(t *testing.T) {
	cfg := Config{NoSync: true, SegmentBytes: 1024}
	tests := []struct {
		name string
		n    int // records appended; 16 fill the first segment
		want int // records left once the last segment is cut
	}{
		{"only segment", 0, 0},
		{"after a full segment", 17, 16},
	}
	for _, tt := range tests {
		fx := newFixture(t, cfg, tt.n)
		for cut := range segHeaderLen {
			t.Run(fmt.Sprintf("%s/cut at %d", tt.name, cut), func(t *testing.T) {
				dir := copyDir(t, fx.dir)
				path, _ := fx.lastSeg(t, dir)
				if err := os.Truncate(path, int64(cut)); err != nil {
					t.Fatal(err)
				}
				checkRecovered(t, dir, cfg, fx.recs[:tt.want], uint64(tt.want+1))
			})
		}
	}
}

// TestCorruptLastRecord flips each byte of the last record in turn: with
// nothing valid after it, that is a torn tail too.
func TestCorruptLastRecord(t *testing.T) {
	cfg := Config{NoSync: true}
	fx := newFixture(t, cfg, 5)
	_, buf := fx.lastSeg(t, fx.dir)
	offs := recordOffsets(t, buf)
	for i := offs[len(offs)-1]; i < len(buf); i++ {
		t.Run(fmt.Sprintf("flip byte %d", i), func(t *testing.T) {
			dir := copyDir(t, fx.dir)
			path, b := fx.lastSeg(t, dir)
			b[i] ^= 0xff
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			checkRecovered(t, dir, cfg, fx.recs[:4], 5)
		})
	}
}

// TestCorruptMiddle damages records that a completed fsync covered: in a
// segment that is not the last, or in the last one before a sync mark that
// names them. Open must refuse with the file and the offset.
func TestCorruptMiddle(t *testing.T) {
	cfg := Config{NoSync: true, SegmentBytes: 1024}
	// one segment, 5 records, each of the first 4 covered by the sync mark
	// that the next Append's write carries
	one := newFixture(t, Config{SegmentBytes: 1024}, 5)
	two := newFixture(t, cfg, 20)    // 16 records in segment 1, 4 in segment 2
	seg1 := segName(segHeader{1, 1}) // both fixtures' first segment
	seg2 := segName(segHeader{2, 17})
	tests := []struct {
		name    string
		fx      fixture
		file    string
		damage  func(b []byte, offs []int) []byte
		offset  func(offs []int) int64 // the offset the error must name
		wantErr error
	}{
		{
			name:    "flipped payload byte of record 2 of 5",
			fx:      one,
			file:    seg1,
			damage:  func(b []byte, offs []int) []byte { b[offs[2]+recHeaderLen+3] ^= 1; return b },
			offset:  func(offs []int) int64 { return int64(offs[2]) },
			wantErr: errChecksum,
		},
		{
			name:    "flipped checksum of the first record",
			fx:      one,
			file:    seg1,
			damage:  func(b []byte, offs []int) []byte { b[offs[0]] ^= 0x80; return b },
			offset:  func(offs []int) int64 { return int64(offs[0]) },
			wantErr: errChecksum,
		},
		{
			name:    "zeroed record 1",
			fx:      one,
			file:    seg1,
			damage:  func(b []byte, offs []int) []byte { clear(b[offs[1]:offs[2]]); return b },
			offset:  func(offs []int) int64 { return int64(offs[1]) },
			wantErr: errBadHeader,
		},
		{
			name:    "length of record 3 past the end",
			fx:      one,
			file:    seg1,
			damage:  func(b []byte, offs []int) []byte { b[offs[3]+5] = 0x10; return b },
			offset:  func(offs []int) int64 { return int64(offs[3]) },
			wantErr: errShort,
		},
		{
			name:    "torn tail of a segment that is not the last",
			fx:      two,
			file:    seg1,
			damage:  func(b []byte, offs []int) []byte { return b[:len(b)-3] },
			offset:  func(offs []int) int64 { return int64(offs[len(offs)-1]) },
			wantErr: errShort,
		},
		{
			// Only the last segment may end in zeros: rotation cuts them.
			name:    "zeros after the records of a segment that is not the last",
			fx:      two,
			file:    seg1,
			damage:  func(b []byte, offs []int) []byte { return append(b, make([]byte, 100)...) },
			offset:  func(offs []int) int64 { return -1 },
			wantErr: errBadHeader,
		},
		{
			name:    "flipped header of a segment that is not the last",
			fx:      two,
			file:    seg1,
			damage:  func(b []byte, offs []int) []byte { b[20] ^= 1; return b },
			offset:  func(offs []int) int64 { return 0 },
			wantErr: errBadSegment,
		},
		{
			name:    "flipped header of the last segment, records after it",
			fx:      two,
			file:    seg2,
			damage:  func(b []byte, offs []int) []byte { b[0] ^= 1; return b },
			offset:  func(offs []int) int64 { return 0 },
			wantErr: errBadSegment,
		},
		{
			name: "valid record with a seq out of order in a segment that is not the last",
			fx:   two,
			file: seg1,
			damage: func(b []byte, offs []int) []byte {
				return appendRecord(b, record{typ: recData, seq: 18, payload: []byte("x")})
			},
			offset:  func(offs []int) int64 { return -1 }, // the end of the original file
			wantErr: errSequence,
		},
		{
			name:    "done-mark for a seq not yet written in a segment that is not the last",
			fx:      two,
			file:    seg1,
			damage:  func(b []byte, offs []int) []byte { return appendDone(b, []uint64{17}) },
			offset:  func(offs []int) int64 { return -1 },
			wantErr: errBadMark,
		},
		{
			name: "valid record with a seq out of order, then a sync mark naming it",
			fx:   one,
			file: seg1,
			damage: func(b []byte, offs []int) []byte {
				b = appendRecord(b, record{typ: recData, seq: 7, payload: []byte("x")})
				return appendSynced(b, int64(len(b)))
			},
			offset:  func(offs []int) int64 { return -1 },
			wantErr: errSequence,
		},
		{
			name: "done-mark for a seq not yet written, then a sync mark naming it",
			fx:   one,
			file: seg1,
			damage: func(b []byte, offs []int) []byte {
				b = appendDone(b, []uint64{6})
				return appendSynced(b, int64(len(b)))
			},
			offset:  func(offs []int) int64 { return -1 },
			wantErr: errBadMark,
		},
		{
			name:    "sync mark naming bytes past itself, in a segment that is not the last",
			fx:      two,
			file:    seg1,
			damage:  func(b []byte, offs []int) []byte { return appendSynced(b, int64(len(b)+1)) },
			offset:  func(offs []int) int64 { return -1 },
			wantErr: errBadSynced,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyDir(t, tt.fx.dir)
			path := filepath.Join(dir, tt.file)
			buf := readRecords(t, path)
			offs := recordOffsets(t, buf)
			want := tt.offset(offs)
			if want < 0 {
				want = int64(len(buf))
			}
			if err := os.WriteFile(path, tt.damage(buf, offs), 0o644); err != nil {
				t.Fatal(err)
			}
			l, err := Open(dir, tt.fx.cfg)
			if err == nil {
				l.Close()
				t.Fatalf("Open() = nil error, want *CorruptError at %s offset %d", tt.file, want)
			}
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("Open() = %v, want a *CorruptError", err)
			}
			if ce.File != path || ce.Offset != want {
				t.Errorf("CorruptError at %s offset %d, want %s offset %d", ce.File, ce.Offset, path, want)
			}
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("Open() = %v, want it to wrap %v", err, tt.wantErr)
			}
			if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, fmt.Sprintf("offset %d", want)) {
				t.Errorf("Open() error %q does not name file %s and offset %d", msg, path, want)
			}
		})
	}
}

// TestZeroTail covers the zeros the writer puts ahead of its records
// (Config.PreallocBytes): the last segment ends in them, Open reads them as
// its clean end and appends over them, a record torn inside them is a torn
// tail, and rotation cuts them off the segment it closes.
func TestZeroTail(t *testing.T) {
	t.Run("clean end", func(t *testing.T) {
		fx := newFixture(t, Config{NoSync: true}, 5, 2)
		path, recs := fx.lastSeg(t, fx.dir)
		buf, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if want := segHeaderLen + DefaultPreallocBytes; len(buf) < want || !allZero(buf[len(recs):]) {
			t.Fatalf("segment has %d bytes after %d of records, want zeros up to at least %d", len(buf), len(recs), want)
		}
		var out bytes.Buffer
		l := openT(t, fx.dir, Config{NoSync: true, Logger: slog.New(slog.NewTextHandler(&out, nil))})
		checkPending(t, l, fx.want)
		if strings.Contains(out.String(), "torn") {
			t.Fatalf("Open() of a segment ending in zeros logged\n%s", out.String())
		}
		seq, err := l.Append(context.Background(), []byte("over the zeros"))
		if err != nil || seq != 6 {
			t.Fatalf("Append() = %d, %v; want 6", seq, err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		after, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(after) != len(buf) {
			t.Fatalf("segment grew from %d to %d bytes: the append did not overwrite the zeros", len(buf), len(after))
		}
		checkPending(t, openT(t, fx.dir, Config{NoSync: true}), append(fx.want, Record{Seq: 6, Payload: []byte("over the zeros")}))
	})

	t.Run("torn record in the zeros", func(t *testing.T) {
		cfg := Config{NoSync: true}
		fx := newFixture(t, cfg, 5)
		_, recs := fx.lastSeg(t, fx.dir)
		offs := recordOffsets(t, recs)
		for cut := offs[len(offs)-1]; cut < len(recs); cut++ {
			t.Run(fmt.Sprintf("cut at %d", cut), func(t *testing.T) {
				dir := copyDir(t, fx.dir)
				path, _ := fx.lastSeg(t, dir)
				buf, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				clear(buf[cut:len(recs)]) // the record's end never reached the disk
				if err := os.WriteFile(path, buf, 0o644); err != nil {
					t.Fatal(err)
				}
				checkRecovered(t, dir, cfg, fx.recs[:4], 5)
			})
		}
	})

	t.Run("rotation cuts the zeros", func(t *testing.T) {
		cfg := Config{NoSync: true, SegmentBytes: 4096, PreallocBytes: 1024}
		fx := newFixture(t, cfg, 100)
		names := segFiles(t, fx.dir)
		if len(names) < 2 {
			t.Fatalf("%d segments, want a rotation", len(names))
		}
		for i, name := range names {
			buf, err := os.ReadFile(filepath.Join(fx.dir, name))
			if err != nil {
				t.Fatal(err)
			}
			end := recordsEnd(t, buf)
			if last := i == len(names)-1; !last && end != len(buf) {
				t.Errorf("segment %s has %d bytes after its records, want none: it is not the last", name, len(buf)-end)
			} else if last && (len(buf) <= end || len(buf) > int(cfg.SegmentBytes)) {
				t.Errorf("last segment %s has %d bytes, %d of records; want zeros after them, within SegmentBytes", name, len(buf), end)
			}
		}
		checkRecovered(t, fx.dir, cfg, fx.recs, 101)
	})

	t.Run("no zeros when PreallocBytes is negative", func(t *testing.T) {
		fx := newFixture(t, Config{NoSync: true, PreallocBytes: -1}, 5)
		path, recs := fx.lastSeg(t, fx.dir)
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() != int64(len(recs)) {
			t.Fatalf("segment has %d bytes, %d of records; want no zeros", fi.Size(), len(recs))
		}
	})

	// A log written without zeros, as before they existed, gets them at its
	// next append.
	t.Run("zeros after a log without them", func(t *testing.T) {
		fx := newFixture(t, Config{NoSync: true, PreallocBytes: -1}, 5)
		path, _ := fx.lastSeg(t, fx.dir)
		l := openT(t, fx.dir, Config{NoSync: true})
		checkPending(t, l, fx.want)
		if _, err := l.Append(context.Background(), []byte("sixth")); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		buf, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if end := recordsEnd(t, buf); len(buf) <= end || !allZero(buf[end:]) {
			t.Fatalf("segment has %d bytes, %d of records; want zeros after them", len(buf), end)
		}
		checkPending(t, openT(t, fx.dir, Config{NoSync: true}), append(fx.want, Record{Seq: 6, Payload: []byte("sixth")}))
	})
}
