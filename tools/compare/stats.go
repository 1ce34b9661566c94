package main

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// percentile returns the nearest-rank p-quantile (0 < p <= 1) of the
// latencies, which it sorts in place; ok is false when there are none.
func percentile(lat []time.Duration, p float64) (d time.Duration, ok bool) {
	if len(lat) == 0 || p <= 0 || p > 1 {
		return 0, false
	}
	if !slices.IsSorted(lat) {
		slices.Sort(lat)
	}
	rank := int(p*float64(len(lat)) + 0.999999) // the smallest rank r with r >= p*n
	rank = min(max(rank, 1), len(lat))
	return lat[rank-1], true
}

// cpuSample is the CPU time (utime+stime) of each server process at one
// moment, by PID.
type cpuSample map[int]time.Duration

// errNoTransactions is cpuPerTx's error for a window without transactions.
var errNoTransactions = errors.New("no transactions in the window")

// cpuPerTx returns the server CPU per transaction in microseconds: the sum
// over the server processes of their CPU time at the end of the window less
// at its start, divided by the transactions of the window. Every process must
// be in both samples, and no process's time may go backwards (a restarted
// process reuses nothing of the old one's).
func cpuPerTx(before, after cpuSample, txs int64) (float64, error) {
	if txs <= 0 {
		return 0, errNoTransactions
	}
	if len(before) == 0 {
		return 0, errors.New("no server processes sampled")
	}
	if len(before) != len(after) {
		return 0, fmt.Errorf("%d server processes sampled at the start, %d at the end", len(before), len(after))
	}
	var sum time.Duration
	for pid, t0 := range before {
		t1, ok := after[pid]
		if !ok {
			return 0, fmt.Errorf("process %d: not sampled at the end", pid)
		}
		if t1 < t0 {
			return 0, fmt.Errorf("process %d: CPU time went back from %v to %v", pid, t0, t1)
		}
		sum += t1 - t0
	}
	return float64(sum.Nanoseconds()) / 1e3 / float64(txs), nil
}

// median returns the median of xs (the mean of the middle two for an even
// count), or 0 for none. It does not change xs.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
