package chaos

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTLSChaosRun is a short `txlog chaos --tls`: a real three-node cluster
// with client mutual TLS, peer TLS and an auth file, the workload, a lease
// contender pair and the consumers all with the cluster's CA, client
// certificate and token, a leader kill; every checker passes, and no
// contender or consumer logged a refused credential or handshake. The run
// ends once the fault recovered: about 10 seconds.
func TestTLSChaosRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real secured cluster, contenders and consumers")
	}
	dir := t.TempDir()
	cfg := Config{
		Bin:       needTxlogd(t),
		Dir:       dir,
		TLS:       true,
		Workload:  WorkloadConfig{Clients: 2, Rate: 20, Keys: 8, HotKeys: 2},
		Leases:    LeaseConfig{Command: testChild(t, contenderEnv), Leases: 1, Contenders: 2, TTL: 2 * time.Second},
		Consumers: ConsumerConfig{Command: testChild(t, consumerEnv), TTL: 2 * time.Second},
		Nemesis: NemesisConfig{Faults: mustFaults(t, "kill-leader"), Interval: 3 * time.Second, MaxFaults: 1,
			RecoverTimeout: 15 * time.Second},
		Duration:       20 * time.Second,
		Seed:           20261204,
		ResolveTimeout: 10 * time.Second,
		CheckTimeout:   10 * time.Second,
	}
	rep, _ := runLocal(t, 2*time.Minute, cfg)
	if rep.Failed() {
		t.Fatalf("checkers failed (seed %d)\n%s", cfg.Seed, nodeLogTails(dir, 15))
	}
	if !strings.Contains(rep.Mode, "TLS") {
		t.Errorf("report mode %q, want the secured local cluster", rep.Mode)
	}
	if rep.Leases == nil || rep.Leases.Stats.Grants == 0 || rep.Consumers == nil {
		t.Errorf("lease report %+v, consumer report %v: want grants and a consumer report", rep.Leases, rep.Consumers)
	}
	for _, f := range []string{"ca.crt", "client.crt", "n1.crt", "auth"} {
		if _, err := os.Stat(filepath.Join(dir, "cluster", "tls", f)); err != nil {
			t.Errorf("secured cluster file: %v", err)
		}
	}
	for _, log := range []string{"leases/c1.log", "leases/c2.log", "consumers/k1.log", "consumers/k2.log"} {
		b, _ := os.ReadFile(filepath.Join(dir, log))
		for _, bad := range []string{"unauthenticated", "forbidden", "TLS handshake"} {
			if strings.Contains(string(b), bad) {
				t.Errorf("%s mentions %q:\n%s", log, bad, tailOrErr(filepath.Join(dir, log), 10))
			}
		}
	}
}
