package systemtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/txid"
)

// TestJoinGuard checks the joins that would re-point a member: its id with
// another raft or HTTP address, or its raft address under a new id, are
// refused 409 member_exists and change nothing; a join with a member's own
// addresses is idempotent; with "replace": true a member is re-pointed.
func TestJoinGuard(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := startCluster(t)
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	leader := mustLeaderID(ctx, t, c)
	via := c.URL(aFollower(c, leader)) // forwarded to the leader
	cl := client.NewClient(client.ClientConfig{Endpoints: c.HTTPAddrs()})
	members := func() map[string]wire.Member {
		t.Helper()
		st, err := cl.ClusterFrom(ctx, c.URL(mustLeaderID(ctx, t, c)))
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]wire.Member{}
		for _, m := range st.Members {
			out[m.ID] = m
		}
		return out
	}
	join := func(body string) httpAnswer {
		return call(ctx, t, http.MethodPost, via+"/v1/cluster/join", body)
	}
	// joinOK joins until the leader has every member's number (before, it
	// answers 503 not_ready) and reports the answer.
	joinOK := func(body string) httpAnswer {
		var a httpAnswer
		waitUntil(ctx, t, "a join the leader can decide", func() bool {
			a = join(body)
			return a.code != wire.CodeNotReady
		})
		return a
	}
	addrs := func(ms map[string]wire.Member) string {
		var out []string
		for _, m := range ms {
			out = append(out, fmt.Sprintf("%s raft=%s http=%s %s", m.ID, m.RaftAddr, m.HTTPAddr, m.Suffrage))
		}
		slices.Sort(out)
		return strings.Join(out, "; ")
	}
	waitUntil(ctx, t, "every member registered", func() bool {
		for _, m := range members() {
			if m.HTTPAddr == "" || m.NodeNumber == 0 {
				return false
			}
		}
		return true
	})
	before := members()
	target := aFollower(c, leader)
	m := before[target]
	for _, tc := range []struct{ name, body string }{
		{"member's id, another raft address", fmt.Sprintf(`{"id":%q,"raft_addr":%q}`, target, freeAddr(t))},
		{"member's id, another http address", fmt.Sprintf(`{"id":%q,"raft_addr":%q,"http_addr":"127.0.0.1:1"}`, target, m.RaftAddr)},
		{"member's raft address, a new id", fmt.Sprintf(`{"id":"x7","raft_addr":%q}`, m.RaftAddr)},
		{"replace false", fmt.Sprintf(`{"id":%q,"raft_addr":%q,"replace":false}`, target, freeAddr(t))},
	} {
		if a := join(tc.body); a.status != http.StatusConflict || a.code != wire.CodeMemberExists {
			t.Errorf("join with %s: %d %s; want 409 member_exists", tc.name, a.status, a.body)
		} else {
			t.Logf("join with %s: %s", tc.name, a.body)
		}
	}
	if after := members(); addrs(after) != addrs(before) {
		t.Fatalf("members after the refused joins: %s; want as before: %s", addrs(after), addrs(before))
	}
	if a := join(`{"id":"x8","raft_addr":"127.0.0.1:1","replace":"yes"}`); a.status != http.StatusBadRequest {
		t.Errorf("join with replace a string: %d %s; want 400", a.status, a.body)
	}
	// The same addresses: idempotent.
	if a := joinOK(fmt.Sprintf(`{"id":%q,"raft_addr":%q,"http_addr":%q}`, target, m.RaftAddr, m.HTTPAddr)); a.status != http.StatusOK {
		t.Fatalf("join with %s's own addresses: %d %s; want 200", target, a.status, a.body)
	}
	// A nonvoter with no process behind it (the quorum does not count it):
	// joined, joined again the same, re-pointed only with replace.
	addr, moved := freeAddr(t), freeAddr(t)
	x := fmt.Sprintf(`{"id":"x5","raft_addr":%q,"http_addr":"127.0.0.1:2","voter":false`, addr)
	for i := range 2 {
		if a := joinOK(x + "}"); a.status != http.StatusOK {
			t.Fatalf("join %d of x5: %d %s; want 200", i, a.status, a.body)
		}
	}
	if a := join(fmt.Sprintf(`{"id":"x5","raft_addr":%q,"voter":false}`, moved)); a.code != wire.CodeMemberExists {
		t.Fatalf("join of x5 at another raft address: %d %s; want 409 member_exists", a.status, a.body)
	}
	if a := join(fmt.Sprintf(`{"id":"x5","raft_addr":%q,"http_addr":"127.0.0.1:3","voter":false,"replace":true}`, moved)); a.status != http.StatusOK {
		t.Fatalf("join of x5 at another raft address with replace: %d %s; want 200", a.status, a.body)
	}
	if got := members()["x5"]; got.RaftAddr != moved || got.HTTPAddr != "127.0.0.1:3" {
		t.Fatalf("x5 after the replace: %+v; want raft %s, http 127.0.0.1:3", got, moved)
	}
	if a := call(ctx, t, http.MethodDelete, via+"/v1/cluster/nodes/x5", ""); a.status >= 300 {
		t.Fatalf("DELETE x5: %d %s", a.status, a.body)
	}
	// The cluster still takes writes through every node.
	for _, p := range c.Nodes() {
		base := c.URL(p.ID())
		// 30 s: a slow fsync on a loaded machine must not park the write (202).
		if a := call(ctx, t, http.MethodPost, base+"/v1/tx?timeout=30s", `{"ops":[{"op":"put","key":"after-joins","value":1}]}`); a.status != http.StatusOK {
			t.Fatalf("write through %s after the joins: %d %s", p.ID(), a.status, a.body)
		}
	}
}

// TestRemovedMemberWrites writes through n4 from several clients while n4
// is removed (DELETE /v1/cluster/nodes/n4 on the leader), and goes on for a
// while after the DELETE answered: no write sent after that answer is
// answered 200 (503 removed; 202 pending for one whose first attempt may
// have reached the leader, which n4 hands off and which must commit; no
// answer once n4 exits), and every write answered 200 is in the logs of all
// nodes, once, and those logs are identical.
func TestRemovedMemberWrites(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := startCluster(t)
	dir := t.TempDir()
	_, base := joinNode(ctx, t, c, dir, "n4", c.URL(mustLeaderID(ctx, t, c)), "--shutdown-timeout=3s")

	type answer struct {
		sent, got time.Time
		a         httpAnswer
		key       string
	}
	var (
		mu      sync.Mutex
		answers []answer
		stop    = make(chan struct{})
		wg      sync.WaitGroup
	)
	for w := range 4 {
		wg.Go(func() {
			pace := time.NewTicker(5 * time.Millisecond) // a write rate, not a wait
			defer pace.Stop()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-pace.C:
				}
				key := fmt.Sprintf("rm-%d-%d", w, i)
				sent := time.Now()
				a := call(ctx, t, http.MethodPost, base+"/v1/tx?timeout=2s", fmt.Sprintf(`{"idempotency_key":%q,"ops":[{"op":"put","key":%q,"value":%d}]}`, key, key, i))
				mu.Lock()
				answers = append(answers, answer{sent: sent, got: time.Now(), a: a, key: key})
				mu.Unlock()
			}
		})
	}
	waitUntil(ctx, t, "writes through n4 committed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		ok := 0
		for _, x := range answers {
			if x.a.status == http.StatusOK {
				ok++
			}
		}
		return ok >= 20
	})
	leaderURL := c.URL(mustLeaderID(ctx, t, c))
	if a := call(ctx, t, http.MethodDelete, leaderURL+"/v1/cluster/nodes/n4", ""); a.status >= 300 {
		t.Fatalf("DELETE n4: %d %s", a.status, a.body)
	}
	deleted := time.Now()
	// Keep writing through n4 for 3 s after the answer.
	waitUntil(ctx, t, "3 s of writes after the DELETE", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(answers) > 0 && answers[len(answers)-1].sent.After(deleted.Add(3*time.Second))
	})
	close(stop)
	wg.Wait()

	var acked []ack
	var parked []txid.ID // answered 202: n4 hands them to the leader before it exits
	after := map[string]int{}
	for _, x := range answers {
		if x.sent.After(deleted) {
			switch {
			case x.a.status == http.StatusOK:
				t.Errorf("write %s sent %s after the DELETE answered: 200 %s; want it refused", x.key, x.sent.Sub(deleted), x.a.body)
			case x.a.status == http.StatusServiceUnavailable && x.a.code != wire.CodeRemoved:
				t.Errorf("write %s sent after the DELETE: 503 %s; want 503 removed", x.key, x.a.body)
			}
			after[fmt.Sprintf("%d %s", x.a.status, x.a.code)]++
		}
		if x.a.status == http.StatusAccepted {
			var res wire.TxResult
			if err := json.Unmarshal([]byte(x.a.body), &res); err != nil || res.TxID == 0 {
				t.Fatalf("202 without a txid: %s", x.a.body)
			}
			parked = append(parked, res.TxID)
		}
		if x.a.status == http.StatusOK {
			var res wire.TxResult
			if err := json.Unmarshal([]byte(x.a.body), &res); err != nil || res.TxID == 0 {
				t.Fatalf("200 without a txid: %s", x.a.body)
			}
			acked = append(acked, ack{key: x.key, res: res})
		}
	}
	t.Logf("%d writes through n4, %d answered 200; after the DELETE: %v", len(answers), len(acked), after)
	if t.Failed() {
		return
	}
	// Every 200 is committed, once, and the remaining members agree; every
	// 202 is committed too.
	cl := client.NewClient(client.ClientConfig{Endpoints: c.HTTPAddrs()})
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	for id, res := range waitResolved(ctx, t, c, parked) {
		if res.Status != wire.StatusCommitted {
			t.Errorf("parked %s resolved as %+v, want committed", id, res)
		}
	}
	upTo := lastIndex(ctx, t, c)
	var logs []string
	count := map[txid.ID]int{}
	for _, p := range c.Nodes() {
		log := readLog(ctx, t, c.URL(p.ID()), upTo)
		b, _ := json.Marshal(log)
		logs = append(logs, string(b))
		if p.ID() == mustLeaderID(ctx, t, c) {
			for _, e := range log {
				count[e.TxID]++
			}
		}
	}
	for i := 1; i < len(logs); i++ {
		if logs[i] != logs[0] {
			t.Fatalf("the logs of %s and %s differ", c.Nodes()[0].ID(), c.Nodes()[i].ID())
		}
	}
	for _, a := range acked {
		if count[a.res.TxID] != 1 {
			t.Errorf("acknowledged %s (%s) is %d times in the log, want once", a.key, a.res.TxID, count[a.res.TxID])
		}
		if _, err := cl.Get(ctx, a.key, wire.ReadOptions{}); err != nil {
			t.Errorf("Get(%s) = %v; want the acknowledged write", a.key, err)
		}
	}
}

// TestJoinedMemberRestarts restarts a member that joined with --join on
// another HTTP port (--http-addr=127.0.0.1:0): the leader refuses its join
// again (member_exists: another HTTP address), it goes on as the member its
// configuration lists, registers its new address itself, and takes writes.
func TestJoinedMemberRestarts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := startCluster(t)
	dir := t.TempDir()
	n4, base := joinNode(ctx, t, c, dir, "n4", c.URL(mustLeaderID(ctx, t, c)))
	if err := n4.Stop(ctx); err != nil {
		t.Fatalf("Stop(n4) = %v", err)
	}
	base2 := startNode(ctx, t, n4)
	if base2 == base {
		t.Logf("n4 came back on the same port %s", base)
	}
	waitReady(ctx, t, base2)
	cl := client.NewClient(client.ClientConfig{Endpoints: c.HTTPAddrs()})
	waitUntil(ctx, t, "n4's new http address in the registry", func() bool {
		st, err := cl.ClusterFrom(ctx, c.URL(mustLeaderID(ctx, t, c)))
		if err != nil {
			return false
		}
		for _, m := range st.Members {
			if m.ID == "n4" {
				return "http://"+m.HTTPAddr == base2
			}
		}
		return false
	})
	// 30 s: a slow fsync on a loaded machine must not park the write (202).
	if a := call(ctx, t, http.MethodPost, base2+"/v1/tx?timeout=30s", `{"ops":[{"op":"put","key":"n4-back","value":1}]}`); a.status != http.StatusOK {
		t.Fatalf("write through the restarted n4: %d %s; want 200", a.status, a.body)
	}
	if !n4.Running() {
		t.Fatal("n4 exited after its restart")
	}
}
