package systemtest

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/launcher"
)

// TestWipedDisksNeverBootstrapOver: 100 writes acknowledged by a 3-node
// cluster; all three stopped; the data dirs of n1 and n2 lost; all three
// started again with their usual flags, the intact n3 first, last, or after
// the other two waited a few seconds. n1 and n2 never bootstrap a new
// cluster over n3's history: while n3 is down they wait (503 not_ready naming
// n3, no Raft started, a Warn in the log), and once they hear from n3 they
// exit non-zero with the recovery in the message. No leader is elected in the
// meantime, and n3's log holds every acknowledged write. Then the recovery
// the message names: n1's data dir restored, n1 and n3 elect a leader with
// the history, n2 is removed and joins as a new member, and the three logs
// are identical and hold every acknowledged write.
func TestWipedDisksNeverBootstrapOver(t *testing.T) {
	for _, order := range []string{"intact first", "intact last", "intact down a minute"} {
		t.Run(strings.ReplaceAll(order, " ", "_"), func(t *testing.T) { testWipedDisks(t, order) })
	}
}

func testWipedDisks(t *testing.T, order string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := startCluster(t)
	if err := c.WaitReady(ctx); err != nil {
		t.Fatalf("WaitReady() = %v", err)
	}
	cl := client.NewClient(client.ClientConfig{Endpoints: c.HTTPAddrs(), Timeout: 10 * time.Second})
	var acks []ack
	for i := range 100 {
		a := blindPut(ctx, cl, int64(i))
		if a.err != nil {
			t.Fatalf("write %d: %v", i, a.err)
		}
		acks = append(acks, a)
	}
	resolvePending(ctx, t, c, acks)
	const intact = "n3"
	wiped := []string{"n1", "n2"}
	// The claim is about the intact node's history, so it must hold every
	// acknowledged write before the other disks go: a quorum of two may
	// have acknowledged the last writes while n3 was still catching up.
	readLog(ctx, t, c.URL(intact), acks[len(acks)-1].res.Index)
	for _, id := range []string{"n1", "n2", "n3"} {
		if err := c.Stop(ctx, id); err != nil {
			t.Fatalf("Stop(%s) = %v", id, err)
		}
	}
	backup := filepath.Join(t.TempDir(), "n1")
	if err := os.CopyFS(backup, os.DirFS(c.Node("n1").DataDir())); err != nil {
		t.Fatal(err)
	}
	for _, id := range wiped {
		if err := os.RemoveAll(c.Node(id).DataDir()); err != nil {
			t.Fatal(err)
		}
	}

	// Whatever runs, no node may lead until n1's data dir is back.
	watch := watchLeaders(ctx, c, []string{"n1", "n2", intact})
	logFrom := map[string]int64{}
	startWiped := func(id string) {
		t.Helper()
		p := c.Node(id)
		if fi, err := os.Stat(p.LogPath()); err == nil {
			logFrom[id] = fi.Size()
		}
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
	}
	newLog := func(id string) string {
		b, _ := os.ReadFile(c.Node(id).LogPath())
		return string(b[min(int64(len(b)), logFrom[id]):])
	}
	switch order {
	case "intact first":
		if err := c.Restart(ctx, intact); err != nil {
			t.Fatalf("Restart(%s) = %v", intact, err)
		}
		startWiped("n1")
		startWiped("n2")
	case "intact last":
		startWiped("n1")
		startWiped("n2")
		if err := c.Restart(ctx, intact); err != nil {
			t.Fatalf("Restart(%s) = %v", intact, err)
		}
	case "intact down a minute":
		startWiped("n1")
		startWiped("n2")
		for _, id := range wiped {
			addr, err := c.Node(id).HTTPAddr(ctx)
			if err != nil {
				t.Fatalf("%s: %v", id, err)
			}
			waitUntil(ctx, t, id+" answers 503 not_ready naming n3", func() bool {
				code, body := get(ctx, t, "http://"+addr+"/readyz")
				return code == http.StatusServiceUnavailable && strings.Contains(body, wire.CodeNotReady) && strings.Contains(body, "n3")
			})
		}
		waitUntil(ctx, t, "both log at Warn that they wait for n3", func() bool {
			for _, id := range wiped {
				l := newLog(id)
				if !strings.Contains(l, `"level":"WARN","msg":"waiting for --cluster peers before bootstrapping"`) || !strings.Contains(l, `"not_heard_from":"n3"`) {
					return false
				}
			}
			return true
		})
		// A minute, as an operator who replaces disks may take: the wiped
		// nodes wait all along, and neither starts Raft.
		until := time.Now().Add(time.Minute)
		for time.Now().Before(until) {
			for _, id := range wiped {
				if !c.Node(id).Running() {
					t.Fatalf("%s exited while n3 was down; want it to wait:\n%s", id, newLog(id))
				}
				if strings.Contains(newLog(id), "raft started") {
					t.Fatalf("%s started raft while n3 was down:\n%s", id, newLog(id))
				}
			}
			select {
			case <-ctx.Done():
				t.Fatal(ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
		if err := c.Restart(ctx, intact); err != nil {
			t.Fatalf("Restart(%s) = %v", intact, err)
		}
	}

	// Both refuse, naming the recovery, and never start Raft.
	for _, id := range wiped {
		wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
		err := c.Node(id).Wait(wctx)
		wcancel()
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s still runs 30 s after n3 came back; want it refused:\n%s", id, newLog(id))
		}
		if err == nil {
			t.Fatalf("%s exited with status 0; want a refusal (non-zero):\n%s", id, newLog(id))
		}
		l := newLog(id)
		for _, s := range []string{"holds the cluster's state", "--join", "DELETE /v1/cluster/nodes/" + id, "restore its data directory"} {
			if !strings.Contains(l, s) {
				t.Fatalf("%s's refusal does not say %q:\n%s", id, s, l)
			}
		}
		for _, s := range []string{"raft started", "cluster bootstrapped"} {
			if strings.Contains(l, s) {
				t.Fatalf("%s logged %q:\n%s", id, s, l)
			}
		}
	}
	if !c.Node(intact).Running() {
		t.Fatalf("%s exited; want it running, without a quorum", intact)
	}
	if got := watch.stop(); len(got) > 0 {
		t.Fatalf("a leader was elected without n1's data dir back: %v", got)
	}
	logs := map[string][]wire.LogEntry{intact: readLog(ctx, t, c.URL(intact), 0)}
	if err := checkCluster(acks, logs); err != nil {
		t.Fatalf("%s's log after the refusals: %v", intact, err)
	}

	// The recovery: n1's data dir restored from its backup; with n3 it
	// elects a leader that holds the history.
	n1 := c.Node("n1")
	if err := os.RemoveAll(n1.DataDir()); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(n1.DataDir(), os.DirFS(backup)); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(ctx, "n1"); err != nil {
		t.Fatalf("Restart(n1) = %v", err)
	}
	healthy := client.NewClient(client.ClientConfig{Endpoints: []string{c.URL("n1"), c.URL(intact)}, Timeout: 10 * time.Second})
	waitUntil(ctx, t, "a leader among n1 and n3", func() bool {
		st, err := healthy.ClusterFrom(ctx, c.URL(intact))
		return err == nil && (st.LeaderID == "n1" || st.LeaderID == intact)
	})
	// n2 is removed and joins as a new member with an empty data dir.
	if err := healthy.Remove(ctx, "n2"); err != nil {
		t.Fatalf("Remove(n2) = %v", err)
	}
	old := c.Node("n2")
	if err := os.RemoveAll(old.DataDir()); err != nil {
		t.Fatal(err)
	}
	n2 := startProcess(t, launcher.ProcessConfig{ID: "n2", Args: rejoinArgs(old, c.URL(intact)), DataDir: old.DataDir(), LogDir: t.TempDir()})
	n2Addr, err := n2.HTTPAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(ctx, t, "n2 rejoined as a voter", func() bool {
		st, err := healthy.ClusterFrom(ctx, c.URL(intact))
		return err == nil && slices.ContainsFunc(st.Members, func(m wire.Member) bool { return m.ID == "n2" && m.Suffrage == "voter" })
	})
	all := client.NewClient(client.ClientConfig{Endpoints: []string{c.URL("n1"), c.URL(intact), "http://" + n2Addr}, Timeout: 10 * time.Second})
	for i := 100; i < 110; i++ {
		a := blindPut(ctx, all, int64(i))
		if a.err != nil {
			t.Fatalf("write %d after the recovery: %v", i, a.err)
		}
		acks = append(acks, a)
	}
	resolvePending(ctx, t, c, acks)
	bases := map[string]string{"n1": c.URL("n1"), intact: c.URL(intact), "n2": "http://" + n2Addr}
	var upTo uint64
	for _, base := range bases {
		st, err := all.ClusterFrom(ctx, base)
		if err != nil {
			t.Fatal(err)
		}
		upTo = max(upTo, st.CommitIndex)
	}
	logs = map[string][]wire.LogEntry{}
	for id, base := range bases {
		logs[id] = readLog(ctx, t, base, upTo)
	}
	if err := checkCluster(acks, logs); err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, base := range bases {
		st, err := all.ClusterFrom(ctx, base)
		if err != nil {
			t.Fatal(err)
		}
		ids[st.ClusterID] = true
	}
	if len(ids) != 1 || ids[""] {
		t.Fatalf("cluster ids after the recovery: %v, want one", ids)
	}
	t.Logf("%s: n1 and n2 waited or refused; n3 kept %d writes; after the recovery the three logs agree (%d entries)", order, len(acks)-10, len(logs["n1"]))
}

// leaderWatch polls the running nodes' GET /v1/cluster (a node that waits
// for its peers answers 503) and records every leader any of them reports.
type leaderWatch struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	seen   []string
}

func watchLeaders(ctx context.Context, c *launcher.Cluster, ids []string) *leaderWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &leaderWatch{cancel: cancel}
	cl := client.NewClient(client.ClientConfig{Timeout: time.Second})
	w.wg.Go(func() {
		for ctx.Err() == nil {
			for _, id := range ids {
				p := c.Node(id)
				if !p.Running() {
					continue
				}
				actx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
				addr, err := p.HTTPAddr(actx)
				cancel()
				if err != nil {
					continue
				}
				st, err := cl.ClusterFrom(ctx, "http://"+addr)
				if err == nil && st.LeaderID != "" {
					w.mu.Lock()
					w.seen = append(w.seen, id+" reports leader "+st.LeaderID)
					w.mu.Unlock()
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	return w
}

// stop ends the watch and returns what it saw.
func (w *leaderWatch) stop() []string {
	w.cancel()
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen
}

// TestPeerOfAnotherCluster: two clusters, A and B, each with its own
// cluster ID. B's leader is told to replicate to A's n1 (a non-voting member
// at n1's peer address); A's n1 refuses B's Raft connections and logs "peer
// of another cluster" with both IDs, and so does B's leader. A hostile
// connection with B's ID (and one with no ID) of every kind is refused too.
// Neither cluster's log changes because of it, and both go on taking writes.
func TestPeerOfAnotherCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	a, b := startCluster(t), startCluster(t)
	for _, c := range []*launcher.Cluster{a, b} {
		if err := c.WaitReady(ctx); err != nil {
			t.Fatalf("WaitReady() = %v", err)
		}
	}
	clA := client.NewClient(client.ClientConfig{Endpoints: a.HTTPAddrs(), Timeout: 10 * time.Second})
	clB := client.NewClient(client.ClientConfig{Endpoints: b.HTTPAddrs(), Timeout: 10 * time.Second})
	var acksA, acksB []ack
	for i := range 10 {
		acksA = append(acksA, blindPut(ctx, clA, int64(i)))
		acksB = append(acksB, blindPut(ctx, clB, int64(1000+i)))
	}
	stA, err := clA.ClusterFrom(ctx, a.URL("n1"))
	if err != nil {
		t.Fatal(err)
	}
	stB, err := clB.ClusterFrom(ctx, b.URL("n1"))
	if err != nil {
		t.Fatal(err)
	}
	if stA.ClusterID == "" || stB.ClusterID == "" || stA.ClusterID == stB.ClusterID {
		t.Fatalf("cluster ids %q and %q: want two, set and different", stA.ClusterID, stB.ClusterID)
	}
	logsOf := func(c *launcher.Cluster) map[string][]wire.LogEntry {
		logs := map[string][]wire.LogEntry{}
		for _, p := range c.Nodes() {
			logs[p.ID()] = readLog(ctx, t, c.URL(p.ID()), lastIndex(ctx, t, c))
		}
		return logs
	}
	beforeA, beforeB := logsOf(a), logsOf(b)

	// B's leader replicates to A's n1.
	no := false
	if _, err := clB.Join(ctx, wire.JoinRequest{ID: "intruder", RaftAddr: a.RaftAddr("n1"), Voter: &no}); err != nil {
		t.Fatalf("Join(intruder at A's n1) on B = %v", err)
	}
	n1Log := func() string { b, _ := os.ReadFile(a.Node("n1").LogPath()); return string(b) }
	waitUntil(ctx, t, `A's n1 logs "peer of another cluster" with both ids`, func() bool {
		for _, line := range strings.Split(n1Log(), "\n") {
			if strings.Contains(line, `"msg":"peer of another cluster"`) && strings.Contains(line, `"level":"ERROR"`) &&
				strings.Contains(line, stA.ClusterID) && strings.Contains(line, stB.ClusterID) {
				return true
			}
		}
		return false
	})
	leaderB, err := b.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(ctx, t, `B's leader logs "peer of another cluster"`, func() bool {
		bb, _ := os.ReadFile(b.Node(leaderB).LogPath())
		return strings.Contains(string(bb), `"msg":"peer of another cluster"`)
	})

	// Hostile connections of every kind: B's ID is refused as another
	// cluster's (status 1), no ID as refused (status 3), a probe is answered.
	idB, _ := hex.DecodeString(stB.ClusterID)
	for _, tt := range []struct {
		kind    byte
		cluster []byte
		want    byte
	}{
		{'R', idB, 1}, {'S', idB, 1}, {'H', idB, 1}, {'B', idB, 1},
		{'R', make([]byte, 16), 3}, {'S', make([]byte, 16), 3}, {'H', make([]byte, 16), 3},
		{'B', make([]byte, 16), 0},
	} {
		status, answer := rawPeerHeader(ctx, t, a.RaftAddr("n1"), tt.kind, tt.cluster)
		if status != tt.want {
			t.Errorf("kind %c with cluster %x: status %d, want %d", tt.kind, tt.cluster, status, tt.want)
		}
		if tt.kind == 'B' && tt.want == 0 {
			var p struct {
				ID        string `json:"id"`
				HasState  bool   `json:"has_state"`
				ClusterID string `json:"cluster_id"`
			}
			if err := json.Unmarshal(answer, &p); err != nil || p.ID != "n1" || !p.HasState || p.ClusterID != stA.ClusterID {
				t.Errorf("probe answer %q, %v: want n1 with state in cluster %s", answer, err, stA.ClusterID)
			}
		}
	}

	// Neither log changed; both clusters still take writes.
	afterA, afterB := logsOf(a), logsOf(b)
	for id := range beforeA {
		if len(afterA[id]) != len(beforeA[id]) {
			t.Fatalf("A's %s log: %d entries, was %d", id, len(afterA[id]), len(beforeA[id]))
		}
	}
	for id := range beforeB {
		if len(afterB[id]) != len(beforeB[id]) {
			t.Fatalf("B's %s log: %d entries, was %d", id, len(afterB[id]), len(beforeB[id]))
		}
	}
	st, err := clA.ClusterFrom(ctx, a.URL("n1"))
	if err != nil || len(st.Members) != 3 {
		t.Fatalf("A's members after the intrusion: %+v, %v; want its three", st.Members, err)
	}
	for i := range 5 {
		acksA = append(acksA, blindPut(ctx, clA, int64(100+i)))
		acksB = append(acksB, blindPut(ctx, clB, int64(1100+i)))
	}
	checkSettled(ctx, t, a, acksA)
	if err := clB.Remove(ctx, "intruder"); err != nil {
		t.Fatalf("Remove(intruder) on B = %v", err)
	}
	checkSettled(ctx, t, b, acksB)
}

// rawPeerHeader dials addr, sends a peer link header of kind with cluster
// (16 bytes) from node "hostile" and returns the answer's status byte and,
// for a probe, what follows it.
func rawPeerHeader(ctx context.Context, t *testing.T, addr string, kind byte, cluster []byte) (byte, []byte) {
	t.Helper()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	h := append([]byte("TXLP"), 1, kind)
	h = append(h, cluster...)
	h = append(h, byte(len("hostile")))
	h = append(h, "hostile"...)
	if _, err := c.Write(h); err != nil {
		t.Fatal(err)
	}
	ans := make([]byte, 17)
	if _, err := io.ReadFull(c, ans); err != nil {
		t.Fatalf("read the answer to kind %c: %v", kind, err)
	}
	var rest []byte
	if kind == 'B' && ans[0] == 0 {
		rest, _ = io.ReadAll(io.LimitReader(c, 4096))
	}
	return ans[0], rest
}

// TestBootstrapWaitsForPeers: the first member of a two-member static
// bootstrap, started alone, starts no Raft: its client port answers 503
// not_ready naming its peer, and a SIGTERM stops it cleanly (status 0).
// Started again with its peer, the two bootstrap one cluster, with one ID.
func TestBootstrapWaitsForPeers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	addrs := freeAddrs(t, 2)
	members := "--cluster=a=" + addrs[0] + ",b=" + addrs[1]
	a := newNode(t, dir, "a", "--raft-addr="+addrs[0], members)
	base := startNode(ctx, t, a)
	waitUntil(ctx, t, "a answers 503 not_ready naming b", func() bool {
		code, body := get(ctx, t, base+"/v1/cluster")
		return code == http.StatusServiceUnavailable && strings.Contains(body, wire.CodeNotReady) && strings.Contains(body, "b")
	})
	if err := a.Stop(ctx); err != nil {
		t.Fatalf("Stop(a) while it waits = %v, want a clean exit", err)
	}
	if tail := a.LogTail(50); strings.Contains(tail, "raft started") {
		t.Fatalf("a started raft alone:\n%s", tail)
	}

	b := newNode(t, dir, "b", "--raft-addr="+addrs[1], members)
	bases := []string{startNode(ctx, t, a), startNode(ctx, t, b)}
	waitReady(ctx, t, bases...)
	ids := map[string]bool{}
	cl := client.NewClient(client.ClientConfig{})
	for _, base := range bases {
		st, err := cl.ClusterFrom(ctx, base)
		if err != nil {
			t.Fatal(err)
		}
		ids[st.ClusterID] = true
	}
	if len(ids) != 1 || ids[""] {
		t.Fatalf("cluster ids %v, want one", ids)
	}
}

// TestJoinSecondMember: a member joins a one-member cluster with --join. It
// takes the cluster's ID before its Raft starts (GET /v1/cluster behind
// --join), so the leader's Raft is let in from its first connection: it
// becomes a voter, both hold one ID, and writes through either commit.
func TestJoinSecondMember(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	addrs := freeAddrs(t, 2)
	a := newNode(t, dir, "a", "--raft-addr="+addrs[0], "--cluster=a="+addrs[0])
	baseA := startNode(ctx, t, a)
	waitReady(ctx, t, baseA)
	b := newNode(t, dir, "b", "--raft-addr="+addrs[1], "--join="+baseA)
	baseB := startNode(ctx, t, b)
	cl := client.NewClient(client.ClientConfig{Timeout: 10 * time.Second})
	waitUntil(ctx, t, "b is a voter", func() bool {
		st, err := cl.ClusterFrom(ctx, baseA)
		return err == nil && slices.ContainsFunc(st.Members, func(m wire.Member) bool { return m.ID == "b" && m.Suffrage == "voter" })
	})
	waitReady(ctx, t, baseA, baseB)
	ids := map[string]bool{}
	for _, base := range []string{baseA, baseB} {
		st, err := cl.ClusterFrom(ctx, base)
		if err != nil {
			t.Fatal(err)
		}
		ids[st.ClusterID] = true
		w := client.NewClient(client.ClientConfig{Endpoints: []string{base}, Timeout: 10 * time.Second})
		if a := blindPut(ctx, w, int64(len(ids))); a.err != nil {
			t.Fatalf("write through %s: %v", base, a.err)
		}
	}
	if len(ids) != 1 || ids[""] {
		t.Fatalf("cluster ids %v, want one", ids)
	}
	if !strings.Contains(b.LogTail(200), `"from":"GET /v1/cluster of `+baseA) {
		t.Fatalf("b did not take its cluster id from GET /v1/cluster:\n%s", b.LogTail(40))
	}
}

// TestBootstrapHostileProbeAnswers: a fake peer at the --cluster address of
// b answers the first member's bootstrap probes. Garbage, an answer as
// another node and an oversized answer leave a waiting (503 not_ready; the
// Warn names why); an answer that claims state under a round without a's
// candidate makes a refuse to start. a never starts Raft.
func TestBootstrapHostileProbeAnswers(t *testing.T) {
	for _, tt := range []struct {
		name   string
		answer string
		refuse bool
		why    string // in the wait's Warn
	}{
		{"garbage", "\x00\xffnot json", false, `"errs":{"b":"probe answer: invalid character`},
		{"another node", `{"id":"x","has_state":false,"cluster_id":"","candidate":"00112233445566778899aabbccddeeff"}`, false, `answered as`},
		{"oversized", `{"id":"b","pad":"` + strings.Repeat("a", 5000) + `"}`, false, `"errs":{"b":"probe `},
		{"state of another round", `{"id":"b","has_state":true,"cluster_id":"0102030405060708090a0b0c0d0e0f10","candidate":"00112233445566778899aabbccddeeff","round":["00112233445566778899aabbccddeeff"]}`, true, ""},
	} {
		t.Run(strings.ReplaceAll(tt.name, " ", "_"), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			dir := t.TempDir()
			addrs := freeAddrs(t, 2)
			fake, err := net.Listen("tcp", addrs[1])
			if err != nil {
				t.Fatal(err)
			}
			defer fake.Close()
			go func() {
				for {
					c, err := fake.Accept()
					if err != nil {
						return
					}
					go func() {
						defer c.Close()
						c.SetDeadline(time.Now().Add(5 * time.Second))
						hdr := make([]byte, 4+1+1+16+1)
						if _, err := io.ReadFull(c, hdr); err != nil {
							return
						}
						io.CopyN(io.Discard, c, int64(hdr[len(hdr)-1])) // the node ID
						c.Write(append(make([]byte, 17), tt.answer...)) // status 0, no cluster ID
					}()
				}
			}()
			a := newNode(t, dir, "a", "--raft-addr="+addrs[0], "--cluster=a="+addrs[0]+",b="+addrs[1])
			if err := a.Start(); err != nil {
				t.Fatal(err)
			}
			if tt.refuse {
				if err := a.Wait(ctx); err == nil || errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("a = %v, want it refused", err)
				}
				if tail := a.LogTail(20); !strings.Contains(tail, "peer b holds the cluster's state") {
					t.Fatalf("a's refusal does not name b:\n%s", tail)
				}
			} else {
				addr, err := a.HTTPAddr(ctx)
				if err != nil {
					t.Fatal(err)
				}
				waitUntil(ctx, t, "a logs why it waits for b", func() bool {
					l := a.LogTail(50)
					return strings.Contains(l, `"msg":"waiting for --cluster peers before bootstrapping"`) && strings.Contains(l, tt.why)
				})
				if code, body := get(ctx, t, "http://"+addr+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, wire.CodeNotReady) {
					t.Fatalf("a's /readyz = %d %s, want 503 not_ready", code, body)
				}
				if err := a.Stop(ctx); err != nil {
					t.Fatalf("Stop(a) = %v", err)
				}
			}
			if l := a.LogTail(200); strings.Contains(l, "raft started") {
				t.Fatalf("a started raft:\n%s", l)
			}
		})
	}
}

// TestLegacyDataDirsDeriveOneID: data dirs made by a version without a
// cluster ID (the test deletes cluster.id, cluster.candidate and
// cluster.round from all three, stopped) derive one when started again: the
// same on every member, from their Raft configuration, logged at Info. The
// cluster elects a leader, keeps every acknowledged write and takes new ones.
func TestLegacyDataDirsDeriveOneID(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := startCluster(t)
	if err := c.WaitReady(ctx); err != nil {
		t.Fatalf("WaitReady() = %v", err)
	}
	cl := client.NewClient(client.ClientConfig{Endpoints: c.HTTPAddrs(), Timeout: 10 * time.Second})
	st, err := cl.ClusterFrom(ctx, c.URL("n1"))
	if err != nil {
		t.Fatal(err)
	}
	old := st.ClusterID
	var acks []ack
	for i := range 20 {
		acks = append(acks, blindPut(ctx, cl, int64(i)))
	}
	for _, p := range c.Nodes() {
		if err := c.Stop(ctx, p.ID()); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"cluster.id", "cluster.candidate", "cluster.round"} {
			if err := os.Remove(filepath.Join(p.DataDir(), f)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, p := range c.Nodes() {
		if err := c.Restart(ctx, p.ID()); err != nil {
			t.Fatalf("Restart(%s) = %v", p.ID(), err)
		}
	}
	if err := c.WaitReady(ctx); err != nil {
		t.Fatalf("WaitReady() after the upgrade = %v", err)
	}
	ids := map[string]bool{}
	for _, p := range c.Nodes() {
		st, err := cl.ClusterFrom(ctx, c.URL(p.ID()))
		if err != nil {
			t.Fatal(err)
		}
		ids[st.ClusterID] = true
		if l := p.LogTail(400); !strings.Contains(l, `"msg":"cluster id"`) || !strings.Contains(l, "derived from the latest raft configuration") {
			t.Fatalf("%s does not log the derived cluster id:\n%s", p.ID(), p.LogTail(30))
		}
	}
	if len(ids) != 1 || ids[""] || ids[old] {
		t.Fatalf("cluster ids after the upgrade %v (before: %s), want one derived", ids, old)
	}
	for i := 20; i < 30; i++ {
		acks = append(acks, blindPut(ctx, cl, int64(i)))
	}
	checkSettled(ctx, t, c, acks)
}
