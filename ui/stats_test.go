package ui

import (
	"testing"
	"time"
)

func TestBuckets(t *testing.T) {
	prev := -1
	for us := uint64(0); us < 1<<20; us += 1 + us/64 {
		i := bucketOf(us)
		if i < prev {
			t.Fatalf("bucketOf(%d) = %d, want >= %d (monotonic)", us, i, prev)
		}
		prev = i
		if up := bucketUpper(i); us >= up {
			t.Fatalf("bucketOf(%d) = %d whose upper bound is %d, want > %d", us, i, up, us)
		}
		if i > 0 {
			if lo := bucketUpper(i - 1); us < lo {
				t.Fatalf("bucketOf(%d) = %d but bucket %d ends at %d, above it", us, i, i-1, lo)
			}
		}
		if up := bucketUpper(i); us >= 8 && float64(up) > 1.25*float64(us)+1 {
			t.Fatalf("bucketUpper(bucketOf(%d)) = %d, more than 25%% above", us, up)
		}
	}
	if got := bucketOf(1 << 62); got != numBuckets-1 {
		t.Fatalf("bucketOf(2^62) = %d, want the last bucket %d", got, numBuckets-1)
	}
}

func TestSample(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tests := []struct {
		name       string
		obs        []time.Duration // one transaction each
		wantRate   float64
		wantP50Ms  [2]float64 // inclusive range
		wantP99Ms  [2]float64
		wantNumReq uint64
	}{
		{"empty", nil, 0, [2]float64{0, 0}, [2]float64{0, 0}, 0},
		{"one", []time.Duration{time.Millisecond}, 0.5, [2]float64{1, 1.25}, [2]float64{1, 1.25}, 1},
		{"tail", append(repeat(98, 2*time.Millisecond), 100*time.Millisecond, 100*time.Millisecond), 50, [2]float64{2, 2.5}, [2]float64{100, 125}, 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStats(t0)
			for _, d := range tc.obs {
				s.Observe(d, 1)
			}
			got := s.Sample(t0.Add(2 * time.Second))
			if got.WritesPerSec != tc.wantRate || got.Requests != tc.wantNumReq {
				t.Fatalf("Sample() = %+v, want %v writes/s from %d requests", got, tc.wantRate, tc.wantNumReq)
			}
			if got.P50Ms < tc.wantP50Ms[0] || got.P50Ms > tc.wantP50Ms[1] || got.P99Ms < tc.wantP99Ms[0] || got.P99Ms > tc.wantP99Ms[1] {
				t.Fatalf("Sample() p50 %v p99 %v, want p50 in %v, p99 in %v", got.P50Ms, got.P99Ms, tc.wantP50Ms, tc.wantP99Ms)
			}
			// The next interval starts empty.
			if next := s.Sample(t0.Add(4 * time.Second)); next.Requests != 0 || next.WritesPerSec != 0 {
				t.Fatalf("second Sample() = %+v, want an empty interval", next)
			}
		})
	}
}

func repeat(n int, d time.Duration) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}

func TestRingKeepsLast(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := NewStats(t0)
	if got := s.Samples(); len(got) != 0 {
		t.Fatalf("Samples() of a new Stats = %d samples, want 0", len(got))
	}
	for i := 1; i <= RingSamples+7; i++ {
		s.Observe(time.Millisecond, i)
		s.Sample(t0.Add(time.Duration(i) * time.Second))
	}
	got := s.Samples()
	if len(got) != RingSamples {
		t.Fatalf("Samples() = %d samples, want %d", len(got), RingSamples)
	}
	if first, last := got[0].WritesPerSec, got[len(got)-1].WritesPerSec; first != 8 || last != RingSamples+7 {
		t.Fatalf("Samples() from %v to %v writes/s, want 8 to %d (oldest dropped, oldest first)", first, last, RingSamples+7)
	}
}

func TestObserveAllocatesNothing(t *testing.T) {
	s := NewStats(time.Now())
	if n := testing.AllocsPerRun(1000, func() { s.Observe(3*time.Millisecond, 1) }); n != 0 {
		t.Fatalf("Observe allocates %v times per call, want 0", n)
	}
}

func TestObserveRace(t *testing.T) {
	s := NewStats(time.Unix(0, 0))
	done := make(chan struct{})
	const writers, each = 4, 2000
	for range writers {
		go func() {
			for range each {
				s.Observe(time.Millisecond, 1)
			}
			done <- struct{}{}
		}()
	}
	var total uint64
	for i, finished := 0, 0; finished < writers; i++ {
		select {
		case <-done:
			finished++
		default:
		}
		total += s.Sample(time.Unix(int64(i+1), 0)).Requests
	}
	// Both histograms, for an Observe that landed in one just after its swap.
	total += s.Sample(time.Unix(1<<30, 0)).Requests
	total += s.Sample(time.Unix(1<<30+1, 0)).Requests
	if total != writers*each {
		t.Fatalf("samples counted %d requests, want %d", total, writers*each)
	}
}

func TestWindow(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := NewStats(t0)
	if w := s.Window(); w != (Sample{}) {
		t.Fatalf("Window() of a new Stats = %+v, want zero", w)
	}
	// Interval 1: 99 fast requests; interval 2: one slow one. Together the
	// p99 is still fast, the p50 too; the last interval's alone is slow.
	for range 99 {
		s.Observe(time.Millisecond, 2)
	}
	s.Sample(t0.Add(2 * time.Second))
	s.Observe(time.Second, 2)
	last := s.Sample(t0.Add(4 * time.Second))
	w := s.Window()
	if w.Requests != 100 || w.WritesPerSec != (99+1)/2 || w.P99Ms > 1.25 || w.P50Ms > 1.25 || !w.At.Equal(last.At) {
		t.Fatalf("Window() = %+v, want 100 requests, 50 writes/s, p50 and p99 about 1 ms, at %v", w, last.At)
	}
	if last.P50Ms < 1000 {
		t.Fatalf("last Sample() p50 = %v ms, want about 1000", last.P50Ms)
	}
}
