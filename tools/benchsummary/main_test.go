package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFloor(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPrintFloor: one floor, or two side by side, each with the 1-client
// target it gives; a measure the second floor lacks shows as a dash.
func TestPrintFloor(t *testing.T) {
	before := writeFloor(t, "before.json", `[{"name":"fdatasync","n":200,"p50_us":280,"p99_us":457},
		{"name":"bbolt","n":200,"p50_us":400,"p99_us":840},{"name":"tcp","n":2000,"p50_us":20,"p99_us":60}]`)
	after := writeFloor(t, "after.json", `[{"name":"bbolt","n":200,"p50_us":1000,"p99_us":3000},
		{"name":"tcp","n":2000,"p50_us":40,"p99_us":80},{"name":"extra","n":1,"p50_us":1,"p99_us":1}]`)

	var one strings.Builder
	if err := printFloor([]string{before}, &one); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| measure | n | p50 µs | p99 µs |",
		"| bbolt | 200 | 400 | 840 |",
		"target, 1.5 × (2 bbolt commits + TCP round trip): 1.23 ms\n",
	} {
		if !strings.Contains(one.String(), want) {
			t.Errorf("one floor: no %q in\n%s", want, one.String())
		}
	}

	var two strings.Builder
	if err := printFloor([]string{before, after}, &two); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| measure | n | p50 µs before | p99 µs before | n | p50 µs after | p99 µs after |",
		"| bbolt | 200 | 400 | 840 | 200 | 1000 | 3000 |",
		"| fdatasync | 200 | 280 | 457 | – | – | – |",
		"1.23 ms before, 3.06 ms after",
	} {
		if !strings.Contains(two.String(), want) {
			t.Errorf("two floors: no %q in\n%s", want, two.String())
		}
	}
	if strings.Contains(two.String(), "extra") {
		t.Errorf("a measure only the second floor has is printed:\n%s", two.String())
	}
}

// TestPrintFloorMedian: the target from the medians of every floor of a run,
// whatever the order they come in; a floor without the measures adds nothing.
func TestPrintFloorMedian(t *testing.T) {
	floor := func(name string, bbolt, tcp int) string {
		return writeFloor(t, name, fmt.Sprintf(`[{"name":"bbolt","n":200,"p50_us":%d,"p99_us":900},{"name":"tcp","n":2000,"p50_us":%d,"p99_us":60}]`, bbolt, tcp))
	}
	paths := []string{
		floor("before.json", 1000, 20), // a busy disk
		floor("after.json", 400, 30),
		floor("1.json", 420, 20),
		floor("2.json", 380, 20),
		writeFloor(t, "other.json", `[{"name":"fdatasync","n":200,"p50_us":280,"p99_us":457}]`),
	}
	var b strings.Builder
	if err := printFloorMedian(paths, &b); err != nil {
		t.Fatal(err)
	}
	// bbolt 380, 400, 420, 1000 → 410; tcp 20, 20, 20, 30 → 20; 1.5 × (820 + 20) µs.
	want := "Across 4 floor measurements (before, between the repeats, after): bbolt commit p50 median 410 µs (380–1000), TCP 20 µs; 1-client p50 target from the medians: 1.26 ms"
	if !strings.Contains(b.String(), want) {
		t.Errorf("got\n%s\nwant %q", b.String(), want)
	}

	b.Reset()
	if err := run(paths[:2], paths[2:], nil, &b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "| bbolt | 200 | 1000 | 900 | 200 | 400 | 900 |") || !strings.Contains(b.String(), want) {
		t.Errorf("run with floors between the repeats:\n%s", b.String())
	}
	b.Reset()
	if err := run(paths[:2], nil, nil, &b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "Across") {
		t.Errorf("run without floors between the repeats prints a median:\n%s", b.String())
	}
}

// TestPrintKernel: the table of the kernel's share and the context switches
// comes with summaries that have them, medians per system, and not without.
func TestPrintKernel(t *testing.T) {
	summary := func(sys string, cpu, kernel, switches float64) string {
		return fmt.Sprintf(`{"system":%q,"clients":64,"value_size":256,"ops_per_tx":1,"batch":1,"ack":"quorum","tx_per_sec":4000,`+
			`"latency_ms":{"p50":12,"p99":40},"errors":{},"client_cpu_cores":0.2,"nodes_cpu_us_per_tx":%v,`+
			`"nodes_sys_cpu_us_per_tx":%v,"nodes_ctx_switches_per_tx":%v}`, sys, cpu, kernel, switches)
	}
	dir := t.TempDir()
	with := filepath.Join(dir, "with.json")
	body := strings.Join([]string{
		summary("txlog", 300, 120, 5), summary("txlog", 320, 130, 6), summary("txlog", 340, 140, 7),
		summary("etcd", 360, 180, 8), summary("etcd", 380, 190, 9), summary("etcd", 400, 200, 10),
	}, "\n")
	if err := os.WriteFile(with, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := run(nil, nil, []string{with}, &out); err != nil {
		t.Fatal(err)
	}
	want := "| 64 clients, 256 B, ack=quorum | 320 | 380 | 130 | 190 | 0.41 | 0.50 | 6.0 | 9.0 |"
	if !strings.Contains(out.String(), want) {
		t.Fatalf("output lacks %q:\n%s", want, out.String())
	}

	// Summaries written before the benches counted them: no such table.
	old := filepath.Join(dir, "old.json")
	body = strings.ReplaceAll(body, `,"nodes_sys_cpu_us_per_tx"`, `,"x"`)
	body = strings.ReplaceAll(body, `,"nodes_ctx_switches_per_tx"`, `,"y"`)
	if err := os.WriteFile(old, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := run(nil, nil, []string{old}, &out); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "kernel") {
		t.Fatalf("a table of the kernel's share from summaries without it:\n%s", out.String())
	}
}

// TestPrintSteal: each repeat's pair with the steal of both runs, and the
// median ratio of the pairs in which neither run had 2% or more; nothing
// from summaries without the steal.
func TestPrintSteal(t *testing.T) {
	summary := func(sys string, tps, steal float64) string {
		return fmt.Sprintf(`{"system":%q,"clients":64,"value_size":256,"ops_per_tx":1,"batch":1,"ack":"quorum","tx_per_sec":%v,`+
			`"latency_ms":{"p50":12,"p99":40},"errors":{},"client_cpu_cores":0.2,"nodes_cpu_us_per_tx":300,"machine_steal_pct":%v}`, sys, tps, steal)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "runs.json")
	// Repeats 1 and 3 calm (ratios 1.50 and 1.70), 2 with steal on txlog's run
	// (1.00), 4 with steal on etcd's (2.40).
	body := strings.Join([]string{
		summary("txlog", 6000, 0.5), summary("etcd", 4000, 1.0),
		summary("txlog", 4000, 9.0), summary("etcd", 4000, 0.0),
		summary("etcd", 4000, 1.9), summary("txlog", 6800, 0.0),
		summary("txlog", 7200, 0.2), summary("etcd", 3000, 12.5),
	}, "\n")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := run(nil, nil, []string{path}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| 64 clients, 256 B, ack=quorum | 2 | 4000 | 9.0 | 4000 | 0.0 | 1.00 |",
		"| 64 clients, 256 B, ack=quorum | 4 | 7200 | 0.2 | 3000 | 12.5 | 2.40 |",
		"under 2% steal (median, pairs): 64 clients, 256 B, ack=quorum: 1.60 (2 of 4)",
		"steal  9.0%",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}

	old := filepath.Join(dir, "old.json")
	if err := os.WriteFile(old, []byte(strings.ReplaceAll(body, `,"machine_steal_pct"`, `,"x"`)), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := run(nil, nil, []string{old}, &out); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "steal") {
		t.Fatalf("steal from summaries without it:\n%s", out.String())
	}
}
