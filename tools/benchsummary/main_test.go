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
