package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/txlog/txlog/launcher"
)

// benchResult holds the fields of `txlog bench --json` (cmd/txlog/bench.go,
// benchResult) that scale keeps.
type benchResult struct {
	Clients   int              `json:"clients"`
	Batch     int              `json:"batch"`
	Seconds   float64          `json:"seconds"` // the measured window
	Requests  int64            `json:"requests"`
	Txs       int64            `json:"txs"` // answered with 200, 202 or 409 in the window
	TxPerSec  float64          `json:"tx_per_sec"`
	Latency   latency          `json:"latency_ms"`
	Errors    map[string]int64 `json:"errors"`
	ClientCPU float64          `json:"client_cpu_cores"`
	// MachineStealPct is the part of the machine's CPU time the host stole in
	// the window, in percent (nil from a bench that does not report it).
	MachineStealPct *float64 `json:"machine_steal_pct,omitempty"`
}

// latency is a latency summary in milliseconds.
type latency struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// errorCount returns the number of failed requests and transactions.
func (r benchResult) errorCount() int64 {
	var n int64
	for _, c := range r.Errors {
		n += c
	}
	return n
}

// benchStopGrace is how long a bench gets after SIGINT before it is killed.
const benchStopGrace = 5 * time.Second

// benchCommand returns `txlog bench` against targets with the given flags, with
// --json and without progress lines. When ctx ends, the bench gets SIGINT.
func benchCommand(ctx context.Context, txlog string, targets []string, flags ...string) *exec.Cmd {
	args := append([]string{"bench", "--targets", strings.Join(targets, ","), "--progress", "0", "--json"}, flags...)
	cmd := exec.CommandContext(ctx, txlog, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = benchStopGrace
	cmd.SysProcAttr = launcher.SysProcAttr()
	return cmd
}

// runBench runs `txlog bench` to the end and returns its summary.
func runBench(ctx context.Context, txlog string, targets []string, flags ...string) (benchResult, error) {
	cmd := benchCommand(ctx, txlog, targets, flags...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return benchResult{}, fmt.Errorf("txlog bench %s: %w: %s", strings.Join(flags, " "), err, strings.TrimSpace(stderr.String()))
	}
	var r benchResult
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		return benchResult{}, fmt.Errorf("txlog bench %s: decode its summary: %w", strings.Join(flags, " "), err)
	}
	return r, nil
}

// measureFlags are the bench flags of a measurement run.
func measureFlags(clients int, warmup, d time.Duration) []string {
	return []string{"--clients", strconv.Itoa(clients), "--warmup", warmup.String(), "--duration", d.String()}
}

// fillFlags are the bench flags of a run that adds n transactions in batches.
// bench counts --n in transactions, whole batches only, so n is rounded up to
// a multiple of batch.
func fillFlags(clients, batch int, n int64) []string {
	b := int64(batch)
	n = (n + b - 1) / b * b
	return []string{"--clients", strconv.Itoa(clients), "--batch", strconv.Itoa(batch), "--n", strconv.FormatInt(n, 10)}
}

// medianRun returns the run with the median throughput (of an even number,
// the lower of the two middle ones), or the zero benchResult for no runs.
func medianRun(runs []benchResult) benchResult {
	if len(runs) == 0 {
		return benchResult{}
	}
	sorted := slices.SortedFunc(slices.Values(runs), func(a, b benchResult) int {
		return cmp.Compare(a.TxPerSec, b.TxPerSec)
	})
	return sorted[(len(sorted)-1)/2]
}

// meanTxPerSec returns the mean throughput of runs, 0 for none.
func meanTxPerSec(runs []benchResult) float64 {
	if len(runs) == 0 {
		return 0
	}
	var sum float64
	for _, r := range runs {
		sum += r.TxPerSec
	}
	return sum / float64(len(runs))
}

// errorCount returns the failed requests and transactions of all runs.
func errorCount(runs []benchResult) int64 {
	var n int64
	for _, r := range runs {
		n += r.errorCount()
	}
	return n
}

// txPerSecRange returns the lowest and highest throughput of runs.
func txPerSecRange(runs []benchResult) (lo, hi float64) {
	for i, r := range runs {
		if i == 0 || r.TxPerSec < lo {
			lo = r.TxPerSec
		}
		hi = max(hi, r.TxPerSec)
	}
	return lo, hi
}
