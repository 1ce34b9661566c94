package txid

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestOpenGeneratorRestart(t *testing.T) {
	tests := []struct {
		name     string
		crash    bool          // reopen from a copy of the file taken while running, without Close
		node     uint16        // node number after the restart
		clockNow time.Duration // clock after the restart, relative to before it
	}{
		{"clock back 1m", false, 1, -time.Minute},
		{"crash, clock back 1m", true, 1, -time.Minute},
		{"clock back 1h, other node", false, 0, -time.Hour},
		{"same clock", false, 1, 0},
		{"clock ahead", false, 1, time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "txid.hwm")
			clock := newFakeClock(start)
			g, err := OpenGenerator(path, clock.Config(1))
			if err != nil {
				t.Fatalf("OpenGenerator: %v", err)
			}
			var before []ID
			for i := range 10_000 {
				before = append(before, g.Next())
				if i%10 == 0 {
					clock.Add(time.Millisecond)
				}
			}
			if tt.crash {
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				path = filepath.Join(dir, "crashed.hwm")
				if err := os.WriteFile(path, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := g.Close(); err != nil {
				t.Fatalf("Close() = %v", err)
			}
			highest := slices.Max(before)

			clock.Set(clock.Now().Add(tt.clockNow))
			g, err = OpenGenerator(path, clock.Config(tt.node))
			if err != nil {
				t.Fatalf("reopen: %v", err)
			}
			defer g.Close()
			first := g.Next()
			if first <= highest {
				t.Fatalf("first Next() after restart = %v (ms %d), want > %v (ms %d)",
					first, first.Millis(), highest, highest.Millis())
			}
			if tt.clockNow > 0 && first.Millis() != clock.Millis() {
				t.Fatalf("first Next() after restart has ms %d, want the clock's %d", first.Millis(), clock.Millis())
			}
			// A restart costs at most one window ahead of the old IDs.
			if lead := first.Millis() - highest.Millis(); tt.clockNow <= 0 && lead > DefaultReserve.Milliseconds() {
				t.Fatalf("first Next() after restart is %d ms past the last ID, want at most %d", lead, DefaultReserve.Milliseconds())
			}
		})
	}
}

func TestOpenGeneratorCorrupt(t *testing.T) {
	valid := encodeMark(uint64(startMs))
	flip := func(i int) []byte {
		b := slices.Clone(valid)
		b[i] ^= 0x10
		return b
	}
	outOfRange := encodeMark(maxMillis + 2)
	tests := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"torn", valid[:11]},
		{"one byte short", valid[:markSize-1]},
		{"trailing bytes", append(slices.Clone(valid), 0)},
		{"bad magic", flip(0)},
		{"bad limit", flip(12)},
		{"bad checksum", flip(19)},
		{"zeros", make([]byte, markSize)},
		{"text", []byte("1717171717171717171\n")},
		{"limit out of range", outOfRange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "txid.hwm")
			if err := os.WriteFile(path, tt.data, 0o644); err != nil {
				t.Fatal(err)
			}
			g, err := OpenGenerator(path, newFakeClock(start).Config(1))
			if !errors.Is(err, ErrCorrupt) {
				if g != nil {
					g.Close()
				}
				t.Fatalf("OpenGenerator on a %s file: err = %v, want ErrCorrupt", tt.name, err)
			}
			if got, _ := os.ReadFile(path); !slices.Equal(got, tt.data) && len(tt.data) > 0 {
				t.Fatalf("OpenGenerator changed the corrupt file to %x", got)
			}
		})
	}
}

func TestMarkRoundTrip(t *testing.T) {
	for _, limit := range []uint64{0, 1, uint64(startMs), maxMillis + 1} {
		got, err := decodeMark(encodeMark(limit))
		if err != nil || got != limit {
			t.Fatalf("decodeMark(encodeMark(%d)) = %d, %v", limit, got, err)
		}
	}
}

func TestOpenGeneratorIgnoresStrayTemp(t *testing.T) {
	// A crash between writing the temporary file and renaming it leaves the
	// old file in place, and a temporary file that may be torn.
	path := filepath.Join(t.TempDir(), "txid.hwm")
	limit := startMs + 60_000
	if err := writeMark(osMarkFS{}, path, uint64(limit)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".tmp", []byte("torn"), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := OpenGenerator(path, newFakeClock(start).Config(1))
	if err != nil {
		t.Fatalf("OpenGenerator: %v", err)
	}
	defer g.Close()
	if got, want := g.Next(), mkID(limit, 1, 0); got != want {
		t.Fatalf("Next() = %v, want %v", got, want)
	}
}

func TestOpenGeneratorWriteFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing-dir", "txid.hwm")
	g, err := OpenGenerator(path, Config{})
	if err == nil {
		g.Close()
		t.Fatal("OpenGenerator in a missing directory succeeded")
	}
}

func TestMarkCoversIssuedIDs(t *testing.T) {
	// With the clock frozen, IDs run ahead of it by one millisecond every
	// MaxSeq+1 IDs, far past the smallest reservation.
	path := filepath.Join(t.TempDir(), "txid.hwm")
	cfg := newFakeClock(start).Config(3)
	cfg.Reserve = MinReserve
	g, err := OpenGenerator(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for range 50 {
		var last ID
		for range MaxSeq + 1 {
			last = g.Next()
		}
		limit, _, err := readMark(path)
		if err != nil {
			t.Fatal(err)
		}
		if uint64(last.Millis()) >= limit {
			t.Fatalf("issued ms %d, but the file only reserves below %d", last.Millis(), limit)
		}
	}
}

func TestNextAfterClosePanics(t *testing.T) {
	clock := newFakeClock(start)
	g, err := OpenGenerator(filepath.Join(t.TempDir(), "txid.hwm"), clock.Config(1))
	if err != nil {
		t.Fatal(err)
	}
	g.Next()
	g.Close()
	g.Close()
	clock.Add(time.Hour)
	defer func() {
		if recover() == nil {
			t.Fatal("Next() past the reservation of a closed Generator did not panic")
		}
	}()
	g.Next()
}

// recorder is a persist function for openGenerator that writes the file,
// remembers each limit and fails while err is set.
type recorder struct {
	path string

	mu     sync.Mutex
	err    error
	limits []uint64
}

func (r *recorder) persist(limit uint64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	r.limits = append(r.limits, limit)
	return writeMark(osMarkFS{}, r.path, limit)
}

func (r *recorder) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err = err
}

// written returns the limits written so far, in milliseconds after start.
func (r *recorder) written() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []int64
	for _, l := range r.limits {
		out = append(out, int64(l)-startMs)
	}
	return out
}

// openBubble opens a Generator inside a synctest bubble whose clock reads
// start when called.
func openBubble(t *testing.T) (*Generator, *recorder) {
	t.Helper()
	shift := start.Sub(time.Now())
	rec := &recorder{path: filepath.Join(t.TempDir(), "txid.hwm")}
	cfg := Config{Node: 1, Now: func() time.Time { return time.Now().Add(shift) }}
	g, err := openGenerator(cfg, rec.path, rec.persist)
	if err != nil {
		t.Fatalf("openGenerator: %v", err)
	}
	return g, rec
}

func TestReserveExtendsInBackground(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, rec := openBubble(t)
		defer g.Close()
		check := func(when string, want ...int64) {
			t.Helper()
			synctest.Wait()
			if got := rec.written(); !slices.Equal(got, want) {
				t.Fatalf("%s: limits written = %v ms after start, want %v", when, got, want)
			}
		}
		check("at open", 3000)

		g.Next()
		time.Sleep(1499 * time.Millisecond)
		g.Next()
		check("before half the window", 3000)

		time.Sleep(time.Millisecond)
		check("at half the window", 3000, 4500)

		time.Sleep(1500 * time.Millisecond)
		g.Next()
		check("at half the next window", 3000, 4500, 6000)

		limit, _, err := readMark(rec.path)
		if err != nil || int64(limit) != startMs+6000 {
			t.Fatalf("file holds %d, %v; want %d", limit, err, startMs+6000)
		}
	})
}

func TestNextWaitsForFailedWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, rec := openBubble(t)
		errDisk := errors.New("disk on fire")
		rec.fail(errDisk)

		// The clock reaches the end of the reservation while every write
		// fails.
		time.Sleep(3000 * time.Millisecond)
		got := make(chan ID, 1)
		go func() { got <- g.Next() }()
		synctest.Wait()
		select {
		case id := <-got:
			t.Fatalf("Next() = %v (ms %d after start) past the reservation while writes fail", id, id.Millis()-startMs)
		default:
		}

		rec.fail(nil)
		time.Sleep(maxRetry)
		synctest.Wait()
		select {
		case id := <-got:
			if ms := id.Millis() - startMs; ms != 4000 {
				t.Fatalf("Next() after the write succeeded has ms %d after start, want 4000", ms)
			}
		default:
			t.Fatal("Next() still blocked after a write succeeded")
		}
		if w := rec.written(); w[len(w)-1] != 7000 {
			t.Fatalf("limits written = %v, want the last to be 7000", w)
		}
		if err := g.Close(); err != nil {
			t.Fatalf("Close() = %v after the writes recovered, want nil", err)
		}
	})
}

func TestCloseReportsFailedWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, rec := openBubble(t)
		errDisk := errors.New("disk on fire")
		rec.fail(errDisk)
		time.Sleep(2 * time.Second)
		for range 2 {
			if err := g.Close(); !errors.Is(err, errDisk) {
				t.Fatalf("Close() = %v, want %v", err, errDisk)
			}
		}
	})
}
