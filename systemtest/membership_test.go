package systemtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/launcher"
	"github.com/txlog/txlog/txid"
)

// TestMembership joins a fourth node through --join, checks that it catches up
// with the log, removes it (it then answers writes with 503 removed and exits),
// and hands leadership to a chosen node.
func TestMembership(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := startCluster(t)
	cl := client.NewClient(client.ClientConfig{Endpoints: c.HTTPAddrs()})
	for i := range 20 {
		if _, err := cl.Submit(ctx, wire.TxRequest{Ops: []wire.Op{{Op: "put", Key: "m/" + strconv.Itoa(i), Value: json.RawMessage(`1`)}}}, wire.SubmitOptions{}); err != nil {
			t.Fatalf("Submit() = %v", err)
		}
	}

	// Join n4 through a follower: the request is forwarded to the leader.
	leader := mustLeaderID(ctx, t, c)
	via := c.URL(aFollower(c, leader))
	n4 := startExtraNode(t, t.TempDir(), "n4", "--join="+via)
	addr, err := n4.HTTPAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n4URL := "http://" + addr
	want := lastIndex(ctx, t, c)
	waitUntil(ctx, t, "n4 is a voter and caught up", func() bool {
		st, err := cl.ClusterFrom(ctx, n4URL)
		if err != nil || st.AppliedIndex < want {
			return false
		}
		for _, m := range st.Members {
			if m.ID == "n4" && m.Suffrage == "voter" {
				return true
			}
		}
		return false
	})
	// It has its node number too: a write it takes before then is 503
	// not_ready, which the removal below does not expect.
	waitReady(ctx, t, n4URL)
	kv, err := cl.GetFrom(ctx, n4URL, "m/19", wire.ReadOptions{Consistency: wire.ConsistencyStale})
	if err != nil || string(kv.Value) != "1" {
		t.Fatalf("stale read of m/19 on n4 = %+v, %v", kv, err)
	}

	// Remove it again (through any node).
	if err := cl.Remove(ctx, "n4"); err != nil {
		t.Fatalf("Remove(n4) = %v", err)
	}
	// n4 finds out, refuses writes, and exits 3 s later (--shutdown-timeout):
	// asked at once, with writes that park after 500 ms. Until it knows, a
	// write is committed through the leader (200) or, once the leader no
	// longer answers n4, parked (202: TestRemovedMember shows it is handed to
	// the leader).
	waitUntil(ctx, t, "n4 answers writes with 503 removed", func() bool {
		a := call(ctx, t, http.MethodPost, n4URL+"/v1/tx?timeout=500ms", `{"ops":[{"op":"put","key":"after-removal","value":1}]}`)
		if a.status != http.StatusOK && a.status != http.StatusAccepted && a.code != wire.CodeRemoved {
			t.Fatalf("write to n4 after its removal: %d %s; want 200 or 202 until it knows, then 503 removed", a.status, a.body)
		}
		return a.code == wire.CodeRemoved
	})
	// Every remaining node learns the new configuration from the log.
	for _, p := range c.Nodes() {
		waitUntil(ctx, t, p.ID()+" drops n4", func() bool {
			st, err := cl.ClusterFrom(ctx, c.URL(p.ID()))
			if err != nil {
				return false
			}
			for _, m := range st.Members {
				if m.ID == "n4" {
					return false
				}
			}
			return len(st.Members) == 3
		})
	}
	if err := cl.Remove(ctx, "n4"); err == nil {
		t.Fatal("removing n4 twice succeeded; want not found")
	}
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := n4.Wait(wctx); err != nil {
		t.Fatalf("removed n4 did not exit cleanly: %v", err)
	}

	// Hand leadership to a chosen follower.
	leader = mustLeaderID(ctx, t, c)
	var target string
	for _, p := range c.Nodes() {
		if p.ID() != leader {
			target = p.ID()
		}
	}
	res, err := cl.TransferLeadership(ctx, wire.TransferRequest{ID: target})
	if err != nil || res.LeaderID != target {
		t.Fatalf("TransferLeadership(%s) = %+v, %v", target, res, err)
	}
	if got := mustLeaderID(ctx, t, c); got != target {
		t.Fatalf("leader after transfer = %s, want %s", got, target)
	}
}

// waitUntil polls cond with a deadline.
func waitUntil(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// raftHost is the loopback address the Raft ports of the nodes these tests
// start by hand are reserved on: one of their own (launcher.PrivateLoopback), so
// that no process's bind to port 0 on 127.0.0.1 takes a port between its
// reservation and the node's bind.
var raftHost = sync.OnceValue(launcher.PrivateLoopback)

// freeAddrs reserves n distinct ports on raftHost for processes about to
// start (launcher.FreePorts).
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	ports, err := launcher.FreePorts(raftHost(), n)
	if err != nil {
		t.Fatal(err)
	}
	addrs := make([]string, len(ports))
	for i, p := range ports {
		addrs[i] = net.JoinHostPort(raftHost(), strconv.Itoa(p))
	}
	return addrs
}

// freeAddr reserves one port (see freeAddrs).
func freeAddr(t *testing.T) string {
	t.Helper()
	return freeAddrs(t, 1)[0]
}

// newNode makes a txlogd process with its data dir under dir, HTTP on a port
// it picks, and args, and kills it when the test ends (printing its log tail
// if the test failed). It does not start it.
func newNode(t *testing.T, dir, id string, args ...string) *launcher.Process {
	t.Helper()
	return newProcess(t, launcher.ProcessConfig{
		ID: id, DataDir: filepath.Join(dir, id), LogDir: dir,
		Args: append([]string{"--id=" + id, "--data-dir=" + filepath.Join(dir, id), "--http-addr=127.0.0.1:0"}, args...),
	})
}

// startNode starts p and returns its HTTP base URL.
func startNode(ctx context.Context, t *testing.T, p *launcher.Process) string {
	t.Helper()
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	addr, err := p.HTTPAddr(ctx)
	if err != nil {
		t.Fatalf("%s: %v", p.ID(), err)
	}
	return "http://" + addr
}

// joinNode starts a node that joins the cluster through via, and waits until
// it is a voter that has caught up and is ready.
func joinNode(ctx context.Context, t *testing.T, c *launcher.Cluster, dir, id, via string, args ...string) (*launcher.Process, string) {
	t.Helper()
	p := newNode(t, dir, id, append([]string{"--raft-addr=" + freeAddr(t), "--join=" + via}, args...)...)
	base := startNode(ctx, t, p)
	cl := client.NewClient(client.ClientConfig{Endpoints: c.HTTPAddrs()})
	want := lastIndex(ctx, t, c)
	waitUntil(ctx, t, id+" is a voter and caught up", func() bool {
		st, err := cl.ClusterFrom(ctx, base)
		if err != nil || st.AppliedIndex < want {
			return false
		}
		for _, m := range st.Members {
			if m.ID == id && m.Suffrage == "voter" {
				return true
			}
		}
		return false
	})
	waitReady(ctx, t, base) // it has its node number too
	return p, base
}

// httpAnswer is what a node answered to one request: the status and, for an
// error, its code.
type httpAnswer struct {
	status int
	code   string
	body   string
}

// call sends one request to base, without the client's retries, so that the
// node's own answer is seen.
func call(ctx context.Context, t *testing.T, method, url, body string) httpAnswer {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return httpAnswer{body: err.Error()}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e struct {
		Error wire.ErrorBody `json:"error"`
	}
	_ = json.Unmarshal(b, &e)
	return httpAnswer{status: resp.StatusCode, code: e.Error.Code, body: string(b)}
}

// numberOf submits one write to the node at base alone and returns the txid
// node number of the txid it issued.
func numberOf(ctx context.Context, t *testing.T, base string) uint16 {
	t.Helper()
	cl := client.NewClient(client.ClientConfig{Endpoints: []string{base}})
	// 30 s: a slow fsync on a loaded machine must not park the write (202).
	res, err := cl.Submit(ctx, wire.TxRequest{Ops: []wire.Op{{Op: "put", Key: "num/" + base, Value: json.RawMessage(`1`)}}}, wire.SubmitOptions{Timeout: 30 * time.Second})
	if err != nil || res.Status != wire.StatusCommitted {
		t.Fatalf("write to %s = %+v, %v; want committed", base, res, err)
	}
	return res.TxID.Node()
}

// waitReady polls GET /readyz of each base until it answers 200.
func waitReady(ctx context.Context, t *testing.T, bases ...string) {
	t.Helper()
	cl := client.NewClient(client.ClientConfig{})
	for _, b := range bases {
		waitUntil(ctx, t, b+" ready", func() bool { return cl.Ready(ctx, b) == nil })
	}
}

// TestNodeNumbersBootstrap starts a cluster whose ids all end in 1 (a1, b1,
// c1: the trailing digits collide) and checks that they issue txids under
// three different node numbers, that a restart keeps them (also for a data
// dir that lost its node.number file, as one made before that file existed:
// the number comes from the registry), and that a --node-number against a
// data dir's number is refused at start.
func TestNodeNumbersBootstrap(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	ids := []string{"a1", "b1", "c1"}
	raft := map[string]string{}
	var members []string
	addrs := freeAddrs(t, len(ids))
	for i, id := range ids {
		raft[id] = addrs[i]
		members = append(members, id+"="+raft[id])
	}
	procs := map[string]*launcher.Process{}
	for _, id := range ids {
		procs[id] = newNode(t, dir, id, "--raft-addr="+raft[id], "--cluster="+strings.Join(members, ","))
	}
	start := func() map[string]uint16 {
		var bases []string
		for _, id := range ids {
			bases = append(bases, startNode(ctx, t, procs[id]))
		}
		waitReady(ctx, t, bases...)
		nums := map[string]uint16{}
		seen := map[uint16]string{}
		for i, id := range ids {
			num := numberOf(ctx, t, bases[i])
			if other, ok := seen[num]; ok {
				t.Fatalf("%s and %s both issue txids with node number %d", id, other, num)
			}
			seen[num] = id
			nums[id] = num
		}
		var st wire.ClusterStatus
		waitUntil(ctx, t, "every member registered", func() bool {
			var err error
			st, err = client.NewClient(client.ClientConfig{}).ClusterFrom(ctx, bases[0])
			return err == nil && !slices.ContainsFunc(st.Members, func(m wire.Member) bool { return m.NodeNumber == 0 })
		})
		for _, m := range st.Members {
			if m.NodeNumber != int(nums[m.ID]) {
				t.Fatalf("GET /v1/cluster: %s has node_number %d, its txids %d", m.ID, m.NodeNumber, nums[m.ID])
			}
		}
		return nums
	}
	stopAll := func() {
		for _, id := range ids {
			if err := procs[id].Stop(ctx); err != nil {
				t.Fatalf("Stop(%s) = %v", id, err)
			}
		}
	}
	first := start()
	t.Logf("node numbers: %v", first)
	stopAll()

	// b1's data dir loses node.number, as a data dir made before the file.
	if err := os.Remove(filepath.Join(dir, "b1", "node.number")); err != nil {
		t.Fatal(err)
	}
	if again := start(); !maps.Equal(again, first) {
		t.Fatalf("after a restart the node numbers are %v, were %v", again, first)
	}
	stopAll()
	if b, err := os.ReadFile(filepath.Join(dir, "b1", "node.number")); err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(int(first["b1"])) {
		t.Fatalf("b1's node.number = %q, %v; want %d", b, err, first["b1"])
	}

	// A --node-number against the data dir's is refused at start.
	other := (first["a1"] % 9) + 10
	bad := newNode(t, dir, "a1", "--raft-addr="+raft["a1"], "--cluster="+strings.Join(members, ","), fmt.Sprintf("--node-number=%d", other))
	if err := bad.Start(); err != nil {
		t.Fatal(err)
	}
	if err := bad.Wait(ctx); err == nil {
		t.Fatal("a1 with another --node-number started; want it refused")
	}
	if tail := bad.LogTail(5); !strings.Contains(tail, "holds txid node number") {
		t.Fatalf("a1's refusal does not say why:\n%s", tail)
	}
}

// TestNodeNumberBootstrapRefusals checks the starts refused before any state:
// two members given the same number in --cluster, and a --node-number that
// another member takes from the --cluster list.
func TestNodeNumberBootstrapRefusals(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	addrs := freeAddrs(t, 2)
	a, b := addrs[0], addrs[1]
	p := newNode(t, dir, "a", "--raft-addr="+a, "--cluster=a="+a+"@3,b="+b+"@3")
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(ctx); err == nil {
		t.Fatal("a started with node number 3 given to a and b; want it refused")
	}
	if tail := p.LogTail(5); !strings.Contains(tail, "node number 3 given to both a and b") {
		t.Fatalf("the refusal does not say why:\n%s", tail)
	}
	// A --node-number that another member takes from the list.
	q := newNode(t, dir, "n1", "--raft-addr="+a, "--cluster=n1="+a+",n2="+b, "--node-number=2")
	if err := q.Start(); err != nil {
		t.Fatal(err)
	}
	if err := q.Wait(ctx); err == nil {
		t.Fatal("n1 started with --node-number=2, n2's number by --cluster; want it refused")
	}
	if tail := q.LogTail(5); !strings.Contains(tail, "--node-number 2 is the number n2 takes from --cluster") {
		t.Fatalf("the refusal does not say why:\n%s", tail)
	}
}

// TestNodeNumbersJoin joins n4 and m4 (trailing digits that collide) without
// node numbers and checks that the leader assigns them different free ones,
// that concurrent batches through both get answers that carry their own
// idempotency keys and txids, and that a join asking for a member's number is
// refused with 409 node_number_taken naming the holder: through the API, and
// for a txlogd started with --join and that --node-number, which stops.
func TestNodeNumbersJoin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := startCluster(t)
	dir := t.TempDir()
	via := c.URL(aFollower(c, mustLeaderID(ctx, t, c)))
	_, n4 := joinNode(ctx, t, c, dir, "n4", via)
	_, m4 := joinNode(ctx, t, c, dir, "m4", via)
	nums := map[uint16]string{}
	for _, p := range c.Nodes() {
		nums[numberOf(ctx, t, c.URL(p.ID()))] = p.ID()
	}
	for id, base := range map[string]string{"n4": n4, "m4": m4} {
		num := numberOf(ctx, t, base)
		if other, ok := nums[num]; ok {
			t.Fatalf("%s issues txids with node number %d, as %s does", id, num, other)
		}
		nums[num] = id
	}
	t.Logf("node numbers: %v", nums)

	// Concurrent batches through n4 and m4: every answer is the request's own.
	const clients, batches, size = 4, 20, 5
	type sent struct {
		key string
		res wire.TxResult
	}
	var mu sync.Mutex
	var all []sent
	var wg sync.WaitGroup
	for w := range 2 * clients {
		base := n4
		if w%2 == 1 {
			base = m4
		}
		cl := client.NewClient(client.ClientConfig{Endpoints: []string{base}})
		wg.Go(func() {
			for b := range batches {
				var txs []wire.TxRequest
				for i := range size {
					key := fmt.Sprintf("join-%d-%d-%d", w, b, i)
					txs = append(txs, wire.TxRequest{IdempotencyKey: key, Ops: []wire.Op{{Op: "put", Key: key, Value: json.RawMessage(`1`)}}})
				}
				// 30 s: a slow fsync on a loaded machine must not park the write (202).
				res, err := cl.SubmitBatch(ctx, txs, wire.SubmitOptions{Timeout: 30 * time.Second})
				if err != nil {
					t.Errorf("SubmitBatch via %s = %v", base, err)
					return
				}
				mu.Lock()
				for i, r := range res {
					all = append(all, sent{txs[i].IdempotencyKey, r})
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	seen := map[txid.ID]string{}
	for _, s := range all {
		if s.res.Status != wire.StatusCommitted || s.res.IdempotencyKey != s.key || s.res.Duplicate {
			t.Fatalf("write %s answered %+v; want committed with its own key, not a duplicate", s.key, s.res)
		}
		if other, ok := seen[s.res.TxID]; ok {
			t.Fatalf("writes %s and %s answered with the same txid %s", s.key, other, s.res.TxID)
		}
		seen[s.res.TxID] = s.key
	}

	// Asking for a member's number is refused, naming the holder.
	holder, num := "", uint16(0)
	for k, v := range nums {
		if v == "n2" {
			holder, num = v, k
		}
	}
	a := call(ctx, t, http.MethodPost, via+"/v1/cluster/join", fmt.Sprintf(`{"id":"x9","raft_addr":%q,"node_number":%d}`, freeAddr(t), num))
	if a.status != http.StatusConflict || a.code != wire.CodeNodeNumberTaken || !strings.Contains(a.body, "member "+holder) {
		t.Fatalf("join asking for %s's number %d: %d %s; want 409 node_number_taken naming %s", holder, num, a.status, a.body, holder)
	}
	x := newNode(t, dir, "x5", "--raft-addr="+freeAddr(t), "--join="+via, fmt.Sprintf("--node-number=%d", num))
	startNode(ctx, t, x)
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := x.Wait(wctx); err == nil || wctx.Err() != nil {
		t.Fatalf("x5 asking for %s's number: %v; want it refused and stopped", holder, err)
	}
	if tail := x.LogTail(10); !strings.Contains(tail, "node_number_taken") || !strings.Contains(tail, "member "+holder) {
		t.Fatalf("x5's log does not say why it stopped:\n%s", tail)
	}
	st, err := client.NewClient(client.ClientConfig{}).ClusterFrom(ctx, via)
	if err != nil || len(st.Members) != 5 {
		t.Fatalf("members after the refused joins: %+v, %v; want the 5 of before", st.Members, err)
	}

	// A node joined by hand (no --join) takes its number from the log.
	raftAddr := freeAddr(t)
	p4 := newNode(t, dir, "p4", "--raft-addr="+raftAddr)
	p4URL := startNode(ctx, t, p4)
	if a := call(ctx, t, http.MethodPost, p4URL+"/v1/tx", `{"ops":[{"op":"put","key":"early","value":1}]}`); a.status != http.StatusServiceUnavailable || a.code != wire.CodeNotReady {
		t.Fatalf("write to p4 before its join: %d %s; want 503 not_ready", a.status, a.body)
	}
	res, err := client.NewClient(client.ClientConfig{}).JoinVia(ctx, via, wire.JoinRequest{ID: "p4", RaftAddr: raftAddr, HTTPAddr: strings.TrimPrefix(p4URL, "http://")})
	if err != nil || res.NodeNumber == 0 {
		t.Fatalf("JoinVia(p4) = %+v, %v", res, err)
	}
	if other, ok := nums[uint16(res.NodeNumber)]; ok {
		t.Fatalf("p4 was given node number %d, which %s holds", res.NodeNumber, other)
	}
	waitReady(ctx, t, p4URL)
	if got := numberOf(ctx, t, p4URL); got != uint16(res.NodeNumber) {
		t.Fatalf("p4 issues txids with node number %d; the join answered %d", got, res.NodeNumber)
	}
}

// TestNodeNumberClash bootstraps n1 and n2 with the same --node-number (each
// sees only its own flag) and checks that neither answers a write with 200 or
// 202 while both are members, that /readyz says why, that n3 takes writes,
// and that n1 takes them again once n2 is removed.
func TestNodeNumberClash(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := launchCluster(t, launcher.ClusterConfig{
		NodeArgs: func(id string, _ map[string]string) ([]string, error) {
			if id == "n1" || id == "n2" {
				return []string{"--node-number=7"}, nil
			}
			return nil, nil
		},
	})
	mustLeaderID(ctx, t, c)
	for _, id := range []string{"n1", "n2"} {
		waitUntil(ctx, t, id+"'s /readyz names the clash", func() bool {
			a := call(ctx, t, http.MethodGet, c.URL(id)+"/readyz", "")
			return a.status == http.StatusServiceUnavailable && a.code == wire.CodeNodeNumberClash
		})
	}
	for _, id := range []string{"n1", "n2"} {
		for _, q := range []string{"", "?ack=accepted"} {
			a := call(ctx, t, http.MethodPost, c.URL(id)+"/v1/tx"+q, `{"ops":[{"op":"put","key":"clash","value":1}]}`)
			if a.status != http.StatusServiceUnavailable || a.code != wire.CodeNodeNumberClash {
				t.Fatalf("write%s to %s: %d %s; want 503 node_number_clash", q, id, a.status, a.body)
			}
		}
	}
	// 30 s, as in numberOf.
	if a := call(ctx, t, http.MethodPost, c.URL("n3")+"/v1/tx?timeout=30s", `{"ops":[{"op":"put","key":"clash","value":3}]}`); a.status != http.StatusOK {
		t.Fatalf("write to n3: %d %s; want 200", a.status, a.body)
	}
	if err := client.NewClient(client.ClientConfig{Endpoints: []string{c.URL("n3")}}).Remove(ctx, "n2"); err != nil {
		t.Fatalf("Remove(n2) = %v", err)
	}
	waitUntil(ctx, t, "n1 takes writes again", func() bool {
		a := call(ctx, t, http.MethodPost, c.URL("n1")+"/v1/tx", `{"ops":[{"op":"put","key":"clash","value":1}]}`)
		return a.status == http.StatusOK
	})
}

// TestRemovedMember removes n4 while it is down, holding writes it answered
// 202 that no leader has seen, and restarts it: although it never receives its
// removal through the log, it finds out, answers writes and /readyz with 503
// removed, hands the held writes to the leader and exits after its shutdown
// timeout; the cluster commits each of them exactly once.
func TestRemovedMember(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := startCluster(t)
	dir := t.TempDir()
	n4, base := joinNode(ctx, t, c, dir, "n4", c.URL(mustLeaderID(ctx, t, c)), "--shutdown-timeout=2s")

	// n4 alone takes writes: it parks them in its intake WAL (202).
	for _, p := range c.Nodes() {
		if err := c.Pause(p.ID()); err != nil {
			t.Fatal(err)
		}
	}
	var held []txid.ID
	put := func(i int) httpAnswer {
		return call(ctx, t, http.MethodPost, base+"/v1/tx?ack=accepted&timeout=2s", fmt.Sprintf(`{"idempotency_key":"held-%d","ops":[{"op":"put","key":"held/%d","value":%d}]}`, i, i, i))
	}
	hold := func(a httpAnswer) {
		var res wire.TxResult
		if err := json.Unmarshal([]byte(a.body), &res); err != nil || res.TxID == 0 {
			t.Fatalf("202 without a txid: %s", a.body)
		}
		held = append(held, res.TxID)
	}
	for i := range 10 {
		a := put(i)
		if a.status != http.StatusAccepted {
			t.Fatalf("write %d to n4 alone: %d %s; want 202", i, a.status, a.body)
		}
		hold(a)
	}
	if err := n4.Kill(); err != nil {
		t.Fatal(err)
	}
	for _, p := range c.Nodes() {
		if err := c.Resume(p.ID()); err != nil {
			t.Fatal(err)
		}
	}
	cl := client.NewClient(client.ClientConfig{Endpoints: c.HTTPAddrs()})
	if err := cl.Remove(ctx, "n4"); err != nil {
		t.Fatalf("Remove(n4) = %v", err)
	}

	// Back, n4 learns that it was removed; until then it may park more.
	base = startNode(ctx, t, n4)
	pace := time.NewTicker(20 * time.Millisecond) // a write rate, not a wait
	defer pace.Stop()
	giveUp := time.Now().Add(30 * time.Second)
	for i := 10; ; i++ {
		<-pace.C
		if time.Now().After(giveUp) {
			t.Fatalf("n4 still takes writes 30s after its removal (%d held)", len(held))
		}
		a := put(i)
		if a.status == http.StatusAccepted {
			hold(a)
			continue
		}
		if a.status == http.StatusServiceUnavailable && a.code == wire.CodeNotReady {
			continue // just started: nothing done, asked again
		}
		if a.status != http.StatusServiceUnavailable || a.code != wire.CodeRemoved {
			t.Fatalf("write %d to the removed n4: %d %s; want 202 until it knows, then 503 removed", i, a.status, a.body)
		}
		break
	}
	if a := call(ctx, t, http.MethodGet, base+"/readyz", ""); a.status != http.StatusServiceUnavailable || a.code != wire.CodeRemoved {
		t.Fatalf("GET /readyz on the removed n4: %d %s; want 503 removed", a.status, a.body)
	}
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := n4.Wait(wctx); err != nil {
		t.Fatalf("removed n4 did not exit cleanly: %v", err)
	}

	// Each held write is committed once, under its own txid.
	resolved := waitResolved(ctx, t, c, held)
	for id, res := range resolved {
		if res.Status != wire.StatusCommitted || res.TxID != id {
			t.Fatalf("held %s resolved as %+v, want committed under its own txid", id, res)
		}
	}
	count := map[txid.ID]int{}
	for _, e := range readLog(ctx, t, c.URL(mustLeaderID(ctx, t, c)), lastIndex(ctx, t, c)) {
		count[e.TxID]++
	}
	for _, id := range held {
		if count[id] != 1 {
			t.Fatalf("held %s is %d times in the log, want once", id, count[id])
		}
	}
	t.Logf("%d held writes handed off", len(held))
}

// TestRemovedLeader removes the leader (n4, joined and handed leadership):
// its Raft stops, the others elect a leader, and n4 answers writes with 503
// removed and exits, while the cluster goes on taking writes.
func TestRemovedLeader(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := startCluster(t)
	dir := t.TempDir()
	n4, base := joinNode(ctx, t, c, dir, "n4", c.URL(mustLeaderID(ctx, t, c)), "--shutdown-timeout=3s")
	cl := client.NewClient(client.ClientConfig{Endpoints: c.HTTPAddrs()})
	if res, err := cl.TransferLeadership(ctx, wire.TransferRequest{ID: "n4"}); err != nil || res.LeaderID != "n4" {
		t.Fatalf("TransferLeadership(n4) = %+v, %v", res, err)
	}
	if err := client.NewClient(client.ClientConfig{Endpoints: []string{base}}).Remove(ctx, "n4"); err != nil {
		t.Fatalf("Remove(n4) through n4 = %v", err)
	}
	waitUntil(ctx, t, "n4 answers writes with 503 removed", func() bool {
		a := call(ctx, t, http.MethodPost, base+"/v1/tx?timeout=500ms", `{"ops":[{"op":"put","key":"after-removal","value":1}]}`)
		if a.status == 0 {
			t.Fatalf("n4 stopped before it answered 503 removed: %s", a.body)
		}
		return a.code == wire.CodeRemoved
	})
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := n4.Wait(wctx); err != nil {
		t.Fatalf("removed n4 did not exit cleanly: %v", err)
	}
	if res, err := cl.Submit(ctx, wire.TxRequest{Ops: []wire.Op{{Op: "put", Key: "after", Value: json.RawMessage(`1`)}}}, wire.SubmitOptions{}); err != nil || res.Status != wire.StatusCommitted {
		t.Fatalf("write to the rest = %+v, %v", res, err)
	}
}
