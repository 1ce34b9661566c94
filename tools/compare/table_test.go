package main

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestMarkdown(t *testing.T) {
	cpu := func(v float64) *float64 { return &v }
	runs := []result{
		{System: systemNATS, Clients: 64, TxPerSec: 9000, P50ms: 5, P99ms: 18, ServerCPU: cpu(140)},
		{System: systemNATS, Clients: 64, TxPerSec: 9400, P50ms: 6, P99ms: 20, ServerCPU: cpu(150)},
		{System: systemNATSAsync, Clients: 64, TxPerSec: 10000, P50ms: 6, P99ms: 19},
		{System: systemNATSAsync, Clients: 64, TxPerSec: 10000, P50ms: 6, P99ms: 21},
		// A bad run among three: the median keeps it out.
		{System: systemTxlogStream, Clients: 64, TxPerSec: 15000, P50ms: 4, P99ms: 12, ServerCPU: cpu(100), ClientCPU: cpu(30)},
		{System: systemTxlogStream, Clients: 64, TxPerSec: 100, P50ms: 400, P99ms: 5000, ServerCPU: cpu(9000), ClientCPU: cpu(900), Errors: map[string]int64{"timeout": 3}},
		{System: systemTxlogStream, Clients: 64, TxPerSec: 16000, P50ms: 4, P99ms: 14, ServerCPU: cpu(110), ClientCPU: cpu(34)},
		{System: systemEtcd, Clients: 1, TxPerSec: 500, P50ms: 2, P99ms: 5},
	}
	got := markdown(runs)
	for _, want := range []string{
		// 15,000 tx/s against JetStream's best median, nats-async's 10,000.
		"| 64 | txlog-stream | 15000 | 1.50 | 4.00 | 14.00 | 110 | 34 | 3 | 3 (100–16000) |",
		"| 64 | nats | 9200 | 0.92 | 5.50 | 19.00 | 145 | – | 0 | 2 (9000–9400) |",
		"| 64 | nats-async | 10000 | 1.00 | 6.00 | 20.00 | – | – | 0 | 2 (10000–10000) |",
		// No JetStream run at 1 client: no ratio.
		"| 1 | etcd | 500 | – | 2.00 | 5.00 | – | – | 0 | 1 (500–500) |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("markdown() lacks the row\n%s\ngot:\n%s", want, got)
		}
	}
	if i, j := strings.Index(got, "| 1 | etcd"), strings.Index(got, "| 64 |"); i < 0 || j < 0 || i > j {
		t.Errorf("markdown(): the rows of 1 client do not come before those of 64:\n%s", got)
	}
}

func TestReadResults(t *testing.T) {
	rs, err := readResults(strings.NewReader(`{"system":"etcd","clients":1,"tx_per_sec":5}` + "\n\n" + `{"system":"nats","clients":1,"tx_per_sec":7}` + "\n"))
	if err != nil || len(rs) != 2 || rs[1].TxPerSec != 7 {
		t.Fatalf("readResults() = %+v, %v; want two runs", rs, err)
	}
	if _, err := readResults(strings.NewReader("{\"system\":\"etcd\"}\nnot json\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("readResults(bad line 2) error = %v, want one naming line 2", err)
	}
}

func TestTallyWindow(t *testing.T) {
	t0 := time.Unix(1000, 0)
	w := &window{from: t0, until: t0.Add(10 * time.Second)}
	tl := &tally{errors: map[string]int64{}}
	tl.record(w, t0.Add(-time.Millisecond), t0.Add(time.Millisecond), nil)           // started in the warmup
	tl.record(w, t0.Add(9999*time.Millisecond), t0.Add(10001*time.Millisecond), nil) // ended after the window
	tl.record(w, t0, t0.Add(3*time.Millisecond), nil)
	tl.record(w, t0.Add(time.Second), t0.Add(2*time.Second), errNoTransactions)
	if len(tl.lat) != 1 || tl.lat[0] != 3*time.Millisecond {
		t.Fatalf("latencies = %v, want only the 3ms write inside the window", tl.lat)
	}
	if tl.errors["error"] != 1 {
		t.Fatalf("errors = %v, want one", tl.errors)
	}
}

func TestSelfCPU(t *testing.T) {
	c0 := selfCPU()
	if c0 < 0 {
		t.Fatal("selfCPU() < 0: getrusage failed")
	}
	deadline := time.Now().Add(10 * time.Second)
	for selfCPU() <= c0 {
		if time.Now().After(deadline) {
			t.Fatal("selfCPU() did not grow in 10 s of spinning")
		}
	}
}

func TestStartProfile(t *testing.T) {
	path := t.TempDir() + "/cpu.pprof"
	stop, err := startProfile(path)
	if err != nil {
		t.Fatalf("startProfile(%s): %v", path, err)
	}
	stop()
	if st, err := os.Stat(path); err != nil || st.Size() == 0 {
		t.Fatalf("profile %s: %v, %v; want a non-empty file", path, st, err)
	}
	if _, err := startProfile(t.TempDir() + "/no/such/dir/cpu.pprof"); err == nil {
		t.Fatal("startProfile(a path in no directory) = nil error")
	}
}
