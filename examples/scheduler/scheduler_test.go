package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/launcher"
	"github.com/txlog/txlog/launcher/launchertest"
)

// The timing of TestSchedulerFailovers.
const (
	testLease  = "jobs/settlement"
	testTTL    = 3 * time.Second
	testPeriod = 2 * time.Second
	// testWork is long enough that the test can SIGSTOP the holder while a
	// run works, before its write goes out.
	testWork = 700 * time.Millisecond
	// leaseClockSkew is the store's LeaseClockSkew: a grant after an expiry
	// waits that much longer.
	leaseClockSkew = 500 * time.Millisecond
	// takeoverSlack covers the rest of a takeover: one election, the
	// standby's long poll waking up, its acquire.
	takeoverSlack = 2 * time.Second
	// leaseGained is what a scheduler logs when it gains the lease, with
	// the token.
	leaseGained = "lease gained"
)

// maxSkipped is the takeover allowance: the most periods that may go
// unrun between the last run of one holder and the first of the next. The
// old holder stops at d, at most one period after the start of its last
// run's period a plus its work; its lease runs out at most a TTL after d
// (its last renewal was before d), the next grant comes leaseClockSkew
// later and the new holder has it within takeoverSlack; it runs from the
// period it gained the lease in. So b - a - 1 < (TTL + skew + slack)/period,
// rounded up.
func maxSkipped(ttl, period time.Duration) int {
	return int(math.Ceil(float64(ttl+leaseClockSkew+takeoverSlack) / float64(period)))
}

// runSummary is what checkRuns learned from a log.
type runSummary struct {
	periods []int64          // the periods that ran, ascending
	tokens  map[int64]uint64 // the token each ran under
	skipped []int64          // the periods of the covered range that did not run
	stale   int              // fenced settlements the log shows rejected
}

// checkRuns checks the committed log of a scheduler run:
//
//   - every period ran at most once: one committed "settle/<n>" entry each;
//   - no write with a stale token was applied: walking the log in index
//     order, no committed fenced entry of the lease carries a token below one
//     seen before (committed, or as the "actual" token of a rejected entry's
//     conflict), and each carries a fence of the lease at all;
//   - tokens only grew: a later period never ran under a smaller token;
//   - no gaps past the takeover allowance: between two periods that ran, the
//     periods skipped are none while one token (holder) ran both, and at
//     most maxSkip where the token changed.
func checkRuns(entries []wire.LogEntry, leaseName string, maxSkip int) (runSummary, error) {
	sum := runSummary{tokens: make(map[int64]uint64)}
	var cur uint64 // the largest token the log has shown current
	for _, e := range entries {
		n, ok := strings.CutPrefix(e.IdempotencyKey, "settle/")
		if !ok {
			continue
		}
		period, err := strconv.ParseInt(n, 10, 64)
		if err != nil {
			return sum, fmt.Errorf("index %d: idempotency key %q: %v", e.Index, e.IdempotencyKey, err)
		}
		if e.Fence == nil || e.Fence.Lease != leaseName {
			return sum, fmt.Errorf("index %d: period %d has fence %+v, want one of lease %q", e.Index, period, e.Fence, leaseName)
		}
		switch e.Status {
		case wire.StatusRejected:
			if e.Conflict != nil && e.Conflict.Fence == leaseName {
				sum.stale++
				cur = max(cur, e.Conflict.Actual)
			}
			continue
		case wire.StatusCommitted:
		default:
			continue
		}
		if e.Fence.Token < cur {
			return sum, fmt.Errorf("index %d: period %d applied with token %d after token %d was current: a stale write", e.Index, period, e.Fence.Token, cur)
		}
		cur = e.Fence.Token
		if t, dup := sum.tokens[period]; dup {
			return sum, fmt.Errorf("index %d: period %d ran twice (tokens %d and %d)", e.Index, period, t, e.Fence.Token)
		}
		sum.tokens[period] = e.Fence.Token
		sum.periods = append(sum.periods, period)
	}
	slices.Sort(sum.periods)
	for i := 1; i < len(sum.periods); i++ {
		a, b := sum.periods[i-1], sum.periods[i]
		ta, tb := sum.tokens[a], sum.tokens[b]
		if tb < ta {
			return sum, fmt.Errorf("period %d ran with token %d, after period %d with token %d: tokens went back", b, tb, a, ta)
		}
		gap := int(b - a - 1)
		switch {
		case gap > 0 && ta == tb:
			return sum, fmt.Errorf("periods %d to %d skipped while token %d held the lease", a+1, b-1, ta)
		case gap > maxSkip:
			return sum, fmt.Errorf("periods %d to %d skipped at the takeover from token %d to %d: %d, allowance %d", a+1, b-1, ta, tb, gap, maxSkip)
		}
		for p := a + 1; p < b; p++ {
			sum.skipped = append(sum.skipped, p)
		}
	}
	return sum, nil
}

// TestCheckRunsFails feeds checkRuns doctored histories it must refuse.
func TestCheckRunsFails(t *testing.T) {
	run := func(index uint64, period int64, token uint64) wire.LogEntry {
		return wire.LogEntry{Index: index, IdempotencyKey: fmt.Sprintf("settle/%d", period), Status: wire.StatusCommitted,
			Fence: &wire.Fence{Lease: testLease, Token: token}}
	}
	rejected := func(index uint64, period int64, token, actual uint64) wire.LogEntry {
		e := run(index, period, token)
		e.Status = wire.StatusRejected
		e.Conflict = &wire.Conflict{Fence: testLease, Expected: token, Actual: actual}
		return e
	}
	good := []wire.LogEntry{run(10, 100, 5), run(11, 101, 5), rejected(30, 102, 5, 20), run(31, 103, 20), run(32, 104, 20)}
	if sum, err := checkRuns(good, testLease, 2); err != nil || sum.stale != 1 || !slices.Equal(sum.skipped, []int64{102}) {
		t.Fatalf("checkRuns(good) = %+v, %v; want no error, one stale write and period 102 skipped", sum, err)
	}
	for _, tc := range []struct {
		name    string
		entries []wire.LogEntry
	}{
		{"duplicate period", []wire.LogEntry{run(10, 100, 5), run(11, 101, 5), run(30, 101, 20)}},
		{"stale token applied after a newer one", []wire.LogEntry{run(10, 100, 5), run(31, 101, 20), run(32, 102, 5)}},
		{"stale token applied after a rejection showed a newer one", []wire.LogEntry{run(10, 100, 5), rejected(30, 101, 5, 20), run(32, 102, 5)}},
		{"tokens went back across periods", []wire.LogEntry{run(10, 101, 20), run(11, 100, 21), run(12, 99, 22)}},
		{"gap within one holder", []wire.LogEntry{run(10, 100, 5), run(11, 102, 5)}},
		{"gap past the takeover allowance", []wire.LogEntry{run(10, 100, 5), run(30, 104, 20)}},
		{"run without a fence", []wire.LogEntry{{Index: 10, IdempotencyKey: "settle/100", Status: wire.StatusCommitted}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if sum, err := checkRuns(tc.entries, testLease, 2); err == nil {
				t.Fatalf("checkRuns() = %+v, nil; want an error", sum)
			}
		})
	}
}

// logLine is one JSON record of a scheduler's stderr.
type logLine struct {
	launchertest.LogRecord
	Node     string `json:"node"`
	Period   int64  `json:"period"`
	Fence    string `json:"fence"`
	Expected uint64 `json:"expected"`
	Actual   uint64 `json:"actual"`
}

// readLines reads the records a scheduler wrote so far; a line being
// written is cut and left out.
func readLines(t *testing.T, p *launcher.Process) []logLine {
	return launchertest.ReadLog[logLine](t, p)
}

// count counts the records with message msg after the time from.
func count(ls []logLine, msg string, from time.Time) int {
	n := 0
	for _, l := range ls {
		if l.Msg == msg && l.Time.After(from) {
			n++
		}
	}
	return n
}

// startScheduler starts one scheduler instance against c's nodes.
func startScheduler(t *testing.T, bin string, c *launcher.Cluster, id string) *launcher.Process {
	t.Helper()
	return launchertest.StartProcess(t, launcher.ProcessConfig{
		ID:  id,
		Bin: bin,
		Args: []string{"--targets", strings.Join(c.HTTPAddrs(), ","), "--lease", testLease, "--ttl", testTTL.String(),
			"--period", testPeriod.String(), "--work", testWork.String(), "--id", id},
	})
}

// readClusterLog pages through the log of the node at base.
func readClusterLog(ctx context.Context, t *testing.T, base string) []wire.LogEntry {
	t.Helper()
	cl := client.NewClient(client.ClientConfig{Endpoints: []string{base}})
	var all []wire.LogEntry
	for from := uint64(1); ; {
		page, err := cl.Log(ctx, from, 1000)
		if err != nil {
			t.Fatalf("Log(%s, %d) = %v", base, from, err)
		}
		all = append(all, page.Entries...)
		if len(page.Entries) == 0 || page.Next <= from {
			return all
		}
		from = page.Next
	}
}

// TestSchedulerFailovers runs three scheduler instances against a real
// three-node cluster and, in turn, SIGSTOPs the active one while a run
// works (past its TTL), SIGKILLs the instance that took over, kills the
// cluster's leader, resumes the paused instance and at last SIGTERMs the
// holder, which resigns to the other live one. Then it checks, from the
// cluster's log, that every period of the covered range ran exactly once
// but for the takeover allowance, that no stale write was applied and that
// tokens only grew, and, from the paused instance's log, that its late run
// was refused with a fence conflict.
func TestSchedulerFailovers(t *testing.T) {
	txlogd, schedBin := launchertest.BuildWithTxlogd(t, "scheduler")
	c := launchertest.StartCluster(t, launcher.ClusterConfig{Bin: txlogd})
	ctx, cancel := context.WithTimeout(context.Background(), 75*time.Second)
	defer cancel()
	var ps []*launcher.Process
	for _, id := range []string{"s1", "s2", "s3"} {
		ps = append(ps, startScheduler(t, schedBin, c, id))
	}
	start := time.Now()

	// 1. Two runs, then SIGSTOP the holder while a run works: its write is
	// still to go out. Its log is quiet while it is stopped, so whether the
	// pause fell between "run started" and the write can be read after.
	var paused *launcher.Process
	var pausedToken uint64
	var pausedPeriod int64
	for try := 0; paused == nil; try++ {
		if try == 5 {
			t.Fatal("never paused the holder in the middle of a run")
		}
		launchertest.WaitFor(ctx, t, "a holder starting a run after two runs", func() bool {
			p, _ := launchertest.Holder(t, ps, leaseGained)
			if p == nil {
				return false
			}
			ls := readLines(t, p)
			return count(ls, "run committed", start) >= 2 && ls[len(ls)-1].Msg == "run started"
		})
		p, token := launchertest.Holder(t, ps, leaseGained)
		if err := p.Pause(); err != nil {
			t.Fatal(err)
		}
		ls := readLines(t, p)
		if l := ls[len(ls)-1]; l.Msg == "run started" && l.Token == token {
			paused, pausedToken, pausedPeriod = p, token, l.Period
			break
		}
		if err := p.Resume(); err != nil { // the write went out first: again
			t.Fatal(err)
		}
	}
	pausedAt := time.Now()
	t.Logf("paused %s (token %d) in the run of period %d", paused.ID(), pausedToken, pausedPeriod)

	// 2. A standby takes over with a larger token and runs; SIGKILL it.
	var second *launcher.Process
	var secondToken uint64
	launchertest.WaitFor(ctx, t, "a standby's first run", func() bool {
		second, secondToken = launchertest.Holder(t, ps, leaseGained)
		return second != paused && secondToken > pausedToken && count(readLines(t, second), "run committed", pausedAt) >= 1
	})
	t.Logf("%s took over with token %d %v after the pause", second.ID(), secondToken, time.Since(pausedAt).Round(time.Millisecond))
	if err := second.Kill(); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()

	// 3. The last instance takes over and runs; kill the cluster's leader.
	var third *launcher.Process
	var thirdToken uint64
	launchertest.WaitFor(ctx, t, "the last instance's first run", func() bool {
		third, thirdToken = launchertest.Holder(t, ps, leaseGained)
		return third != paused && third != second && thirdToken > secondToken && count(readLines(t, third), "run committed", killedAt) >= 1
	})
	t.Logf("%s took over with token %d %v after the kill", third.ID(), thirdToken, time.Since(killedAt).Round(time.Millisecond))
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Kill(leader); err != nil {
		t.Fatal(err)
	}
	leaderKilledAt := time.Now()
	launchertest.WaitFor(ctx, t, "two runs after the leader kill", func() bool {
		p, _ := launchertest.Holder(t, ps, leaseGained)
		return p != nil && count(readLines(t, p), "run committed", leaderKilledAt) >= 2
	})

	// 4. Resume the paused instance: its late run must be refused for its
	// fence, and the job goes on for a few more periods.
	if err := paused.Resume(); err != nil {
		t.Fatal(err)
	}
	resumedAt := time.Now()
	var refused logLine
	launchertest.WaitFor(ctx, t, "the resumed instance's late run refused", func() bool {
		ls := readLines(t, paused)
		for _, msg := range []string{"run committed", "run duplicate"} {
			if l, ok := launchertest.Last(ls, msg); ok && l.Period == pausedPeriod {
				t.Fatalf("the resumed instance's late run of period %d was answered %q: %+v", pausedPeriod, msg, l)
			}
		}
		var ok bool
		refused, ok = launchertest.Last(ls, "run rejected")
		return ok
	})
	if refused.Period != pausedPeriod || refused.Token != pausedToken || refused.Fence != testLease ||
		refused.Expected != pausedToken || refused.Actual <= pausedToken {
		t.Fatalf("late run = %+v; want period %d refused with a fence conflict on %s, expected %d, actual above it",
			refused, pausedPeriod, testLease, pausedToken)
	}
	launchertest.WaitFor(ctx, t, "three more runs after the resume", func() bool {
		n := 0
		for _, p := range ps {
			if p != second {
				n += count(readLines(t, p), "run committed", resumedAt)
			}
		}
		return n >= 3
	})
	// 5. SIGTERM the holder: it resigns, and the other live instance takes
	// over at once, usually in the same period, which it then finds run
	// ("run duplicate", 422 idempotency_key_reused: the key is recorded
	// under the other token).
	final, lastToken := launchertest.Holder(t, ps, leaseGained)
	other := paused
	if final == paused {
		other = third
	}
	stoppedAt := time.Now()
	if err := final.Stop(ctx); err != nil {
		t.Fatalf("SIGTERM %s: %v", final.ID(), err)
	}
	launchertest.WaitFor(ctx, t, "the takeover after SIGTERM and a run", func() bool {
		l, ok := launchertest.Last(readLines(t, other), leaseGained)
		ls := readLines(t, other)
		return ok && l.Token > lastToken && count(ls, "run committed", stoppedAt)+count(ls, "run duplicate", stoppedAt) >= 1
	})
	gained, _ := launchertest.Last(readLines(t, other), leaseGained)
	t.Logf("%s took over %v after SIGTERM of %s; %d of its runs found their period run", other.ID(),
		gained.Time.Sub(stoppedAt).Round(time.Millisecond), final.ID(), count(readLines(t, other), "run duplicate", stoppedAt))
	if err := other.Stop(ctx); err != nil {
		t.Fatalf("SIGTERM %s: %v", other.ID(), err)
	}

	// 6. The log, read from a live node once it has applied everything.
	base := ""
	for _, p := range c.Nodes() {
		if p.ID() != leader {
			base = c.URL(p.ID())
		}
	}
	cl := client.NewClient(client.ClientConfig{Endpoints: []string{base}})
	var want uint64
	for _, p := range c.Nodes() {
		if p.ID() != leader {
			if st, err := cl.ClusterFrom(ctx, c.URL(p.ID())); err == nil {
				want = max(want, st.CommitIndex)
			}
		}
	}
	launchertest.WaitFor(ctx, t, "the node applying the whole log", func() bool {
		st, err := cl.ClusterFrom(ctx, base)
		return err == nil && st.AppliedIndex >= want
	})
	entries := readClusterLog(ctx, t, base)
	maxSkip := maxSkipped(testTTL, testPeriod)
	sum, err := checkRuns(entries, testLease, maxSkip)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("periods %d to %d: %d ran, skipped at takeovers %v (allowance %d a takeover), %d stale runs refused",
		sum.periods[0], sum.periods[len(sum.periods)-1], len(sum.periods), sum.skipped, maxSkip, sum.stale)
	if sum.stale == 0 {
		t.Fatal("the log shows no fenced run rejected, but the paused instance's late run was")
	}
	// The same history with its last run applied once more, as a period run
	// twice would show, must fail the check.
	var lastRun wire.LogEntry
	for _, e := range entries {
		if e.Status == wire.StatusCommitted && strings.HasPrefix(e.IdempotencyKey, "settle/") {
			lastRun = e
		}
	}
	lastRun.Index = entries[len(entries)-1].Index + 1
	if _, err := checkRuns(append(slices.Clip(entries), lastRun), testLease, maxSkip); err == nil {
		t.Fatalf("checkRuns() passed the log with period %s run twice", lastRun.IdempotencyKey)
	}
	if _, ran := sum.tokens[pausedPeriod]; ran {
		t.Fatalf("period %d, whose run was paused, ran under token %d: the takeover should have skipped it", pausedPeriod, sum.tokens[pausedPeriod])
	}
	for _, tok := range []uint64{pausedToken, secondToken, thirdToken} {
		if !slices.Contains(slices.Collect(maps.Values(sum.tokens)), tok) {
			t.Fatalf("no run committed under token %d", tok)
		}
	}

	// Tokens only grew: every grant an instance logged was larger than the
	// one before it, in time order.
	var gains []logLine
	for _, p := range ps {
		for _, l := range readLines(t, p) {
			if l.Msg == leaseGained {
				gains = append(gains, l)
			}
		}
	}
	slices.SortFunc(gains, func(a, b logLine) int { return a.Time.Compare(b.Time) })
	for i := 1; i < len(gains); i++ {
		if gains[i].Token <= gains[i-1].Token {
			t.Fatalf("%s gained token %d after %s gained %d: tokens must grow", gains[i].Node, gains[i].Token, gains[i-1].Node, gains[i-1].Token)
		}
	}
}

// TestParseFlags: good flags are read, bad ones are refused with the flag
// named.
func TestParseFlags(t *testing.T) {
	c, err := parseFlags([]string{"--targets", "http://a:1, http://b:2", "--ttl", "4s", "--period", "1s", "--work", "0s", "--id", "x"}, io.Discard)
	if err != nil || !slices.Equal(c.targets, []string{"http://a:1", "http://b:2"}) || c.ttl != 4*time.Second || c.period != time.Second || c.id != "x" {
		t.Fatalf("parseFlags() = %+v, %v", c, err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no targets", []string{"--targets", " , "}, "--targets"},
		{"zero period", []string{"--period", "0s"}, "--period"},
		{"work as long as the period", []string{"--period", "1s", "--work", "1s"}, "--work"},
		{"negative work", []string{"--work", "-1s"}, "--work"},
		{"unknown flag", []string{"--nope"}, "nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseFlags(tc.args, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("parseFlags(%q) = %v, want an error naming %s", tc.args, err, tc.want)
			}
		})
	}
}
