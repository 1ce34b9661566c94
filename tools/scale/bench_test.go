package main

import (
	"strings"
	"testing"
)

// TestMedianRun checks that a checkpoint reports the run with the median
// throughput, and the range and errors of all its runs.
func TestMedianRun(t *testing.T) {
	run := func(tps float64, errs int64) benchResult {
		return benchResult{TxPerSec: tps, Latency: latency{P99: tps / 100}, Errors: map[string]int64{"timeout": errs}}
	}
	for _, tc := range []struct {
		name   string
		runs   []benchResult
		median float64
		lo, hi float64
		errs   int64
	}{
		{"none", nil, 0, 0, 0, 0},
		{"one", []benchResult{run(300, 1)}, 300, 300, 300, 1},
		{"three", []benchResult{run(500, 0), run(100, 2), run(300, 0)}, 300, 100, 500, 2},
		{"four: the lower middle", []benchResult{run(400, 0), run(100, 0), run(300, 1), run(200, 0)}, 200, 100, 400, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := medianRun(tc.runs)
			if m.TxPerSec != tc.median || m.Latency.P99 != tc.median/100 {
				t.Errorf("medianRun = %v tx/s, p99 %v; want the run of %v tx/s", m.TxPerSec, m.Latency.P99, tc.median)
			}
			if lo, hi := txPerSecRange(tc.runs); lo != tc.lo || hi != tc.hi {
				t.Errorf("txPerSecRange = %v-%v, want %v-%v", lo, hi, tc.lo, tc.hi)
			}
			if n := errorCount(tc.runs); n != tc.errs {
				t.Errorf("errorCount = %d, want %d", n, tc.errs)
			}
		})
	}
	if m := meanTxPerSec([]benchResult{run(100, 0), run(300, 0)}); m != 200 {
		t.Errorf("meanTxPerSec = %v, want 200", m)
	}
}

// TestVerdictUsesReference checks that the throughput verdict compares the
// last checkpoint with its reference cluster when it has one, and with the
// empty log's checkpoint otherwise.
func TestVerdictUsesReference(t *testing.T) {
	first := checkpoint{Bench: benchResult{TxPerSec: 4000}}
	last := checkpoint{LogIndex: 1_000_000, Bench: benchResult{TxPerSec: 3000}}
	var b strings.Builder
	printVerdict(&b, &report{Checkpoints: []checkpoint{first, last}})
	if !strings.Contains(b.String(), "0.75 of the empty log's 4000 tx/s") || !strings.Contains(b.String(), "MISSES") {
		t.Errorf("without a reference:\n%s", b.String())
	}
	last.RefBench = &benchResult{TxPerSec: 3200}
	b.Reset()
	printVerdict(&b, &report{Checkpoints: []checkpoint{first, last}})
	if !strings.Contains(b.String(), "0.94 of a fresh empty cluster's 3200 tx/s") || !strings.Contains(b.String(), "meets >= 0.90") {
		t.Errorf("with a reference:\n%s", b.String())
	}
}
