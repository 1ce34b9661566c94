package chaos

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// reportFixture is a report with three checkers, one fault kind that ran
// and one that never did.
func reportFixture() *Report {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := &Report{Seed: 1, Mode: "targets", Started: start, Duration: 1500 * time.Millisecond,
		Faults:     []FaultEvent{{Kind: FaultKillLeader, Injected: start.Add(100 * time.Millisecond), Healed: start.Add(time.Second), Election: 250 * time.Millisecond}},
		FaultStats: []FaultStats{{Kind: FaultKillLeader, Count: 1, To200P50: 250 * time.Millisecond, RecoveryMax: 2 * time.Second}},
		Series:     []Bucket{{T: 0, OK: 37, Reads: 12}, {T: 1, OK: 41, Errors: 3}},
		Checks: []CheckResult{{Name: "first", Pass: true, Summary: "s1"}, {Name: "second", Pass: true, Summary: "s2"},
			{Name: "third", Pass: true, Summary: "s3"}},
	}
	w, _ := ParseFaults("kill-leader*2,pause-leader")
	r.FaultsConfigured, r.FaultsNeverInjected = neverInjected(w, r.Faults)
	return r
}

// TestReportNumbering: the checkers are numbered from 1, the same in the
// text, the JSON and the HTML.
func TestReportNumbering(t *testing.T) {
	r := reportFixture()
	dir := t.TempDir()
	var b strings.Builder
	if err := r.WriteSummary(&b); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteJSON(filepath.Join(dir, "r.json")); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteHTML(filepath.Join(dir, "r.html")); err != nil {
		t.Fatal(err)
	}
	var js struct {
		Checks []struct {
			Number int    `json:"number"`
			Name   string `json:"name"`
		} `json:"checks"`
	}
	jb, _ := os.ReadFile(filepath.Join(dir, "r.json"))
	if err := json.Unmarshal(jb, &js); err != nil {
		t.Fatal(err)
	}
	hb, _ := os.ReadFile(filepath.Join(dir, "r.html"))
	htmlNums := regexp.MustCompile(`<tr><td>(\d+)</td><td>(first|second|third)</td>`).FindAllStringSubmatch(string(hb), -1)
	for i, name := range []string{"first", "second", "third"} {
		n := i + 1
		if !strings.Contains(b.String(), strings.Repeat(" ", 2)+itoa(n)+". PASS  "+name+":") {
			t.Errorf("text lacks %d. %s:\n%s", n, name, b.String())
		}
		if js.Checks[i].Number != n || js.Checks[i].Name != name {
			t.Errorf("JSON check %d = %+v, want number %d", i, js.Checks[i], n)
		}
		if len(htmlNums) != 3 || htmlNums[i][1] != itoa(n) || htmlNums[i][2] != name {
			t.Errorf("HTML checker rows %v, want %s numbered %d", htmlNums, name, n)
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestReportDurationsInSeconds: every duration in the JSON is seconds, as a
// float.
func TestReportDurationsInSeconds(t *testing.T) {
	r := reportFixture()
	r.Leases = &LeaseReport{TTL: 3 * time.Second, Stats: LeaseStats{MaxReplace: 4500 * time.Millisecond}}
	r.Consumers = &ConsumerReport{TTL: 2 * time.Second}
	path := filepath.Join(t.TempDir(), "r.json")
	if err := r.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	var got struct {
		Duration   float64 `json:"duration"`
		FaultStats []struct {
			To200P50    float64 `json:"to_200_p50"`
			RecoveryMax float64 `json:"recovery_max"`
		} `json:"fault_stats"`
		Faults []struct {
			Election float64 `json:"election"`
		} `json:"faults"`
		Leases struct {
			TTL   float64 `json:"ttl"`
			Stats struct {
				MaxReplace float64 `json:"max_replace"`
			} `json:"stats"`
		} `json:"leases"`
		Consumers struct {
			TTL float64 `json:"ttl"`
		} `json:"consumers"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Duration != 1.5 || got.FaultStats[0].To200P50 != 0.25 || got.FaultStats[0].RecoveryMax != 2 || got.Faults[0].Election != 0.25 ||
		got.Leases.TTL != 3 || got.Leases.Stats.MaxReplace != 4.5 || got.Consumers.TTL != 2 {
		t.Fatalf("durations not in seconds: %+v\n%s", got, b)
	}
	// A nanosecond count anywhere would be a large integer.
	if m := regexp.MustCompile(`: \d{7,}[,\n]`).Find(b); m != nil {
		t.Fatalf("a duration in nanoseconds: %q", m)
	}
}

// TestReportAxes: the answers/s chart has a y axis with round ticks in
// answers/s, and the time axis ticks in seconds.
func TestReportAxes(t *testing.T) {
	r := reportFixture()
	svg := r.timelineSVG()
	for _, want := range []string{`class="yaxis"`, `>0/s<`, `>20/s<`, `>40/s<`, `>60/s<`, `answers/s`, `>0s<`, `>1s<`, `time since the start (s)`} {
		if !strings.Contains(svg, want) {
			t.Errorf("chart lacks %q", want)
		}
	}
	for _, c := range []struct{ peak, n, want int }{{41, 4, 20}, {1, 4, 1}, {100, 4, 50}, {7, 10, 1}, {300, 10, 50}, {0, 4, 1}} {
		if got := niceStep(c.peak, c.n); got != c.want {
			t.Errorf("niceStep(%d, %d) = %d, want %d", c.peak, c.n, got, c.want)
		}
	}
}

// TestReportNeverInjected: the kinds configured but never injected are
// named in the text and the HTML, and CheckAllFaults fails on them.
func TestReportNeverInjected(t *testing.T) {
	r := reportFixture()
	if len(r.FaultsConfigured) != 2 || len(r.FaultsNeverInjected) != 1 || r.FaultsNeverInjected[0] != FaultPauseLeader {
		t.Fatalf("configured %v, never %v", r.FaultsConfigured, r.FaultsNeverInjected)
	}
	var b strings.Builder
	r.WriteSummary(&b)
	if !strings.Contains(b.String(), "fault kinds never injected: 1 of 2 configured: pause-leader") {
		t.Errorf("text:\n%s", b.String())
	}
	path := filepath.Join(t.TempDir(), "r.html")
	r.WriteHTML(path)
	h, _ := os.ReadFile(path)
	if !strings.Contains(string(h), "never injected: 1 of 2 configured: pause-leader") {
		t.Errorf("HTML lacks the never-injected line")
	}
	if c := CheckAllFaults(r.FaultsConfigured, r.FaultsNeverInjected); c.Pass || c.Name != NameAllFaults || !strings.Contains(strings.Join(c.Evidence, ""), "pause-leader") {
		t.Errorf("a kind never injected: %+v", c)
	}
	if c := CheckAllFaults(r.FaultsConfigured, nil); !c.Pass {
		t.Errorf("all injected: %+v", c)
	}
	// The idle leader change after the workload does not count as injected.
	_, never := neverInjected([]FaultWeight{{Fault: FaultTermLeader, Weight: 1}}, []FaultEvent{{Kind: FaultTermLeader, Idle: true, Injected: time.Now()}})
	if len(never) != 1 {
		t.Errorf("an idle fault counted as injected")
	}
}

// TestRunRequireAllFaults: a run whose faults include one the targets
// cannot inject (redis-outage without Redis commands) fails with
// RequireAllFaults, by the checker named, and passes without it.
func TestRunRequireAllFaults(t *testing.T) {
	addRedis := func(c *Config) {
		c.Nemesis.Faults = append(c.Nemesis.Faults, FaultWeight{Fault: FaultRedisOutage, Weight: 1})
	}
	rep, _ := memRun(t, newMemStore(), addRedis)
	if rep.Failed() || len(rep.FaultsNeverInjected) != 1 || rep.FaultsNeverInjected[0] != FaultRedisOutage {
		t.Fatalf("without --require-all-faults: failed %v, never %v\n%s", rep.Failed(), rep.FaultsNeverInjected, summary(rep))
	}
	rep, _ = memRun(t, newMemStore(), addRedis, func(c *Config) { c.RequireAllFaults = true })
	if !rep.Failed() {
		t.Fatalf("with --require-all-faults a run that never injected redis-outage passed:\n%s", summary(rep))
	}
	if c := checkByName(t, rep, NameAllFaults); c.Pass || c.Number != len(rep.Checks) {
		t.Fatalf("checker %+v", c)
	}
}
