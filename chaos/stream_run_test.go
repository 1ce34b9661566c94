package chaos

import (
	"testing"
	"time"
)

// TestStreamChaosRun is a short `txlog chaos --client stream`: the workload's
// clients share one client.Client that writes over its client streams,
// straight to the leader, while the nemesis kills and pauses the leader;
// every checker passes. About 20 seconds.
func TestStreamChaosRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real cluster")
	}
	cfg := Config{
		Bin:       needTxlogd(t),
		Dir:       t.TempDir(),
		Workload:  WorkloadConfig{Clients: 16, Rate: 200, Keys: 32, HotKeys: 3, Client: ClientStream},
		Leases:    LeaseConfig{Off: true},
		Consumers: ConsumerConfig{Off: true},
		Nemesis: NemesisConfig{Faults: mustFaults(t, "kill-leader,pause-leader"), Interval: 2 * time.Second, Hold: 2 * time.Second, MaxFaults: 2,
			RecoverTimeout: 20 * time.Second},
		Duration:       40 * time.Second,
		Seed:           20261203,
		ResolveTimeout: 15 * time.Second,
		CheckTimeout:   15 * time.Second,
	}
	rep, _ := runLocal(t, 3*time.Minute, cfg)
	if rep.Failed() {
		t.Fatalf("checkers failed (seed %d)\n%s", cfg.Seed, nodeLogTails(cfg.Dir, 15))
	}
	kinds := map[Fault]int{}
	for _, f := range rep.Faults {
		kinds[f.Kind]++
	}
	if kinds[FaultKillLeader] == 0 || kinds[FaultPauseLeader] == 0 {
		t.Errorf("faults %v: want a leader kill and a leader pause", kinds)
	}
	if rep.Counts.OK == 0 || rep.Counts.Accepted == 0 {
		t.Errorf("the load saw %d×200 and %d×202; want both", rep.Counts.OK, rep.Counts.Accepted)
	}
}
