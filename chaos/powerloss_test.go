package chaos

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/chaos/lazyfs"
)

func TestPowerLossPlan(t *testing.T) {
	got := map[string]int{}
	for k := range 6 {
		target, mode := powerLossPlan(k)
		got[target+"/"+string(mode)]++
	}
	for _, target := range powerLossTargets {
		for _, mode := range []lazyfs.LossMode{lazyfs.LossAll, lazyfs.LossTorn} {
			if got[target+"/"+string(mode)] != 1 {
				t.Errorf("six power losses hit %s in mode %s %d times, want once (%v)", target, mode, got[target+"/"+string(mode)], got)
			}
		}
	}
}

func TestCheckRestarts(t *testing.T) {
	now := time.Now()
	good := []FaultEvent{{Kind: FaultPowerLoss, Nodes: []string{"n1", "n2", "n3"}, Injected: now}}
	if r := CheckRestarts(good); !r.Pass {
		t.Fatalf("CheckRestarts(all restarted) = %+v, want a pass", r)
	}
	bad := []FaultEvent{
		{Kind: FaultPowerLoss, Nodes: []string{"n1", "n2", "n3"}, Injected: now, NotRestarted: []string{"n2"}},
		{Kind: FaultKillLeader, Nodes: []string{"n3"}, Injected: now, StartRetried: []string{"n3"}},
	}
	r := CheckRestarts(bad)
	if r.Pass || len(r.Evidence) != 2 || !strings.Contains(r.Evidence[0], "n2 could not be started again") || !strings.Contains(r.Evidence[1], "n3 failed to start") {
		t.Fatalf("CheckRestarts(a node lost, a node retried) = %+v, want a failure naming both", r)
	}
}

func TestPowerLossReportLine(t *testing.T) {
	rep := &Report{PowerLosses: 2, NotRestarted: 1, Faults: []FaultEvent{
		{Kind: FaultPowerLoss, PowerLoss: &PowerLossEvent{Target: PowerLossAll, Mode: lazyfs.LossTorn, Dirs: lazyfs.DirsPOSIX,
			Losses: map[string]lazyfs.Loss{"n1": {DirtyPages: 10, WrittenPages: 4, DirOps: 2}, "n2": {DirtyPages: 1}}}, NotRestarted: []string{"n1"}},
		{Kind: FaultPowerLoss, PowerLoss: &PowerLossEvent{Target: PowerLossLeader, Mode: lazyfs.LossAll, Dirs: lazyfs.DirsPOSIX}},
	}}
	var b strings.Builder
	if err := rep.WriteSummary(&b); err != nil {
		t.Fatal(err)
	}
	want := "power losses: 2 (all nodes 1, leader 1, leader+follower 0; mode all 1, torn 1; dirs posix 2): 11 unsynced pages (4 written back torn) and 2 directory changes dropped; nodes that could not restart: 1"
	if !strings.Contains(b.String(), want) {
		t.Fatalf("summary:\n%s\nwant the line %q", b.String(), want)
	}
}

// TestPowerLossNeedsLocal: with --targets the verifier says why it cannot cut
// the power and which flag leaves the fault out, before it touches anything.
func TestPowerLossNeedsLocal(t *testing.T) {
	_, err := Run(testCtx(t, 10*time.Second), Config{Targets: []string{"http://127.0.0.1:1"}, Dir: t.TempDir(),
		Nemesis: NemesisConfig{Faults: mustFaults(t, "kill-leader,powerloss")}})
	if !errors.Is(err, ErrNoPowerLoss) || !strings.Contains(err.Error(), "leave powerloss out of --faults") {
		t.Fatalf("Run(--targets, powerloss) = %v, want ErrNoPowerLoss naming the flag", err)
	}
}

// needFUSE returns when lazyfs can mount here. Without it it skips the test,
// or fails it when the environment variable CI is set.
func needFUSE(t *testing.T) {
	t.Helper()
	if err := lazyfs.Available(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("lazyfs cannot mount here and CI is set: %v (run as root with /dev/fuse; scripts/test.sh installs fuse3)", err)
		}
		t.Skipf("lazyfs cannot mount here: %v", err)
	}
}

// TestPowerLossChaosRun is the power-loss acceptance test: for each directory
// rule, a real three-node cluster with a real Redis under load loses power six
// times (all three nodes twice, the leader alone twice, the leader and a
// follower twice; each kind once with everything unsynced dropped and once
// torn), and every checker passes.
func TestPowerLossChaosRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real cluster on lazyfs mounts for up to three minutes")
	}
	needFUSE(t)
	redis := needRedis(t)
	bin := needTxlogd(t)
	weights := mustFaults(t, string(FaultPowerLoss))
	for i, dirs := range []lazyfs.DirRule{lazyfs.DirsPOSIX, lazyfs.DirsJournal} {
		t.Run(string(dirs), func(t *testing.T) {
			dir := t.TempDir()
			cfg := Config{
				Bin:      bin,
				RedisBin: redis,
				Dir:      dir,
				Workload: WorkloadConfig{Clients: 6, Rate: 30, Keys: 32, HotKeys: 3},
				Nemesis: NemesisConfig{Faults: weights, Interval: time.Second, MaxFaults: 6,
					RecoverTimeout: 20 * time.Second},
				Duration:       90 * time.Second,
				Seed:           20261202 + uint64(i),
				ResolveTimeout: 15 * time.Second,
				CheckTimeout:   15 * time.Second,
				PowerLossDirs:  dirs,
			}
			rep, _ := runLocal(t, 3*time.Minute, cfg)
			fail := fatalWithTails(t, dir, 30, nodeLogs...)
			targets := map[string]int{}
			for _, f := range rep.Faults {
				if f.PowerLoss != nil {
					targets[f.PowerLoss.Target]++
					if f.PowerLoss.Dirs != dirs {
						fail("a power loss under %s rules, want %s", f.PowerLoss.Dirs, dirs)
					}
				}
			}
			if rep.PowerLosses != 6 || targets[PowerLossAll] < 2 || targets[PowerLossLeader] < 2 {
				fail("%d power losses %v; want 6, all nodes twice and the leader alone twice (did the run hit its duration?)", rep.PowerLosses, targets)
			}
			if rep.Failed() {
				fail("checkers failed under %s rules (seed %d): %d nodes could not restart", dirs, cfg.Seed, rep.NotRestarted)
			}
			if rep.Counts.OK == 0 || rep.Counts.Accepted == 0 {
				fail("the load saw %d×200 and %d×202; want both", rep.Counts.OK, rep.Counts.Accepted)
			}
		})
	}
}
