package txid

import (
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// mutexGenerator is Generator.Next's algorithm behind a mutex, the design
// Generator avoids. It exists for the benchmarks to compare against.
type mutexGenerator struct {
	node uint64
	now  func() time.Time

	mu   sync.Mutex
	last uint64 // guarded by mu
}

func (g *mutexGenerator) Next() ID {
	ms := g.now().UnixMilli() - epochMillis
	now := uint64(max(ms, 0)) << SeqBits
	g.mu.Lock()
	next := max(g.last+1, now)
	g.last = next
	g.mu.Unlock()
	return ID(next>>SeqBits<<(SeqBits+NodeBits) | g.node | next&MaxSeq)
}

// nexter is what the benchmarks call.
type nexter interface{ Next() ID }

// benchCase is one generator under benchmark.
type benchCase struct {
	name string
	g    nexter
}

// benchGenerators returns the generators to compare: cas is a Generator
// from New, persisted one from OpenGenerator, mutex a mutexGenerator. Each
// comes with the real clock and with a frozen one ("fixedclock"): reading
// the clock can cost more than the rest of Next, and the frozen clock
// leaves only the synchronisation to compare.
func benchGenerators(b *testing.B) []benchCase {
	var cases []benchCase
	for _, clock := range []struct {
		suffix string
		now    func() time.Time
	}{
		{"", time.Now},
		{"-fixedclock", newFakeClock(time.Now()).Now},
	} {
		cfg := Config{Node: 1, Now: clock.now}
		mem, err := New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		disk, err := OpenGenerator(filepath.Join(b.TempDir(), "txid.hwm"), cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { disk.Close() })
		cases = append(cases,
			benchCase{"cas" + clock.suffix, mem},
			benchCase{"persisted" + clock.suffix, disk},
			benchCase{"mutex" + clock.suffix, &mutexGenerator{node: 1 << SeqBits, now: clock.now}},
		)
	}
	return cases
}

// sink keeps the compiler from dropping calls.
var sink ID

func BenchmarkNext(b *testing.B) {
	for _, bc := range benchGenerators(b) {
		b.Run(bc.name, func(b *testing.B) {
			var id ID
			for b.Loop() {
				id = bc.g.Next()
			}
			sink = id
		})
	}
}

func BenchmarkNextParallel(b *testing.B) {
	for _, bc := range benchGenerators(b) {
		b.Run(bc.name, func(b *testing.B) {
			b.RunParallel(func(pb *testing.PB) {
				var prev ID
				for pb.Next() {
					id := bc.g.Next()
					if id <= prev {
						b.Errorf("Next() = %v after %v", id, prev)
						return
					}
					prev = id
				}
			})
		})
	}
}

func BenchmarkString(b *testing.B) {
	id := mkID(startMs, 7, 42)
	for b.Loop() {
		_ = id.String()
	}
}

func BenchmarkParse(b *testing.B) {
	s := mkID(startMs, 7, 42).String()
	for b.Loop() {
		id, err := Parse(s)
		if err != nil {
			b.Fatal(err)
		}
		sink = id
	}
}
