package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// table prints the markdown table of the runs in the JSON-lines files args.
func table(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("compare table", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	var runs []result
	for _, path := range fs.Args() {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		rs, err := readResults(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		runs = append(runs, rs...)
	}
	if len(runs) == 0 {
		return errors.New("no runs")
	}
	_, err := io.WriteString(stdout, markdown(runs))
	return err
}

// readResults reads one result per non-empty line.
func readResults(r io.Reader) ([]result, error) {
	var out []result
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var res result
		if err := json.Unmarshal(sc.Bytes(), &res); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		out = append(out, res)
	}
	return out, sc.Err()
}

// row is the medians of one system's runs at one client count.
type row struct {
	system                   string
	clients, runs            int
	txPerSec, p50, p99       float64
	cpu                      float64 // µs per tx; 0 when no run had it
	clientCPU                float64 // the load generator's µs per tx; 0 when no run had it
	errors                   int64
	minTxPerSec, maxTxPerSec float64
}

// markdown returns the table of the runs: per client count, one row per
// system with the medians of its runs, and the ratio of its median
// throughput to JetStream's best median (nats or nats-async) at that count.
func markdown(runs []result) string {
	type k struct {
		system  string
		clients int
	}
	by := map[k][]result{}
	var counts []int
	for _, r := range runs {
		by[k{r.System, r.Clients}] = append(by[k{r.System, r.Clients}], r)
		if !slices.Contains(counts, r.Clients) {
			counts = append(counts, r.Clients)
		}
	}
	slices.Sort(counts)
	var b strings.Builder
	b.WriteString("| clients | system | tx/s | × JetStream's best | p50 ms | p99 ms | server CPU µs/tx | client CPU µs/tx | errors | runs (tx/s range) |\n")
	b.WriteString("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n")
	for _, c := range counts {
		var rows []row
		best := 0.0
		for _, s := range systems {
			rs := by[k{s, c}]
			if len(rs) == 0 {
				continue
			}
			rw := summarizeRuns(s, c, rs)
			rows = append(rows, rw)
			if s == systemNATS || s == systemNATSAsync {
				best = max(best, rw.txPerSec)
			}
		}
		for _, rw := range rows {
			ratio := "–"
			if best > 0 {
				ratio = fmt.Sprintf("%.2f", rw.txPerSec/best)
			}
			fmt.Fprintf(&b, "| %d | %s | %.0f | %s | %.2f | %.2f | %s | %s | %d | %d (%.0f–%.0f) |\n",
				c, rw.system, rw.txPerSec, ratio, rw.p50, rw.p99, micros(rw.cpu), micros(rw.clientCPU), rw.errors, rw.runs, rw.minTxPerSec, rw.maxTxPerSec)
		}
	}
	return b.String()
}

// summarizeRuns returns the medians of rs, the runs of one system at one
// client count.
func summarizeRuns(system string, clients int, rs []result) row {
	var tps, p50, p99, cpu, clientCPU []float64
	rw := row{system: system, clients: clients, runs: len(rs)}
	for _, r := range rs {
		tps = append(tps, r.TxPerSec)
		p50 = append(p50, r.P50ms)
		p99 = append(p99, r.P99ms)
		if r.ServerCPU != nil {
			cpu = append(cpu, *r.ServerCPU)
		}
		if r.ClientCPU != nil {
			clientCPU = append(clientCPU, *r.ClientCPU)
		}
		for _, n := range r.Errors {
			rw.errors += n
		}
	}
	rw.txPerSec, rw.p50, rw.p99, rw.cpu, rw.clientCPU = median(tps), median(p50), median(p99), median(cpu), median(clientCPU)
	rw.minTxPerSec, rw.maxTxPerSec = slices.Min(tps), slices.Max(tps)
	return rw
}

// micros formats a CPU figure in µs per tx, "–" for none.
func micros(v float64) string {
	if v <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f", v)
}
