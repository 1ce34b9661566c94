package wal

import (
	"cmp"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestAppendReopenPending(t *testing.T) {
	tests := []struct {
		name  string
		n     int
		size  int
		batch bool
	}{
		{"empty log", 0, 0, false},
		{"one record", 1, 100, false},
		{"empty payload", 3, 0, false},
		{"ten records", 10, 300, false},
		{"one batch", 10, 300, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			l := openT(t, dir, Config{})
			var want []Record
			if tt.batch {
				var ps [][]byte
				for i := range tt.n {
					ps = append(ps, payloadFor(i, tt.size))
				}
				seqs, err := l.AppendBatch(context.Background(), ps)
				if err != nil {
					t.Fatalf("AppendBatch() = %v", err)
				}
				for i, s := range seqs {
					want = append(want, Record{Seq: s, Payload: ps[i]})
				}
			} else {
				want = appendN(t, l, 0, tt.n, tt.size)
			}
			for i, r := range want {
				if r.Seq != uint64(i+1) {
					t.Fatalf("record %d got seq %d, want %d", i, r.Seq, i+1)
				}
			}
			checkPending(t, l, want)
			if err := l.Close(); err != nil {
				t.Fatalf("Close() = %v", err)
			}

			l = openT(t, dir, Config{})
			checkPending(t, l, want)
			more := appendN(t, l, tt.n, 2, tt.size)
			if more[0].Seq != uint64(tt.n+1) {
				t.Fatalf("Append after reopen got seq %d, want %d", more[0].Seq, tt.n+1)
			}
			checkPending(t, l, append(want, more...))
		})
	}
}

func TestMarkDoneSurvivesRestart(t *testing.T) {
	tests := []struct {
		name string
		done []uint64
		sync bool // Sync before Close; Close writes the marks anyway
	}{
		{"none", nil, false},
		{"some", []uint64{2, 5, 7}, false},
		{"some synced", []uint64{1, 10}, true},
		{"all", []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, false},
		{"unknown and repeated seqs ignored", []uint64{3, 3, 99, 0}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			l := openT(t, dir, Config{})
			recs := appendN(t, l, 0, 10, 50)
			if err := l.MarkDone(tt.done...); err != nil {
				t.Fatalf("MarkDone() = %v", err)
			}
			var want []Record
			for _, r := range recs {
				if !contains(tt.done, r.Seq) {
					want = append(want, r)
				}
			}
			checkPending(t, l, want)
			if tt.sync {
				if err := l.Sync(context.Background()); err != nil {
					t.Fatalf("Sync() = %v", err)
				}
			}
			if err := l.Close(); err != nil {
				t.Fatalf("Close() = %v", err)
			}
			l = openT(t, dir, Config{})
			checkPending(t, l, want)
			if s := l.Stats(); s.NextSeq != 11 {
				t.Fatalf("Stats().NextSeq = %d, want 11", s.NextSeq)
			}
		})
	}
}

func contains(s []uint64, v uint64) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestRotationAndDeletion(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{SegmentBytes: 1024}
	l := openT(t, dir, cfg)
	recs := appendN(t, l, 0, 60, 100) // 120 bytes each: 8 per segment
	st := l.Stats()
	if st.Segments < 7 {
		t.Fatalf("Stats().Segments = %d after 60 records of 120 bytes, want >= 7", st.Segments)
	}
	if got := len(segFiles(t, dir)); got != st.Segments {
		t.Fatalf("%d segment files, Stats().Segments = %d", got, st.Segments)
	}
	for _, name := range segFiles(t, dir) {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > cfg.SegmentBytes {
			t.Fatalf("segment %s has %d bytes, over SegmentBytes %d", name, fi.Size(), cfg.SegmentBytes)
		}
	}

	// Mark all but the last 5 done: every segment but the last one or two
	// goes.
	if err := l.MarkDone(seqsOf(recs[:55])...); err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	st = l.Stats()
	if st.Segments > 2 {
		t.Fatalf("Stats().Segments = %d after marking all but 5 records done, want <= 2", st.Segments)
	}
	if got := len(segFiles(t, dir)); got != st.Segments {
		t.Fatalf("%d segment files, Stats().Segments = %d", got, st.Segments)
	}
	checkPending(t, l, recs[55:])
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	l = openT(t, dir, cfg)
	checkPending(t, l, recs[55:])
	more := appendN(t, l, 60, 1, 100)
	if more[0].Seq != 61 {
		t.Fatalf("Append after reopen got seq %d, want 61", more[0].Seq)
	}
}

// TestDeletionCarriesMarks checks that deleting a segment whose done-marks
// cover records of an older, surviving segment keeps those records done.
func TestDeletionCarriesMarks(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{SegmentBytes: 1024}
	l := openT(t, dir, cfg)
	first := appendN(t, l, 0, 6, 100) // fills segment 1 (120 bytes a record, 28 a sync mark)
	if got := l.Stats().Segments; got != 1 {
		t.Fatalf("Stats().Segments = %d, want 1", got)
	}
	// Record 1 stays pending forever. The marks for 2..6 land in segment 2.
	if err := l.MarkDone(seqsOf(first[1:])...); err != nil {
		t.Fatal(err)
	}
	second := appendN(t, l, 8, 20, 100) // segments 2 to 4
	if err := l.MarkDone(seqsOf(second[:15])...); err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	names := segFiles(t, dir)
	if names[0] != segName(segHeader{id: 1, firstSeq: 1}) {
		t.Fatalf("segment files %v, want segment 1 kept for its pending record", names)
	}
	if h, _ := parseSegName(names[1]); h.id == 2 {
		t.Fatalf("segment files %v, want segment 2 deleted", names)
	}
	want := append([]Record{first[0]}, second[15:]...)
	checkPending(t, l, want)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openT(t, dir, cfg)
	checkPending(t, l, want)
}

func TestConcurrentAppends(t *testing.T) {
	const writers, each = 64, 10
	dir := t.TempDir()
	l := openT(t, dir, Config{})
	var wg sync.WaitGroup
	got := make([][]Record, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				p := payloadFor(w*each+i, 64)
				seq, err := l.Append(context.Background(), p)
				if err != nil {
					t.Errorf("writer %d: Append() = %v", w, err)
					return
				}
				got[w] = append(got[w], Record{Seq: seq, Payload: p})
			}
		})
	}
	wg.Wait()
	bySeq := map[uint64][]byte{}
	for _, recs := range got {
		for _, r := range recs {
			if _, dup := bySeq[r.Seq]; dup {
				t.Fatalf("seq %d returned twice", r.Seq)
			}
			bySeq[r.Seq] = r.Payload
		}
	}
	check := func(l *Log) {
		t.Helper()
		pend := l.Pending()
		if len(pend) != writers*each {
			t.Fatalf("Pending() has %d records, want %d", len(pend), writers*each)
		}
		for i, r := range pend {
			if r.Seq != uint64(i+1) || string(r.Payload) != string(bySeq[r.Seq]) {
				t.Fatalf("Pending()[%d] = seq %d %q, want seq %d %q", i, r.Seq, r.Payload, i+1, bySeq[uint64(i+1)])
			}
		}
	}
	check(l)
	t.Logf("%d appends, %d fsyncs", writers*each, l.w.syncs.Load())
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	check(openT(t, dir, Config{}))
}

func TestClose(t *testing.T) {
	l := openT(t, t.TempDir(), Config{})
	appendN(t, l, 0, 1, 10)
	for i := range 2 {
		if err := l.Close(); err != nil {
			t.Fatalf("Close() #%d = %v", i+1, err)
		}
	}
	ctx := context.Background()
	if _, err := l.Append(ctx, []byte("x")); !errors.Is(err, ErrClosed) {
		t.Errorf("Append() after Close = %v, want ErrClosed", err)
	}
	if _, err := l.AppendBatch(ctx, [][]byte{[]byte("x")}); !errors.Is(err, ErrClosed) {
		t.Errorf("AppendBatch() after Close = %v, want ErrClosed", err)
	}
	if err := l.MarkDone(1); !errors.Is(err, ErrClosed) {
		t.Errorf("MarkDone() after Close = %v, want ErrClosed", err)
	}
	if err := l.Sync(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Sync() after Close = %v, want ErrClosed", err)
	}
	if err := l.Stats().Err; !errors.Is(err, ErrClosed) {
		t.Errorf("Stats().Err after Close = %v, want ErrClosed", err)
	}
}

func TestAppendErrors(t *testing.T) {
	l := openT(t, t.TempDir(), Config{MaxRecordBytes: 100})
	ctx := context.Background()
	if _, err := l.Append(ctx, make([]byte, 101)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Append(101 bytes) = %v, want ErrTooLarge", err)
	}
	if _, err := l.AppendBatch(ctx, [][]byte{{1}, make([]byte, 101)}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("AppendBatch(with 101 bytes) = %v, want ErrTooLarge", err)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.Append(canceled, []byte("x")); !errors.Is(err, context.Canceled) {
		t.Errorf("Append(canceled ctx) = %v, want context.Canceled", err)
	}
	checkPending(t, l, nil)
	if s := l.Stats(); s.NextSeq != 1 {
		t.Errorf("Stats().NextSeq = %d after failed appends, want 1", s.NextSeq)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr []string // fields named in the error
	}{
		{"zero is valid", Config{}, nil},
		{"small segments get a small record limit", Config{SegmentBytes: MinSegmentBytes}, nil},
		{"segment too small", Config{SegmentBytes: 100}, []string{"SegmentBytes"}},
		{"segment too small for record", Config{SegmentBytes: 10, MaxRecordBytes: 1}, []string{"SegmentBytes", "MaxRecordBytes"}},
		{"record over segment", Config{SegmentBytes: 4096, MaxRecordBytes: 4096}, []string{"MaxRecordBytes"}},
		{"negatives", Config{MaxRecordBytes: -1, MaxBatchBytes: -1}, []string{"MaxRecordBytes", "MaxBatchBytes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if (err != nil) != (len(tt.wantErr) > 0) {
				t.Fatalf("Validate() = %v, want error naming %v", err, tt.wantErr)
			}
			for _, field := range tt.wantErr {
				if !strings.Contains(err.Error(), field) {
					t.Errorf("Validate() = %v, want it to name %s", err, field)
				}
			}
			l, err := Open(t.TempDir(), tt.cfg)
			if (err != nil) != (len(tt.wantErr) > 0) {
				t.Errorf("Open() = %v, want error %v", err, len(tt.wantErr) > 0)
			}
			if err == nil {
				l.Close()
			}
		})
	}
}

// TestCloseDuringAppends closes the log under 64 appending goroutines: each
// Append either returns a Seq, and its record survives, or ErrClosed.
func TestCloseDuringAppends(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Config{})
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		acked []Record
	)
	started := make(chan struct{}, 64)
	for w := range 64 {
		wg.Go(func() {
			for i := 0; ; i++ {
				p := payloadFor(w*1000+i, 32)
				seq, err := l.Append(context.Background(), p)
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil {
					t.Errorf("Append() = %v, want a seq or ErrClosed", err)
					return
				}
				mu.Lock()
				acked = append(acked, Record{Seq: seq, Payload: p})
				mu.Unlock()
				if i == 0 {
					started <- struct{}{}
				}
			}
		})
	}
	for range 64 {
		<-started
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	wg.Wait()
	slices.SortFunc(acked, func(a, b Record) int { return cmp.Compare(a.Seq, b.Seq) })
	checkPending(t, openT(t, dir, Config{}), acked)
}
