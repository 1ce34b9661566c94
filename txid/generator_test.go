package txid

import (
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// start is a wall clock time well after Epoch that the fake clocks start at.
var start = Epoch.Add(100 * 24 * time.Hour)

// startMs is start in milliseconds since Epoch.
var startMs = start.Sub(Epoch).Milliseconds()

// fakeClock is a wall clock that tests set by hand. It is safe for
// concurrent use.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock(t time.Time) *fakeClock {
	c := &fakeClock{}
	c.ns.Store(t.UnixNano())
	return c
}

func (c *fakeClock) Now() time.Time            { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) Add(d time.Duration)       { c.ns.Add(int64(d)) }
func (c *fakeClock) Set(t time.Time)           { c.ns.Store(t.UnixNano()) }
func (c *fakeClock) Millis() int64             { return c.Now().Sub(Epoch).Milliseconds() }
func (c *fakeClock) Config(node uint16) Config { return Config{Node: node, Now: c.Now} }

// generators are the two kinds of Generator, for tests that hold for both.
var generators = []struct {
	name string
	open func(t *testing.T, cfg Config) *Generator
}{
	{"New", func(t *testing.T, cfg Config) *Generator {
		g, err := New(cfg)
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		return g
	}},
	{"OpenGenerator", func(t *testing.T, cfg Config) *Generator {
		g, err := OpenGenerator(filepath.Join(t.TempDir(), "txid.hwm"), cfg)
		if err != nil {
			t.Fatalf("OpenGenerator: %v", err)
		}
		t.Cleanup(func() { g.Close() })
		return g
	}},
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		cfg    Config
		fields []string // each must be named in the error; none means valid
	}{
		{"zero", Config{}, nil},
		{"max node", Config{Node: MaxNode}, nil},
		{"node too big", Config{Node: MaxNode + 1}, []string{"Node 1024", "0..1023"}},
		{"min reserve", Config{Reserve: MinReserve}, nil},
		{"max reserve", Config{Reserve: MaxReserve}, nil},
		{"reserve too small", Config{Reserve: time.Millisecond}, []string{"Reserve 1ms", "10ms..1h0m0s"}},
		{"reserve negative", Config{Reserve: -time.Second}, []string{"Reserve -1s"}},
		{"floor leaves no ID", Config{Node: 3, Floor: mkID(maxMillis, 4, 0)}, []string{"Floor"}},
		{"floor leaves one ID", Config{Node: 5, Floor: mkID(maxMillis, 4, 0)}, nil},
		{"all problems", Config{Node: 2000, Reserve: time.Nanosecond}, []string{"Node 2000", "Reserve 1ns"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if len(tt.fields) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error naming %q", tt.fields)
			}
			for _, f := range tt.fields {
				if !strings.Contains(err.Error(), f) {
					t.Errorf("Validate() = %q, want it to contain %q", err, f)
				}
			}
			if _, nerr := New(tt.cfg); nerr == nil {
				t.Errorf("New accepted a config Validate rejects")
			}
			if _, oerr := OpenGenerator(filepath.Join(t.TempDir(), "hwm"), tt.cfg); oerr == nil {
				t.Errorf("OpenGenerator accepted a config Validate rejects")
			}
		})
	}
}

func TestNextFields(t *testing.T) {
	for _, gen := range generators {
		t.Run(gen.name, func(t *testing.T) {
			clock := newFakeClock(start)
			g := gen.open(t, clock.Config(7))
			first := g.Next()
			if first != mkID(startMs, 7, 0) {
				t.Fatalf("first Next() = %v (ms %d node %d seq %d), want ms %d node 7 seq 0",
					first, first.Millis(), first.Node(), first.Seq(), startMs)
			}
			if second := g.Next(); second != first+1 {
				t.Fatalf("second Next() = %v, want %v", second, first+1)
			}
			clock.Add(5 * time.Millisecond)
			if third := g.Next(); third != mkID(startMs+5, 7, 0) {
				t.Fatalf("Next() after 5ms = %v, want %v", third, mkID(startMs+5, 7, 0))
			}
		})
	}
}

func TestNextBeforeEpochNeverZero(t *testing.T) {
	g, err := New(Config{Now: func() time.Time { return Epoch.Add(-time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Next(); got != 1 {
		t.Fatalf("Next() with the clock before Epoch = %v, want ID 1 (never zero)", uint64(got))
	}
}

func TestNextFloor(t *testing.T) {
	later := startMs + 1000 // a floor ahead of the clock
	tests := []struct {
		name  string
		node  uint16
		floor ID
		want  ID // first ID issued, with the clock at start
	}{
		{"zero floor", 9, 0, mkID(startMs, 9, 0)},
		{"floor behind clock", 9, mkID(startMs-1, 9, 5), mkID(startMs, 9, 0)},
		{"lower node, same ms", 9, mkID(later, 3, MaxSeq), mkID(later, 9, 0)},
		{"same node", 9, mkID(later, 9, 41), mkID(later, 9, 42)},
		{"same node, last seq", 9, mkID(later, 9, MaxSeq), mkID(later+1, 9, 0)},
		{"higher node", 9, mkID(later, 10, 0), mkID(later+1, 9, 0)},
	}
	for _, gen := range generators {
		for _, tt := range tests {
			t.Run(gen.name+"/"+tt.name, func(t *testing.T) {
				cfg := newFakeClock(start).Config(tt.node)
				cfg.Floor = tt.floor
				g := gen.open(t, cfg)
				if got := g.Next(); got != tt.want {
					t.Fatalf("Next() = %v, want %v", got, tt.want)
				}
			})
		}
	}
}

// checkIncreasing fails t unless ids is strictly increasing.
func checkIncreasing(t *testing.T, name string, ids []ID) {
	t.Helper()
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Fatalf("%s: Next() #%d = %v, want > %v (#%d)", name, i, ids[i], ids[i-1], i-1)
		}
	}
}

// checkDistinct fails t if any ID appears twice in all.
func checkDistinct(t *testing.T, all [][]ID) {
	t.Helper()
	merged := slices.Concat(all...)
	slices.Sort(merged)
	for i := 1; i < len(merged); i++ {
		if merged[i] == merged[i-1] {
			t.Fatalf("ID %v issued twice", merged[i])
		}
	}
}

// issue calls g.Next n times in each of k goroutines and returns what each
// goroutine got, in order.
func issue(g *Generator, k, n int) [][]ID {
	out := make([][]ID, k)
	var wg sync.WaitGroup
	for i := range k {
		wg.Go(func() {
			ids := make([]ID, n)
			for j := range ids {
				ids[j] = g.Next()
			}
			out[i] = ids
		})
	}
	wg.Wait()
	return out
}

func TestNextConcurrent(t *testing.T) {
	const goroutines, perGoroutine = 16, 50_000
	for _, gen := range generators {
		t.Run(gen.name, func(t *testing.T) {
			// The real clock, and the smallest reservation, so that the
			// reservation is extended while the goroutines run.
			g := gen.open(t, Config{Node: 1, Reserve: MinReserve})
			all := issue(g, goroutines, perGoroutine)
			for i, ids := range all {
				checkIncreasing(t, "goroutine "+string(rune('A'+i)), ids)
			}
			checkDistinct(t, all)
		})
	}
}

func TestNextClockBackwards(t *testing.T) {
	for _, gen := range generators {
		t.Run(gen.name+"/sequential", func(t *testing.T) {
			clock := newFakeClock(start)
			g := gen.open(t, clock.Config(2))
			var ids []ID
			for range 100 {
				ids = append(ids, g.Next())
				clock.Add(time.Millisecond)
			}
			last := ids[len(ids)-1]
			clock.Add(-10 * time.Second)
			after := g.Next()
			if want := last + 1; after != want {
				t.Fatalf("Next() after the clock stepped back = %v (ms %d seq %d), want %v (the last ms, next seq)",
					after, after.Millis(), after.Seq(), want)
			}
			ids = append(ids, after)
			for range 5000 { // more than MaxSeq+1: runs past the last ms
				ids = append(ids, g.Next())
				clock.Add(time.Microsecond)
			}
			checkIncreasing(t, "ids", ids)
			if got := ids[len(ids)-1].Millis(); got != last.Millis()+1 {
				t.Fatalf("after 5001 IDs in the past, ms = %d, want %d", got, last.Millis()+1)
			}
			// The clock catches up: IDs follow it again.
			clock.Set(start.Add(time.Minute))
			if got, want := g.Next(), mkID(startMs+60_000, 2, 0); got != want {
				t.Fatalf("Next() once the clock caught up = %v, want %v", got, want)
			}
		})
		t.Run(gen.name+"/concurrent", func(t *testing.T) {
			// Every call moves the clock on by 1µs; call 100,000 moves it
			// back 10s, while 16 goroutines are issuing.
			var calls atomic.Int64
			now := func() time.Time {
				n := calls.Add(1)
				at := start.Add(time.Duration(n) * time.Microsecond)
				if n >= 100_000 {
					at = at.Add(-10 * time.Second)
				}
				return at
			}
			g := gen.open(t, Config{Node: 2, Now: now})
			all := issue(g, 16, 20_000)
			for _, ids := range all {
				checkIncreasing(t, "goroutine", ids)
			}
			checkDistinct(t, all)
			if calls.Load() < 100_000 {
				t.Fatalf("the clock was read %d times, want the step back to happen", calls.Load())
			}
		})
	}
}

func TestNextSeqOverflow(t *testing.T) {
	for _, gen := range generators {
		t.Run(gen.name, func(t *testing.T) {
			// The clock is frozen; IDs run 4 ms ahead of it.
			g := gen.open(t, newFakeClock(start).Config(MaxNode))
			const n = 4*(MaxSeq+1) + 5
			for i := range n {
				want := mkID(startMs+int64(i/(MaxSeq+1)), MaxNode, uint16(i%(MaxSeq+1)))
				if got := g.Next(); got != want {
					t.Fatalf("Next() #%d = %v (ms %d seq %d), want ms %d seq %d",
						i, got, got.Millis(), got.Seq(), want.Millis(), want.Seq())
				}
			}
		})
	}
}

func TestNextExhausted(t *testing.T) {
	g, err := New(Config{Node: 4, Floor: mkID(maxMillis, 4, MaxSeq-1)})
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Next(); got != mkID(maxMillis, 4, MaxSeq) {
		t.Fatalf("Next() = %v, want the last ID", got)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Next() past the last ID did not panic")
		}
	}()
	g.Next()
}

func TestCloseNew(t *testing.T) {
	g, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := g.Close(); err != nil {
			t.Fatalf("Close() = %v", err)
		}
	}
	if id := g.Next(); id == 0 {
		t.Fatal("Next() after Close on a Generator from New = 0")
	}
}

// TestNextUnpredictable: the ID NextUnpredictable gives is never the one Next
// would have (sequence 0 of a fresh millisecond, the one a squatter takes in
// advance), nor one a squatter could take by a rule: over many fresh
// milliseconds its sequences differ; and IDs stay unique and in order.
func TestNextUnpredictable(t *testing.T) {
	for _, gen := range generators {
		t.Run(gen.name, func(t *testing.T) {
			clock := newFakeClock(start)
			g := gen.open(t, clock.Config(3))
			last := g.Next()
			seqs := map[uint16]bool{}
			for i := range 200 {
				clock.Add(time.Millisecond)
				predictable := mkID(startMs+int64(i)+1, 3, 0)
				id := g.NextUnpredictable()
				if id == predictable || id <= last {
					t.Fatalf("NextUnpredictable() = %v after %v: want past %v and past the last", id, last, predictable)
				}
				seqs[id.Seq()] = true
				if next := g.Next(); next <= id {
					t.Fatalf("Next() = %v after NextUnpredictable() = %v", next, id)
				}
				last = g.Next()
			}
			if len(seqs) < 100 {
				t.Fatalf("200 fresh milliseconds gave %d sequences: predictable", len(seqs))
			}
		})
	}
}
