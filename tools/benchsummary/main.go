// Command benchsummary reads the JSON summaries of `txlog bench --json` and
// `etcdbench --json` runs and prints Markdown tables of their medians: for
// each workload both systems ran, txlog next to etcd with the ratio
// txlog/etcd; then the workloads only one system ran. With --floor it first
// prints the floor measured by tools/floor --json.
//
// Usage:
//
//	benchsummary [--floor floor.json [--floor floor-after.json] [--floor-during floor-N.json]...] RESULT.json...
//	benchsummary --brief RESULT.json...   (one line per run, nothing else)
//
// A workload is the clients, the transactions per request, the ack level, the
// operations per transaction and the value size. Each input file holds one or
// more JSON summaries.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// result holds the fields of a bench summary that the tables use.
type result struct {
	System    string  `json:"system"`
	Clients   int     `json:"clients"`
	ValueSize int     `json:"value_size"`
	OpsPerTx  int     `json:"ops_per_tx"`
	Batch     int     `json:"batch"`
	Ack       string  `json:"ack"`
	TxPerSec  float64 `json:"tx_per_sec"`
	Latency   struct {
		P50 float64 `json:"p50"`
		P99 float64 `json:"p99"`
	} `json:"latency_ms"`
	Errors        map[string]int64 `json:"errors"`
	ClientCPU     float64          `json:"client_cpu_cores"`
	NodesCPUPerTx float64          `json:"nodes_cpu_us_per_tx"`
	// Zero in summaries from before the benches counted them.
	NodesSysCPUPerTx   float64 `json:"nodes_sys_cpu_us_per_tx"`
	NodesSwitchesPerTx float64 `json:"nodes_ctx_switches_per_tx"`
	// nil in summaries from before the benches read it.
	MachineStealPct *float64 `json:"machine_steal_pct"`
}

// workload is what makes two runs comparable.
type workload struct {
	Clients, Batch, OpsPerTx, ValueSize int
	Ack                                 string
}

func (w workload) String() string {
	s := fmt.Sprintf("%d clients", w.Clients)
	if w.Batch > 1 {
		s += fmt.Sprintf(", batch %d", w.Batch)
	}
	if w.OpsPerTx > 1 {
		s += fmt.Sprintf(", %d ops/tx", w.OpsPerTx)
	}
	return s + fmt.Sprintf(", %d B, ack=%s", w.ValueSize, w.Ack)
}

// floorStat is one line of tools/floor --json.
type floorStat struct {
	Name string  `json:"name"`
	N    int     `json:"n"`
	P50  float64 `json:"p50_us"`
	P99  float64 `json:"p99_us"`
}

func main() {
	var floors []string
	flag.Func("floor", "JSON output of tools/floor to print first; twice: measured before and after the runs, side by side", func(v string) error {
		floors = append(floors, v)
		return nil
	})
	var during []string
	flag.Func("floor-during", "JSON output of tools/floor measured between the repeats (repeatable): with --floor, the 1-client target from the medians of all the floors is printed too", func(v string) error {
		during = append(during, v)
		return nil
	})
	brief := flag.Bool("brief", false, "print one line per run and nothing else")
	flag.Parse()
	var err error
	if *brief {
		err = printBrief(flag.Args(), os.Stdout)
	} else {
		err = run(floors, during, flag.Args(), os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchsummary:", err)
		os.Exit(1)
	}
}

// run prints the floors (floorFiles side by side, and with duringFiles, the
// floors measured between the repeats, the target from the medians of all of
// them), then the results in files.
func run(floorFiles, duringFiles, files []string, w io.Writer) error {
	if len(floorFiles) > 0 {
		if err := printFloor(floorFiles, w); err != nil {
			return err
		}
		if len(duringFiles) > 0 {
			if err := printFloorMedian(append(slices.Clone(floorFiles), duringFiles...), w); err != nil {
				return err
			}
		}
		if len(files) == 0 {
			return nil
		}
	}
	runs := map[workload]map[string][]result{}
	for _, f := range files {
		rs, err := readResults(f)
		if err != nil {
			return err
		}
		for _, r := range rs {
			wl := workload{Clients: r.Clients, Batch: max(r.Batch, 1), OpsPerTx: r.OpsPerTx, ValueSize: r.ValueSize, Ack: r.Ack}
			if runs[wl] == nil {
				runs[wl] = map[string][]result{}
			}
			runs[wl][r.System] = append(runs[wl][r.System], r)
		}
	}
	if len(runs) == 0 {
		return errors.New("no results")
	}
	wls := make([]workload, 0, len(runs))
	for wl := range runs {
		wls = append(wls, wl)
	}
	slices.SortFunc(wls, func(a, b workload) int {
		return strings.Compare(fmt.Sprintf("%s %6d %6d %6d", a.Ack, a.Batch, a.OpsPerTx, a.Clients), fmt.Sprintf("%s %6d %6d %6d", b.Ack, b.Batch, b.OpsPerTx, b.Clients))
	})

	fmt.Fprintln(w, "txlog against etcd (medians of the runs; ratio = txlog/etcd):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| workload | runs | txlog tx/s | etcd tx/s | ratio | txlog p50 ms | etcd p50 ms | ratio | txlog p99 ms | etcd p99 ms | ratio | CPU µs/tx txlog | etcd |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, wl := range wls {
		t, e := runs[wl]["txlog"], runs[wl]["etcd"]
		if len(t) == 0 || len(e) == 0 {
			continue
		}
		tt, et := median(t, txPerSec), median(e, txPerSec)
		t50, e50 := median(t, p50), median(e, p50)
		t99, e99 := median(t, p99), median(e, p99)
		fmt.Fprintf(w, "| %s | %d+%d | %.0f | %.0f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.0f | %.0f |\n",
			wl, len(t), len(e), tt, et, tt/et, t50, e50, t50/e50, t99, e99, t99/e99, median(t, nodesCPU), median(e, nodesCPU))
	}
	printKernel(w, wls, runs)
	printSteal(w, wls, runs)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Runs one system only (medians):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| system | workload | runs | tx/s | p50 ms | p99 ms | CPU µs/tx | client cores | errors |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	for _, wl := range wls {
		if len(runs[wl]) > 1 {
			continue
		}
		for sys, rs := range runs[wl] {
			fmt.Fprintf(w, "| %s | %s | %d | %.0f | %.2f | %.2f | %.0f | %.2f | %s |\n",
				sys, wl, len(rs), median(rs, txPerSec), median(rs, p50), median(rs, p99), median(rs, nodesCPU), median(rs, clientCPU), errorTotals(rs))
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Every run (tx/s, p50 ms, p99 ms, client cores, errors):")
	fmt.Fprintln(w)
	for _, wl := range wls {
		for _, sys := range []string{"txlog", "etcd"} {
			for _, r := range runs[wl][sys] {
				fmt.Fprint(w, "    ")
				printLine(w, r)
			}
		}
	}
	return nil
}

// printKernel prints, for the workloads both systems ran, how much of the nodes'
// CPU per transaction was the kernel's and how many context switches their
// threads made per transaction, when the summaries have them.
func printKernel(w io.Writer, wls []workload, runs map[workload]map[string][]result) {
	var rows []string
	for _, wl := range wls {
		t, e := runs[wl]["txlog"], runs[wl]["etcd"]
		if len(t) == 0 || len(e) == 0 || median(t, nodesSwitches) == 0 || median(e, nodesSwitches) == 0 {
			continue
		}
		tc, ec := median(t, nodesCPU), median(e, nodesCPU)
		ts, es := median(t, nodesSys), median(e, nodesSys)
		rows = append(rows, fmt.Sprintf("| %s | %.0f | %.0f | %.0f | %.0f | %.2f | %.2f | %.1f | %.1f |",
			wl, tc, ec, ts, es, ts/tc, es/ec, median(t, nodesSwitches), median(e, nodesSwitches)))
	}
	printTable(w, "The nodes' CPU per transaction and the kernel's part of it (system time), and their threads' context switches per transaction (medians):",
		"| workload | CPU µs/tx txlog | etcd | kernel µs/tx txlog | etcd | kernel share txlog | etcd | switches/tx txlog | etcd |", rows)
}

// printTable prints a Markdown table of rows under title and header, after a
// blank line; nothing without rows.
func printTable(w io.Writer, title, header string, rows []string) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s\n\n%s\n", title, header)
	fmt.Fprintln(w, strings.Repeat("|---", strings.Count(header, "|")-1)+"|")
	for _, r := range rows {
		fmt.Fprintln(w, r)
	}
}

// lowSteal is the host's steal, in percent of the machine's CPU time, under
// which printSteal counts a run as undisturbed.
const lowSteal = 2.0

// printSteal prints, for the workloads both systems ran and whose summaries
// have the machine's steal, each repeat's pair of runs (the i-th run of each
// system, which the comparison script runs one after the other) with the steal
// during each, and the median ratio of the pairs in which neither run had
// lowSteal or more. On a shared virtual machine the host takes CPU time
// from the guest now and then, for seconds at a time, and a run that has some
// is slower than one that has none (docs/performance.md): the pairs show which
// ratios compare the two systems on equal terms.
func printSteal(w io.Writer, wls []workload, runs map[workload]map[string][]result) {
	var rows, medians []string
	for _, wl := range wls {
		t, e := runs[wl]["txlog"], runs[wl]["etcd"]
		var calm []float64
		n := min(len(t), len(e))
		for i := 0; i < n; i++ {
			ts, es := t[i].MachineStealPct, e[i].MachineStealPct
			if ts == nil || es == nil || e[i].TxPerSec == 0 {
				continue
			}
			ratio := t[i].TxPerSec / e[i].TxPerSec
			rows = append(rows, fmt.Sprintf("| %s | %d | %.0f | %.1f | %.0f | %.1f | %.2f |", wl, i+1, t[i].TxPerSec, *ts, e[i].TxPerSec, *es, ratio))
			if *ts < lowSteal && *es < lowSteal {
				calm = append(calm, ratio)
			}
		}
		if len(calm) > 0 {
			medians = append(medians, fmt.Sprintf("%s: %.2f (%d of %d)", wl, medianOf(calm), len(calm), n))
		}
	}
	if len(rows) == 0 {
		return
	}
	printTable(w, "Each repeat's pair of runs, with the CPU time the host stole from the machine during each (percent of the machine's CPU time):",
		"| workload | repeat | txlog tx/s | steal % | etcd tx/s | steal % | ratio |", rows)
	fmt.Fprintln(w)
	if len(medians) == 0 {
		fmt.Fprintf(w, "No pair had both runs under %.0f%% steal.\n", lowSteal)
		return
	}
	fmt.Fprintf(w, "Throughput ratio of the pairs with both runs under %.0f%% steal (median, pairs): %s\n", lowSteal, strings.Join(medians, "; "))
}

// printLine prints one run on one line.
func printLine(w io.Writer, r result) {
	wl := workload{Clients: r.Clients, Batch: max(r.Batch, 1), OpsPerTx: r.OpsPerTx, ValueSize: r.ValueSize, Ack: r.Ack}
	steal := ""
	if r.MachineStealPct != nil {
		steal = fmt.Sprintf("  steal %4.1f%%", *r.MachineStealPct)
	}
	fmt.Fprintf(w, "%-5s %-38s %8.0f tx/s  p50 %7.2fms  p99 %7.2fms  client %4.2f cores%s  errors: %s\n",
		r.System, wl, r.TxPerSec, r.Latency.P50, r.Latency.P99, r.ClientCPU, steal, errorTotals([]result{r}))
}

// printBrief prints every run in files, one a line.
func printBrief(files []string, w io.Writer) error {
	for _, f := range files {
		rs, err := readResults(f)
		if err != nil {
			return err
		}
		for _, r := range rs {
			printLine(w, r)
		}
	}
	return nil
}

func txPerSec(r result) float64      { return r.TxPerSec }
func p50(r result) float64           { return r.Latency.P50 }
func p99(r result) float64           { return r.Latency.P99 }
func nodesCPU(r result) float64      { return r.NodesCPUPerTx }
func nodesSys(r result) float64      { return r.NodesSysCPUPerTx }
func nodesSwitches(r result) float64 { return r.NodesSwitchesPerTx }
func clientCPU(r result) float64     { return r.ClientCPU }

// median returns the median of f over rs (the mean of the middle two for an
// even count).
func median(rs []result, f func(result) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	return medianOf(v)
}

// medianOf returns the median of v (the mean of the middle two for an even
// count), sorting v.
func medianOf(v []float64) float64 {
	slices.Sort(v)
	n := len(v)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// errorTotals sums the errors of rs by kind, as "none" or "kind n, ...".
func errorTotals(rs []result) string {
	tot := map[string]int64{}
	for _, r := range rs {
		for k, n := range r.Errors {
			tot[k] += n
		}
	}
	if len(tot) == 0 {
		return "none"
	}
	kinds := make([]string, 0, len(tot))
	for k := range tot {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	var parts []string
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s %d", k, tot[k]))
	}
	return strings.Join(parts, ", ")
}

// readResults decodes every JSON summary in the file at path.
func readResults(path string) ([]result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	var out []result
	for {
		var r result
		err := dec.Decode(&r)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if r.System == "" {
			return nil, fmt.Errorf("%s: a summary without system", path)
		}
		out = append(out, r)
	}
}

// printFloor prints the floors of paths side by side (the first measured
// before the runs, the second after), and the 1-client target of the issue that
// each gives: 1.5 × (two bbolt commits + a TCP round trip). A disk busy with other
// work while the floor was measured shows as a large difference between them.
func printFloor(paths []string, w io.Writer) error {
	floors := make([]map[string]floorStat, len(paths))
	var names []string
	for i, path := range paths {
		stats, err := readFloor(path)
		if err != nil {
			return err
		}
		floors[i] = map[string]floorStat{}
		for _, s := range stats {
			if i == 0 {
				names = append(names, s.Name) // the rows: the first floor's measures, in its order
			} else if _, ok := floors[0][s.Name]; !ok {
				continue
			}
			floors[i][s.Name] = s
		}
	}
	labels := []string{""}
	if len(paths) > 1 {
		labels = []string{" before", " after"}
		for i := 2; i < len(paths); i++ {
			labels = append(labels, fmt.Sprintf(" %d", i+1))
		}
	}
	fmt.Fprintln(w, "Floor (tools/floor, in the data directory's file system):")
	fmt.Fprintln(w)
	head, rule := "| measure |", "|---|"
	for _, l := range labels {
		head += fmt.Sprintf(" n | p50 µs%s | p99 µs%s |", l, l)
		rule += "---|---|---|"
	}
	fmt.Fprintln(w, head)
	fmt.Fprintln(w, rule)
	for _, name := range names {
		line := "| " + name + " |"
		for i := range paths {
			if s, ok := floors[i][name]; ok {
				line += fmt.Sprintf(" %d | %.0f | %.0f |", s.N, s.P50, s.P99)
			} else {
				line += " – | – | – |"
			}
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintln(w)
	var targets []string
	for i, f := range floors {
		bbolt, ok1 := f["bbolt"]
		tcp, ok2 := f["tcp"]
		if !ok1 || !ok2 {
			continue
		}
		targets = append(targets, fmt.Sprintf("%.2f ms%s", 1.5*(2*bbolt.P50+tcp.P50)/1000, labels[i]))
	}
	if len(targets) > 0 {
		fmt.Fprintf(w, "1-client p50 target, 1.5 × (2 bbolt commits + TCP round trip): %s\n\n", strings.Join(targets, ", "))
	}
	return nil
}

// readFloor reads the output of tools/floor --json.
func readFloor(path string) ([]floorStat, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var stats []floorStat
	if err := json.Unmarshal(b, &stats); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return stats, nil
}

// printFloorMedian prints the 1-client target from the medians of the bbolt
// commit and TCP round trip over every floor measured in a run (before it,
// between its repeats, after it). The disk's speed moves during a run, so
// one measurement taken while it was busy with other work sets the target
// before or after alone; the median of them all follows the disk the runs had.
func printFloorMedian(paths []string, w io.Writer) error {
	var bbolt, tcp []float64
	for _, path := range paths {
		stats, err := readFloor(path)
		if err != nil {
			return err
		}
		for _, s := range stats {
			switch s.Name {
			case "bbolt":
				bbolt = append(bbolt, s.P50)
			case "tcp":
				tcp = append(tcp, s.P50)
			}
		}
	}
	if len(bbolt) == 0 || len(tcp) == 0 {
		return nil
	}
	mb, mt := medianOf(bbolt), medianOf(tcp) // sorted now
	fmt.Fprintf(w, "Across %d floor measurements (before, between the repeats, after): bbolt commit p50 median %.0f µs (%.0f–%.0f), TCP %.0f µs; 1-client p50 target from the medians: %.2f ms\n\n",
		len(bbolt), mb, bbolt[0], bbolt[len(bbolt)-1], mt, 1.5*(2*mb+mt)/1000)
	return nil
}
