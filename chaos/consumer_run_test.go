package chaos

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestConsumerChaosRun runs the consumer workload against a real three-node
// cluster with a leader kill and the pause-consumer fault, which SIGSTOPs
// the consumer that holds the group's lease past its TTL: the consumer
// checker passes (every committed write projected once, the offset never
// back, no fenced-out write applied), the other consumer took over with a
// larger token, and the paused one's late write was refused by the fence.
// About 15 seconds.
func TestConsumerChaosRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real cluster and consumer processes")
	}
	dir := t.TempDir()
	cfg := Config{
		Bin:       needTxlogd(t),
		Dir:       dir,
		Workload:  WorkloadConfig{Clients: 2, Rate: 20, Keys: 8, HotKeys: 2},
		Consumers: ConsumerConfig{Command: testChild(t, consumerEnv), TTL: 2 * time.Second},
		Nemesis: NemesisConfig{Faults: mustFaults(t, "pause-consumer,kill-leader"), Interval: time.Second, MaxFaults: 2,
			RecoverTimeout: 20 * time.Second},
		Duration:       45 * time.Second,
		Seed:           20261203,
		ResolveTimeout: 15 * time.Second,
		CheckTimeout:   15 * time.Second,
	}
	rep, _ := runLocal(t, 2*time.Minute, cfg)
	fail := fatalWithTails(t, dir, 20, "consumers/k1.log", "consumers/k2.log")
	if rep.Failed() {
		fail("checkers failed (seed %d)", cfg.Seed)
	}
	if len(rep.Checks) == 0 || rep.Checks[len(rep.Checks)-1].Name != NameConsumer {
		fail("the consumer checker did not run")
	}
	c := rep.Consumers
	if c == nil {
		fail("no consumer report")
	}
	kills, pause := 0, (*ConsumerPauseEvent)(nil)
	for _, f := range rep.Faults {
		if f.Kind == FaultKillLeader && f.Err == "" {
			kills++
		}
		if f.ConsumerPause != nil {
			pause = f.ConsumerPause
		}
	}
	if kills == 0 || pause == nil || c.Pauses != 1 {
		fail("faults %+v: want a leader kill and a paused consumer", rep.Faults)
	}
	st := c.Stats
	if st.Source == 0 || st.Projected != st.Source || st.Terms < 2 || st.Reads == 0 || c.LateWrites == 0 || st.Refused == 0 {
		fail("consumer stats %+v, %d late writes: want source entries, all projected, in two terms at least, offset reads, and late writes refused by the fence", st, c.LateWrites)
	}
	tookOver := false
	for _, s := range c.Spans {
		tookOver = tookOver || (s.Consumer != pause.Consumer && s.Token > pause.Token)
	}
	if !tookOver {
		fail("spans %+v: no consumer but the paused %s consumed with a token above %d", c.Spans, pause.Consumer, pause.Token)
	}
	html := filepath.Join(dir, "report.html")
	if err := rep.WriteHTML(html); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(html); err != nil || !strings.Contains(string(b), ">consumers<") {
		fail("the HTML report has no consumer row (%v)", err)
	}
}
