package ui

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of the stats ring.
const (
	// SampleInterval is how often a node takes a sample (the caller's ticker).
	SampleInterval = 2 * time.Second
	// RingSamples is how many samples a node keeps: 5 minutes at SampleInterval.
	RingSamples = 150
)

// numBuckets covers latencies up to about 2^37 µs (38 hours); longer ones
// land in the last bucket.
const numBuckets = 144

// hist is a log-linear histogram of latencies in microseconds: four buckets
// per power of two, so a reported quantile is within 25% of the true one.
type hist struct {
	txs     atomic.Uint64 // transactions answered
	buckets [numBuckets]atomic.Uint64
}

// bucketOf returns the bucket of a latency of us microseconds.
func bucketOf(us uint64) int {
	if us < 4 {
		return int(us)
	}
	b := bits.Len64(us) // us is in [2^(b-1), 2^b)
	i := 4*(b-2) + int((us>>(b-3))&3)
	return min(i, numBuckets-1)
}

// bucketUpper returns the smallest latency, in microseconds, above bucket i.
func bucketUpper(i int) uint64 {
	if i < 4 {
		return uint64(i) + 1
	}
	b := i/4 + 2
	return uint64(4+i%4+1) << (b - 3)
}

// Sample is one interval of a node's writes: the JSON of a /v1/stats sample.
type Sample struct {
	At           time.Time `json:"at"`
	WritesPerSec float64   `json:"writes_per_sec"`
	// Requests is how many write answers the latencies were taken from.
	Requests uint64  `json:"requests"`
	P50Ms    float64 `json:"p50_ms"`
	P99Ms    float64 `json:"p99_ms"`
}

// Stats measures a node's write answers. Observe is called by any goroutine
// on the write path; Sample by one goroutine every SampleInterval; Samples by
// any. The zero value is not ready: use NewStats.
type Stats struct {
	cur atomic.Pointer[hist] // the histogram Observe adds to

	mu      sync.Mutex           // guards the fields below; Observe never takes it
	spare   *hist                // the other histogram, reset, swapped in by Sample
	last    time.Time            // when the current interval began
	ring    []Sample             // the last RingSamples samples, oldest at next when full
	counts  [][numBuckets]uint32 // each ring sample's latency histogram, for Window
	next    int
	samples int
}

// NewStats returns a Stats whose first interval begins at now.
func NewStats(now time.Time) *Stats {
	s := &Stats{spare: new(hist), last: now, ring: make([]Sample, RingSamples), counts: make([][numBuckets]uint32, RingSamples)}
	s.cur.Store(new(hist))
	return s
}

// Observe records one write answer that took d and carried txs transactions:
// two atomic adds, no lock, no allocation.
func (s *Stats) Observe(d time.Duration, txs int) {
	h := s.cur.Load()
	h.txs.Add(uint64(txs))
	us := d.Microseconds()
	if us < 0 {
		us = 0
	}
	h.buckets[bucketOf(uint64(us))].Add(1)
}

// Sample ends the current interval at now and keeps its sample. An Observe
// that loaded the old histogram just before the swap may land after it is
// read; it is counted in a later interval, not lost.
func (s *Stats) Sample(now time.Time) Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.cur.Swap(s.spare)
	smp := Sample{At: now}
	var counts [numBuckets]uint64
	for i := range old.buckets {
		counts[i] = old.buckets[i].Swap(0)
		smp.Requests += counts[i]
	}
	txs := old.txs.Swap(0)
	s.spare = old
	if el := now.Sub(s.last); el > 0 {
		smp.WritesPerSec = float64(txs) / el.Seconds()
	}
	s.last = now
	smp.P50Ms = quantile(&counts, smp.Requests, 0.50)
	smp.P99Ms = quantile(&counts, smp.Requests, 0.99)
	s.ring[s.next] = smp
	for i, c := range counts {
		s.counts[s.next][i] = uint32(min(c, 1<<32-1))
	}
	s.next = (s.next + 1) % len(s.ring)
	s.samples = min(s.samples+1, len(s.ring))
	return smp
}

// quantile returns the q-quantile of counts (total n) in milliseconds, as the
// upper bound of its bucket; 0 without samples.
func quantile(counts *[numBuckets]uint64, n uint64, q float64) float64 {
	if n == 0 {
		return 0
	}
	rank := uint64(q*float64(n-1)) + 1 // 1-based rank of the q-quantile
	var seen uint64
	for i, c := range counts {
		seen += c
		if seen >= rank {
			return float64(bucketUpper(i)) / 1000
		}
	}
	return float64(bucketUpper(numBuckets-1)) / 1000
}

// Window returns one sample over all the kept ones (up to 5 minutes): At is
// the last sample's time, WritesPerSec their mean, and the quantiles those
// of all their requests together. It is the zero Sample before the first.
func (s *Stats) Window() Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.samples == 0 {
		return Sample{}
	}
	var counts [numBuckets]uint64
	var w Sample
	start := (s.next - s.samples + len(s.ring)) % len(s.ring)
	for k := range s.samples {
		j := (start + k) % len(s.ring)
		w.WritesPerSec += s.ring[j].WritesPerSec
		for i, c := range s.counts[j] {
			counts[i] += uint64(c)
		}
	}
	w.At = s.ring[(s.next-1+len(s.ring))%len(s.ring)].At
	w.WritesPerSec /= float64(s.samples)
	for _, c := range counts {
		w.Requests += c
	}
	w.P50Ms = quantile(&counts, w.Requests, 0.50)
	w.P99Ms = quantile(&counts, w.Requests, 0.99)
	return w
}

// Samples returns the kept samples, oldest first, in a new slice.
func (s *Stats) Samples() []Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Sample, 0, s.samples)
	start := (s.next - s.samples + len(s.ring)) % len(s.ring)
	for i := range s.samples {
		out = append(out, s.ring[(start+i)%len(s.ring)])
	}
	return out
}
