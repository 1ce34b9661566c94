package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// parseCounts parses the comma-separated subscriber counts of -subs: each a
// whole number from 0 to max. It wants at least one 0 (the baseline) and at
// least one count above 0.
func parseCounts(s string, max int) ([]int, error) {
	var out []int
	base, other := false, false
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 || n > max {
			return nil, fmt.Errorf("subscriber count %q: want a whole number from 0 to %d", f, max)
		}
		base, other = base || n == 0, other || n > 0
		out = append(out, n)
	}
	if !base || !other {
		return nil, fmt.Errorf("subscriber counts %q: want at least one 0 (the baseline) and one above 0", s)
	}
	return out, nil
}

// neighbours returns the nearest baseline runs (0 subscribers) around run i:
// the last one before it and the first one after it, -1 for none.
func neighbours(subs []int, i int) (before, after int) {
	before, after = -1, -1
	for j := i - 1; j >= 0; j-- {
		if subs[j] == 0 {
			before = j
			break
		}
	}
	for j := i + 1; j < len(subs); j++ {
		if subs[j] == 0 {
			after = j
			break
		}
	}
	return before, after
}

// fractions returns, for each run with subscribers (subs[i] > 0), its
// throughput tput[i] as a fraction of the mean throughput of its neighbours
// (the baselines before and after it, or the one of them there is). A
// baseline run, a run with no baseline at all, and a run whose baselines
// measured nothing get NaN.
func fractions(subs []int, tput []float64) []float64 {
	out := make([]float64, len(subs))
	for i, k := range subs {
		out[i] = math.NaN()
		if k == 0 {
			continue
		}
		var sum float64
		n := 0
		before, after := neighbours(subs, i)
		for _, j := range []int{before, after} {
			if j >= 0 {
				sum += tput[j]
				n++
			}
		}
		if n > 0 && sum > 0 {
			out[i] = tput[i] / (sum / float64(n))
		}
	}
	return out
}

// percentile returns the p-th percentile (0 < p <= 100) of sorted, a slice
// in ascending order, by nearest rank: the smallest sample with at least p%
// of the samples at or below it. 0 for no samples.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// delaySummary is the distribution of one kind of delay.
type delaySummary struct {
	n             int
	negative      int // samples below 0
	p50, p99, max time.Duration
}

// summarize sorts d in place and summarizes it.
func summarize(d []time.Duration) delaySummary {
	slices.Sort(d)
	s := delaySummary{n: len(d)}
	if len(d) == 0 {
		return s
	}
	s.negative, _ = slices.BinarySearch(d, 0)
	s.p50, s.p99, s.max = percentile(d, 50), percentile(d, 99), d[len(d)-1]
	return s
}

// ms formats d in milliseconds.
func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 2, 64) + "ms"
}

// frac formats a fraction, "-" for NaN.
func frac(f float64) string {
	if math.IsNaN(f) {
		return "-"
	}
	return strconv.FormatFloat(f, 'f', 3, 64)
}
