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

// TestVerdictCalmPairs: the verdict lists each pair of runs with the host's
// steal during both, and the median of the pairs under 2% on both sides only.
func TestVerdictCalmPairs(t *testing.T) {
	pct := func(v float64) *float64 { return &v }
	run := func(tps, steal float64) benchResult { return benchResult{TxPerSec: tps, MachineStealPct: pct(steal)} }
	first := checkpoint{Bench: benchResult{TxPerSec: 4000}}
	last := checkpoint{LogIndex: 1_000_000, Bench: benchResult{TxPerSec: 3000}, RefBench: &benchResult{TxPerSec: 4000},
		// Ratios 0.80 (steal on this cluster's run), 0.95, 1.05 and 0.50
		// (steal on the reference's run counts too: a calm pair needs both).
		Runs:    []benchResult{run(3200, 6), run(3800, 0.5), run(4200, 1.9), run(3000, 0)},
		RefRuns: []benchResult{run(4000, 0), run(4000, 1), run(4000, 0.1), run(6000, 3)},
	}
	var b strings.Builder
	printVerdict(&b, &report{Checkpoints: []checkpoint{first, last}})
	for _, want := range []string{
		"0.75 of a fresh empty cluster's 4000 tx/s",
		"0.80 (steal 6.0%/0.0%), 0.95 (steal 0.5%/1.0%), 1.05 (steal 1.9%/0.1%), 0.50 (steal 0.0%/3.0%)",
		"the 2 pairs with under 2% steal in both runs: median 1.00 (meets >= 0.90)",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("verdict lacks %q:\n%s", want, b.String())
		}
	}
	for i := range last.Runs {
		last.Runs[i].MachineStealPct = nil
	}
	b.Reset()
	printVerdict(&b, &report{Checkpoints: []checkpoint{first, last}})
	if !strings.Contains(b.String(), "0.80 (steal ?/0.0%)") || !strings.Contains(b.String(), "no pair had under 2% steal in both runs") {
		t.Errorf("runs without steal:\n%s", b.String())
	}
}

// TestSetAside: a run goes aside only with more steal than allowed, a steal
// figure at all, and retries left; the verdict counts what went aside.
func TestSetAside(t *testing.T) {
	pct := func(v float64) *float64 { return &v }
	var cp checkpoint
	for _, tt := range []struct {
		steal *float64
		try   int
		want  bool
	}{
		{pct(6), 0, true}, {pct(6), 1, true}, {pct(6), 2, false}, // two retries, then kept
		{pct(5), 0, false}, {pct(0.1), 0, false}, {nil, 0, false},
	} {
		if got := cp.setAside(benchResult{TxPerSec: 1, MachineStealPct: tt.steal}, tt.try, 2, 5); got != tt.want {
			t.Errorf("setAside(steal %v, try %d) = %v, want %v", tt.steal, tt.try, got, tt.want)
		}
	}
	if len(cp.Discarded) != 2 {
		t.Fatalf("%d runs set aside, want 2", len(cp.Discarded))
	}
	cp.LogIndex, cp.Bench, cp.RefBench = 1_000_000, benchResult{TxPerSec: 3000}, &benchResult{TxPerSec: 3000}
	cp.Runs, cp.RefRuns = []benchResult{{TxPerSec: 3000}}, []benchResult{{TxPerSec: 3000}}
	var b strings.Builder
	printVerdict(&b, &report{Checkpoints: []checkpoint{{Bench: benchResult{TxPerSec: 3000}}, cp}})
	if !strings.Contains(b.String(), "(2 runs with more steal than allowed were run again") {
		t.Errorf("verdict without the runs set aside:\n%s", b.String())
	}
}
