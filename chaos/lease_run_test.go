package chaos

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLeaseChaosRun runs the lease workload against a real three-node
// cluster with a leader kill and the pause-holder fault, which SIGSTOPs the
// contender process that holds a lease past its TTL: the lease checker
// passes, a standby took over, and the paused holder's writes after it
// resumed were sent and refused. About 30 seconds.
func TestLeaseChaosRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real cluster and lease contenders")
	}
	dir := t.TempDir()
	cfg := Config{
		Bin:      needTxlogd(t),
		Dir:      dir,
		Workload: WorkloadConfig{Clients: 2, Rate: 10, Keys: 8, HotKeys: 2},
		Leases:   LeaseConfig{Command: testChild(t, contenderEnv), Leases: 1, Contenders: 2, TTL: 2 * time.Second},
		Nemesis: NemesisConfig{Faults: mustFaults(t, "pause-holder,kill-leader"), Interval: time.Second, MaxFaults: 2,
			RecoverTimeout: 20 * time.Second},
		Duration:       60 * time.Second,
		Seed:           20261202,
		ResolveTimeout: 15 * time.Second,
		CheckTimeout:   15 * time.Second,
	}
	rep, _ := runLocal(t, 2*time.Minute, cfg)
	fail := fatalWithTails(t, dir, 20, "leases/c1.log", "leases/c2.log")
	if rep.Failed() {
		fail("checkers failed (seed %d)", cfg.Seed)
	}
	if len(rep.Checks) == 0 || rep.Checks[len(rep.Checks)-1].Name != NameLeases {
		fail("the lease checker did not run")
	}
	if rep.Leases == nil {
		fail("no lease report")
	}
	st := rep.Leases.Stats
	if st.Pauses != 1 || st.LateWrites == 0 || st.Grants < 2 || st.Applied == 0 || st.Refused == 0 {
		fail("lease stats %+v: want one paused holder, replaced (two grants at least), with late writes; applied and refused writes", st)
	}
	if len(rep.Leases.Spans) < 2 {
		fail("lease spans %+v: want the paused holder's and its replacement's", rep.Leases.Spans)
	}
	html := filepath.Join(dir, "report.html")
	if err := rep.WriteHTML(html); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(html); err != nil || !strings.Contains(string(b), ">lease 0<") {
		fail("the HTML report has no lease row (%v)", err)
	}
}
