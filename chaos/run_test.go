package chaos

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/txlog/txlog/launcher"
)

// shortRunFaults is the schedule of TestShortChaosRun: one round holds ten
// leader kills and one of every other fault, shuffled by the seed.
const shortRunFaults = "kill-leader*10,kill-follower,pause-leader,partition-leader,partition-oneway,redis-outage,term-leader,quorum-loss"

// needRedis returns the redis-server on PATH. Without one it skips the test,
// or fails it when the environment variable CI is set.
func needRedis(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath(launcher.DefaultRedisBin)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s not found in PATH, and CI is set: install it (Debian package redis-server)", launcher.DefaultRedisBin)
		}
		t.Skipf("%s not found in PATH; install it (Debian package redis-server) to run this test", launcher.DefaultRedisBin)
	}
	return p
}

// TestShortChaosRun is the verifier's acceptance test: a real three-node
// cluster with a real Redis under load takes one round of every fault, ten
// leader kills among them, and every checker passes. It is bounded at three
// minutes.
func TestShortChaosRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real cluster for up to three minutes")
	}
	redis := needRedis(t)
	weights := mustFaults(t, shortRunFaults)
	round := 0
	for _, w := range weights {
		round += w.Weight
	}
	dir := t.TempDir()
	cfg := Config{
		Bin:      needTxlogd(t),
		RedisBin: redis,
		Dir:      dir,
		Workload: WorkloadConfig{Clients: 6, Rate: 30, Keys: 32, HotKeys: 3},
		Nemesis: NemesisConfig{Faults: weights, Interval: time.Second, Hold: 2 * time.Second,
			MaxFaults: round, RecoverTimeout: 30 * time.Second},
		Duration:       150 * time.Second,
		Seed:           20261129,
		ResolveTimeout: 20 * time.Second,
		CheckTimeout:   20 * time.Second,
	}
	rep, took := runLocal(t, 4*time.Minute, cfg)
	fail := fatalWithTails(t, dir, 30, nodeLogs...)
	if rep.Failed() {
		fail("checkers failed (seed %d)", cfg.Seed)
	}
	kinds := map[Fault]int{}
	for _, f := range rep.Faults {
		kinds[f.Kind]++
	}
	if len(rep.Faults) != round+1 || rep.LeaderKills < 11 {
		fail("%d faults with %d leader kills; want the whole round of %d and the idle leader change, with at least 11 (did the run hit its duration?)", len(rep.Faults), rep.LeaderKills, round)
	}
	if last := rep.Faults[len(rep.Faults)-1]; !last.Idle || last.Kind != FaultKillLeader || last.Recovered.IsZero() {
		fail("the last fault %+v: want the idle kill-leader after the workload, recovered", last)
	}
	for _, k := range []Fault{FaultPauseLeader, FaultPartitionLeader, FaultRedisOutage, FaultQuorumLoss} {
		if kinds[k] < 1 {
			fail("no %s in %v", k, kinds)
		}
	}
	if rep.Counts.OK == 0 || rep.Counts.Accepted == 0 || rep.Counts.Reads == 0 {
		fail("the load saw %d×200, %d×202 and %d reads; want all three", rep.Counts.OK, rep.Counts.Accepted, rep.Counts.Reads)
	}
	if took > 3*time.Minute {
		t.Errorf("the run took %v, over its three minutes", took)
	}
	if err := rep.WriteHTML(filepath.Join(dir, "report.html")); err != nil {
		t.Fatal(err)
	}
}
