package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Targets of issue 5.
const (
	targetThroughputRatio = 0.9              // throughput at the end at least this share of the empty log's
	targetRSSBytes        = 256 << 20        // resident memory per node below this
	targetCatchUp         = 10 * time.Second // restart to caught up below this
)

// report is everything one run measured; --json writes it.
type report struct {
	Started     time.Time    `json:"started"`
	Settings    settings     `json:"settings"`
	Checkpoints []checkpoint `json:"checkpoints"`
	Restarts    []restart    `json:"restarts,omitempty"`
}

// settings are the parts of the configuration that shape the numbers.
type settings struct {
	Total        int64    `json:"total"`
	Step         int64    `json:"step"`
	Clients      int      `json:"clients"`
	Repeats      int      `json:"repeats"`
	Reference    bool     `json:"reference"`
	Measure      string   `json:"measure"`
	Warmup       string   `json:"warmup"`
	FillClients  int      `json:"fill_clients"`
	FillBatch    int      `json:"fill_batch"`
	RestartLoad  int      `json:"restart_load"`
	TxlogdArgs   []string `json:"txlogd_args,omitempty"`
	Cores        int      `json:"cores"`
	LoadAvgStart string   `json:"loadavg_start,omitempty"`
	LoadAvgEnd   string   `json:"loadavg_end,omitempty"`
}

// checkpoint is what was measured at one log size. LogIndex is the leader's
// commit index: one Raft entry per transaction, plus a few configuration and
// no-op entries, so it counts the transactions in the log to within a handful.
type checkpoint struct {
	Target      int64  `json:"target"`        // the log size aimed at
	LogIndex    uint64 `json:"log_index"`     // before the measurement run
	LogIndexEnd uint64 `json:"log_index_end"` // after it, when the nodes were sampled
	Leader      string `json:"leader"`
	// Runs are the measurement runs, Bench the one with the median
	// throughput; NodesCPU is the nodes' CPU over all of them, in cores, and
	// NodesCPUPerTx in microseconds per transaction at their mean throughput.
	Runs  []benchResult `json:"runs,omitempty"`
	Bench benchResult   `json:"bench"`
	// RefRuns are the runs on a fresh empty cluster alternating with Runs
	// (--reference), RefBench the one with the median throughput.
	RefRuns  []benchResult `json:"ref_runs,omitempty"`
	RefBench *benchResult  `json:"ref_bench,omitempty"`
	// Discarded are the runs of either cluster that had more steal than
	// --max-steal and were run again.
	Discarded     []benchResult `json:"discarded_runs,omitempty"`
	NodesCPU      float64       `json:"nodes_cpu_cores"`
	NodesCPUPerTx float64       `json:"nodes_cpu_us_per_tx"`
	Nodes         []nodeSample  `json:"nodes"`
	// Fill is the run that then grew the log towards the next checkpoint.
	Fill *benchResult `json:"fill,omitempty"`
}

// refRatio returns the checkpoint's median throughput over its reference
// cluster's, if it has one.
func (cp checkpoint) refRatio() (float64, bool) {
	if cp.RefBench == nil || cp.RefBench.TxPerSec <= 0 {
		return 0, false
	}
	return cp.Bench.TxPerSec / cp.RefBench.TxPerSec, true
}

// lowSteal is the host's steal, in percent of the machine's CPU time, under
// which a run counts as undisturbed (each percent of steal cost about 2.6% of
// the throughput; docs/performance.md, "The machine").
const lowSteal = 2.0

// calmPairs returns the ratios of the checkpoint's runs to the reference runs
// they alternated with (the i-th of each), and those of the pairs in which the
// host stole under lowSteal during both runs.
func (cp checkpoint) calmPairs() (all, calm []float64) {
	for i := range min(len(cp.Runs), len(cp.RefRuns)) {
		r, ref := cp.Runs[i], cp.RefRuns[i]
		if ref.TxPerSec <= 0 {
			continue
		}
		ratio := r.TxPerSec / ref.TxPerSec
		all = append(all, ratio)
		if r.MachineStealPct != nil && ref.MachineStealPct != nil && *r.MachineStealPct < lowSteal && *ref.MachineStealPct < lowSteal {
			calm = append(calm, ratio)
		}
	}
	return all, calm
}

// setAside reports whether run r, the try-th retry (0 for the first run),
// had more steal than maxSteal percent with retries left; it then keeps it in
// cp.Discarded, and the caller runs it again.
func (cp *checkpoint) setAside(r benchResult, try, retries int, maxSteal float64) bool {
	if try >= retries || r.MachineStealPct == nil || *r.MachineStealPct <= maxSteal {
		return false
	}
	cp.Discarded = append(cp.Discarded, r)
	return true
}

// nodeSample is one node after a measurement run.
type nodeSample struct {
	ID           string      `json:"id"`
	PID          int         `json:"pid"`
	State        string      `json:"state"`
	AppliedIndex uint64      `json:"applied_index"`
	RSSBytes     int64       `json:"rss_bytes"`
	HWMBytes     int64       `json:"hwm_bytes"`
	AnonBytes    int64       `json:"rss_anon_bytes"`
	FileBytes    int64       `json:"rss_file_bytes"`
	DiskBytes    int64       `json:"disk_bytes"`
	Disk         []diskEntry `json:"disk"`
}

// restart is one restart-to-caught-up measurement.
type restart struct {
	Name   string `json:"name"`
	Node   string `json:"node"`
	Signal string `json:"signal"` // SIGTERM or SIGKILL
	// LogIndex is the index the node must reach: the leader's commit index when
	// the node went down.
	LogIndex    uint64  `json:"log_index"`
	StopSeconds float64 `json:"stop_seconds"` // SIGTERM until the process exited
	// ListenSeconds and CaughtUpSeconds count from the new process's start: until
	// it serves HTTP, and until its applied index reached LogIndex and /readyz
	// answered 200.
	ListenSeconds   float64 `json:"listen_seconds"`
	CaughtUpSeconds float64 `json:"caught_up_seconds"`
	// NewLeader and NewLeaderSeconds: for a killed leader, the node that answered
	// as leader in a later term, and how long after the kill.
	NewLeader        string  `json:"new_leader,omitempty"`
	NewLeaderSeconds float64 `json:"new_leader_seconds,omitempty"`
	RSSBytes         int64   `json:"rss_bytes"`
	HWMBytes         int64   `json:"hwm_bytes"`
	AnonBytes        int64   `json:"rss_anon_bytes"`
	Err              string  `json:"error,omitempty"`
}

// writeJSON writes r to path, through a temporary file so that a reader never
// sees half of it.
func writeJSON(path string, r *report) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(path, append(b, '\n'))
}

func writeFileAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

const mib = 1 << 20

// memWidth is the width of a memory column of the table: one number per node
// of ids, or the header naming them.
func memWidth(ids []string) int {
	return max(5*len(ids), len("RSS MiB ")+len(strings.Join(ids, "/")))
}

// printHeader writes the head of the checkpoint table.
func printHeader(w io.Writer, nodes []string) {
	width := memWidth(nodes)
	fmt.Fprintf(w, "%10s %7s %11s %5s %8s %6s %7s %7s %6s %9s  %-*s %-*s %-*s %8s %8s %8s %8s\n",
		"log index", "tx/s", "runs", "vs 0", "ref tx/s", "vs ref", "p50 ms", "p99 ms", "errors", "cpu µs/tx",
		width, "RSS MiB "+strings.Join(nodes, "/"), width, "anon MiB", width, "HWM MiB",
		"store", "raft log", "snaps", "intake")
}

// printCheckpoint writes one row of the checkpoint table. first is the empty
// log's checkpoint, for the throughput ratio. Memory is per node; anon is the
// part of RSS that is not mapped files (see memStatus). Disk sizes are the
// leader's, in MiB.
func printCheckpoint(w io.Writer, cp, first checkpoint) {
	ratio := 0.0
	if first.Bench.TxPerSec > 0 {
		ratio = cp.Bench.TxPerSec / first.Bench.TxPerSec
	}
	var ids, rss, anon, hwm []string
	var disk map[string]int64
	for _, n := range cp.Nodes {
		ids = append(ids, n.ID)
		rss = append(rss, fmt.Sprintf("%d", n.RSSBytes/mib))
		anon = append(anon, fmt.Sprintf("%d", n.AnonBytes/mib))
		hwm = append(hwm, fmt.Sprintf("%d", n.HWMBytes/mib))
		if n.ID == cp.Leader {
			disk = diskByKind(n.Disk)
		}
	}
	width := memWidth(ids)
	lo, hi := txPerSecRange(cp.Runs)
	refTPS, vsRef := "-", "-"
	if r, ok := cp.refRatio(); ok {
		refTPS, vsRef = fmt.Sprintf("%.0f", cp.RefBench.TxPerSec), fmt.Sprintf("%.2f", r)
	}
	fmt.Fprintf(w, "%10d %7.0f %11s %5.2f %8s %6s %7.2f %7.2f %6d %9.0f  %-*s %-*s %-*s %8.1f %8.1f %8.1f %8.1f\n",
		cp.LogIndex, cp.Bench.TxPerSec, fmt.Sprintf("%.0f-%.0f", lo, hi), ratio, refTPS, vsRef, cp.Bench.Latency.P50, cp.Bench.Latency.P99,
		errorCount(cp.Runs), cp.NodesCPUPerTx,
		width, strings.Join(rss, "/"), width, strings.Join(anon, "/"), width, strings.Join(hwm, "/"),
		float64(disk[kindStore])/mib, float64(disk[kindRaftLog])/mib,
		float64(disk[kindSnapshots])/mib, float64(disk[kindIntake])/mib)
}

// printRestarts writes the table of restart measurements.
func printRestarts(w io.Writer, rs []restart) {
	fmt.Fprintf(w, "%-18s %4s %10s %7s %9s %11s %13s %8s %8s %8s\n",
		"restart", "node", "log index", "stop s", "listen s", "caught-up s", "new leader s", "RSS MiB", "anon MiB", "HWM MiB")
	for _, r := range rs {
		nl := "-"
		if r.NewLeader != "" {
			nl = fmt.Sprintf("%.2f (%s)", r.NewLeaderSeconds, r.NewLeader)
		}
		fmt.Fprintf(w, "%-18s %4s %10d %7.2f %9.2f %11.2f %13s %8d %8d %8d\n",
			r.Name, r.Node, r.LogIndex, r.StopSeconds, r.ListenSeconds, r.CaughtUpSeconds, nl,
			r.RSSBytes/mib, r.AnonBytes/mib, r.HWMBytes/mib)
		if r.Err != "" {
			fmt.Fprintf(w, "  error: %s\n", r.Err)
		}
	}
}

// printPairs prints each pair of the checkpoint's runs with the reference runs
// they alternated with, with the host's steal during each, and the median
// ratio of the pairs that had under lowSteal in both: the host's steal comes
// and goes within seconds and moves one run more than the log size does.
func printPairs(w io.Writer, cp checkpoint) {
	all, calm := cp.calmPairs()
	if len(all) == 0 {
		return
	}
	steal := func(r benchResult) string {
		if r.MachineStealPct == nil {
			return "?"
		}
		return fmt.Sprintf("%.1f%%", *r.MachineStealPct)
	}
	var parts []string
	for i, ratio := range all {
		parts = append(parts, fmt.Sprintf("%.2f (steal %s/%s)", ratio, steal(cp.Runs[i]), steal(cp.RefRuns[i])))
	}
	fmt.Fprintf(w, "  pair by pair, this cluster/reference: %s\n", strings.Join(parts, ", "))
	if n := len(cp.Discarded); n > 0 {
		fmt.Fprintf(w, "  (%d runs with more steal than allowed were run again and are not in these)\n", n)
	}
	if len(calm) == 0 {
		fmt.Fprintf(w, "  no pair had under %.0f%% steal in both runs\n", lowSteal)
		return
	}
	slices.Sort(calm)
	med := calm[len(calm)/2]
	if len(calm)%2 == 0 {
		med = (calm[len(calm)/2-1] + calm[len(calm)/2]) / 2
	}
	fmt.Fprintf(w, "  the %d pairs with under %.0f%% steal in both runs: median %.2f (%s >= %.2f)\n",
		len(calm), lowSteal, med, check(med >= targetThroughputRatio), targetThroughputRatio)
}

// check is the verdict on one target.
func check(ok bool) string {
	if ok {
		return "meets"
	}
	return "MISSES"
}

// printVerdict compares the run with the targets of issue 5.
func printVerdict(w io.Writer, r *report) {
	if len(r.Checkpoints) == 0 {
		return
	}
	first, last := r.Checkpoints[0], r.Checkpoints[len(r.Checkpoints)-1]
	if r, ok := last.refRatio(); ok {
		fmt.Fprintf(w, "throughput at log index %d: %.0f tx/s, %.2f of a fresh empty cluster's %.0f tx/s measured in alternation (medians of %d runs each; %s >= %.2f)\n",
			last.LogIndex, last.Bench.TxPerSec, r, last.RefBench.TxPerSec, len(last.Runs),
			check(r >= targetThroughputRatio), targetThroughputRatio)
		printPairs(w, last)
	} else if first.Bench.TxPerSec > 0 {
		ratio := last.Bench.TxPerSec / first.Bench.TxPerSec
		fmt.Fprintf(w, "throughput at log index %d: %.0f tx/s, %.2f of the empty log's %.0f tx/s (medians of %d and %d runs; %s >= %.2f)\n",
			last.LogIndex, last.Bench.TxPerSec, ratio, first.Bench.TxPerSec, len(last.Runs), len(first.Runs),
			check(ratio >= targetThroughputRatio), targetThroughputRatio)
	}
	var maxRSS, maxAnon, maxHWM int64
	for _, n := range last.Nodes {
		maxRSS, maxAnon, maxHWM = max(maxRSS, n.RSSBytes), max(maxAnon, n.AnonBytes), max(maxHWM, n.HWMBytes)
	}
	fmt.Fprintf(w, "RSS per node at log index %d: at most %d MiB now (%d MiB anonymous), %d MiB at peak (%s < %d MiB)\n",
		last.LogIndexEnd, maxRSS/mib, maxAnon/mib, maxHWM/mib, check(maxHWM < targetRSSBytes), targetRSSBytes/mib)
	for _, rs := range r.Restarts {
		if rs.Err != "" {
			fmt.Fprintf(w, "%s: failed: %s\n", rs.Name, rs.Err)
			continue
		}
		leader := ""
		if rs.NewLeader != "" {
			leader = fmt.Sprintf("%s led %.2fs after the kill; ", rs.NewLeader, rs.NewLeaderSeconds)
		}
		fmt.Fprintf(w, "%s: %scaught up %.2fs after start (%s < %v)\n",
			rs.Name, leader, rs.CaughtUpSeconds, check(rs.CaughtUpSeconds < targetCatchUp.Seconds()), targetCatchUp)
	}
}
