//go:build linux

package systemtest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/launcher"
	"github.com/txlog/txlog/txid"
)

// composePath is the compose file whose services the three-host test runs.
var composePath = filepath.Join("..", "deploy", "compose.yaml")

// TestThreeHosts runs deploy/compose.yaml's three txlogd services and its Redis
// each on a host of its own: a network namespace with the service's address,
// joined to the others by a bridge, running the service's command line (only
// --data-dir moves to a temporary directory). It writes through every node,
// cuts the leader's link (a real partition: its packets go nowhere), checks
// that the other two elect a leader and keep committing while the cut-off
// node parks its writes (202), brings the link back, does the same to a
// follower, and checks every acknowledged write once in every node's log.
//
// It needs Linux, root, ip (iproute2) and redis-server; without them it skips,
// or fails when CI is set.
func TestThreeHosts(t *testing.T) {
	requireThreeHosts(t)
	began := time.Now()
	phase := began
	lap := func(what string) {
		t.Logf("%-44s %6v (total %v)", what, time.Since(phase).Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
		phase = time.Now()
	}
	b, err := os.ReadFile(composePath)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := parseCompose(b)
	if err != nil {
		t.Fatalf("%s: %v", composePath, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := t.TempDir()
	if d := os.Getenv("TXLOG_TEST_DIR"); d != "" {
		dir = d
	}
	hn := newHostNet(t, plan)
	lap("namespaces and bridge up")

	// Redis on its own host, with the compose command's settings.
	redisAddr := net.JoinHostPort(plan.Redis.Addr.String(), plan.Redis.Port)
	redisData := filepath.Join(dir, plan.Redis.Name)
	if err := os.MkdirAll(redisData, 0o755); err != nil {
		t.Fatal(err)
	}
	bin, args := hn.command(plan.Redis.Name, "redis-server", append(slices.Clone(plan.Redis.Args),
		"--bind", plan.Redis.Addr.String(), "--port", plan.Redis.Port, "--dir", redisData, "--daemonize", "no")...)
	startHostProcess(t, plan.Redis.Name, bin, args, "", dir)
	hostHTTP := nsHTTPClient(hn.bridge, nil)
	hostDial := hostHTTP.Transport.(*http.Transport).DialContext
	if err := launcher.Poll(ctx, 20*time.Millisecond, func(ctx context.Context) error { return pingRedis(ctx, hostDial, redisAddr) }); err != nil {
		t.Fatalf("redis-server on %s: %v", redisAddr, err)
	}
	lap("redis-server answers PING")

	// The three nodes, each on its host.
	urls := map[string]string{}
	var ids []string
	procs := map[string]*launcher.Process{}
	for _, n := range plan.Nodes {
		dataDir := filepath.Join(dir, n.ID)
		bin, args := hn.command(n.ID, txlogdBin, withFlag(n.Args, "data-dir", dataDir)...)
		procs[n.ID] = startHostProcess(t, n.ID, bin, args, dataDir, dir)
		urls[n.ID] = "http://" + n.HTTP
		ids = append(ids, n.ID)
	}
	for _, id := range ids {
		if _, err := procs[id].HTTPAddr(ctx); err != nil {
			t.Fatal(err)
		}
	}
	nodeClient := func(id string, hc *http.Client, timeout time.Duration) *client.Client {
		return client.NewClient(client.ClientConfig{Endpoints: []string{urls[id]}, HTTPClient: hc,
			Timeout: timeout, AttemptTimeout: 3 * time.Second, MaxBackoff: 200 * time.Millisecond})
	}
	leader := waitAgreedLeader(ctx, t, hostHTTP, urls, ids, "bootstrap")
	lap("bootstrapped, " + leader + " leads")

	// Writes through every node, each answered committed.
	var acks []ack
	tx := func(key string) wire.TxRequest {
		return wire.TxRequest{IdempotencyKey: key, Ops: []wire.Op{{Op: "put", Key: "3h/" + key, Value: json.RawMessage(`"v"`)}}}
	}
	writeThrough := func(tag string, through []string, n int) {
		t.Helper()
		for _, id := range through {
			cl := nodeClient(id, hostHTTP, 10*time.Second)
			for i := range n {
				// 30 s: a slow fsync on a loaded machine must not park the write (202).
				a := submitOpts(ctx, cl, tx(fmt.Sprintf("%s-%s-%d", tag, id, i)), wire.SubmitOptions{Timeout: 30 * time.Second}) // retried under its idempotency key
				if a.err != nil || a.res.Status != wire.StatusCommitted {
					t.Fatalf("%s: write %d through %s = %+v, %v; want committed", tag, i, id, a.res, a.err)
				}
				acks = append(acks, a)
			}
		}
	}
	writeThrough("before", ids, 10)
	lap("30 writes through every node committed")

	var endpoints []string
	for _, id := range ids {
		endpoints = append(endpoints, urls[id])
	}
	all := client.NewClient(client.ClientConfig{Endpoints: endpoints, HTTPClient: hostHTTP,
		Timeout: 5 * time.Second, MaxBackoff: 200 * time.Millisecond})

	// cutOff takes node cut's link down (a partition), checks that the other
	// two have a leader and commit while cut parks its writes, brings the link
	// back and waits until every write cut parked is resolved.
	cutOff := func(cut, role string) {
		t.Helper()
		others := slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return id == cut })
		if err := hn.setLink(cut, false); err != nil {
			t.Fatal(err)
		}
		linkUp := false
		t.Cleanup(func() {
			if !linkUp {
				hn.setLink(cut, true)
			}
		})
		// The partition is real: nothing on the network reaches the cut-off node.
		dctx, dcancel := context.WithTimeout(ctx, 500*time.Millisecond)
		if c, err := hostDial(dctx, "tcp", strings.TrimPrefix(urls[cut], "http://")); err == nil {
			c.Close()
			t.Fatalf("%s still reachable over the network with its link down", cut)
		}
		dcancel()
		// The cut-off node is reached from inside its own host, on loopback (it
		// listens on every address of its namespace; its network address went
		// with the link).
		cutHTTP := nsHTTPClient(hn.hosts[cut], func(addr string) string {
			_, port, _ := net.SplitHostPort(addr)
			return net.JoinHostPort("127.0.0.1", port)
		})
		cutClient := nodeClient(cut, cutHTTP, 5*time.Second)
		var parked []txid.ID
		parkOnCut := func(tag string, n int) {
			t.Helper()
			for i := range n {
				key := fmt.Sprintf("%s-%s-%d", tag, cut, i)
				res, err := cutClient.Submit(ctx, tx(key), wire.SubmitOptions{Timeout: 500 * time.Millisecond})
				a := ack{key: key, res: res, err: err}
				switch {
				case a.err != nil:
					// A refusal: the client's time ran out on answers that did nothing
					// (503), or on no answer. Its outcome stays unknown to the checks.
					t.Logf("%s: write %d through the cut-off %s refused: %v", tag, i, cut, a.err)
				case a.res.Status == wire.StatusPending:
					parked = append(parked, a.res.TxID)
				default:
					t.Fatalf("%s: write %d through the cut-off %s = %+v; a node without a quorum cannot commit", tag, i, cut, a.res)
				}
				acks = append(acks, a)
			}
		}
		parkOnCut(role+"-cut-early", 3) // while it may still think it leads or follows
		newLeader := waitAgreedLeader(ctx, t, hostHTTP, urls, others, "the partition")
		if newLeader == cut {
			t.Fatalf("%s leads the majority side while cut off", cut)
		}
		lap(fmt.Sprintf("%s %s cut off: %s leads the other two", role, cut, newLeader))
		writeThrough(role+"-partition", others, 10)
		lap("20 writes through the majority committed")
		if err := launcher.Poll(ctx, 50*time.Millisecond, func(ctx context.Context) error {
			st, err := cutClient.ClusterFrom(ctx, urls[cut])
			if err == nil && (st.State == "leader" || st.LeaderID != "") {
				err = fmt.Errorf("%s still says it is %s under %q (term %d)", cut, st.State, st.LeaderID, st.Term)
			}
			return err
		}); err != nil {
			t.Fatalf("the cut-off %s did not lose its leader: %v", cut, err)
		}
		parkOnCut(role+"-cut-late", 3)
		if len(parked) == 0 {
			t.Fatalf("the cut-off %s parked none of 6 writes", cut)
		}
		lap(fmt.Sprintf("%s knows no leader, parked %d of 6 writes", cut, len(parked)))

		// The link comes back: one cluster again, the parked writes commit.
		if err := hn.setLink(cut, true); err != nil {
			t.Fatal(err)
		}
		linkUp = true
		waitAgreedLeader(ctx, t, hostHTTP, urls, ids, "the link came back")
		lap("link back: all three agree on a leader")
		resolved := map[txid.ID]wire.TxResult{}
		for _, id := range parked {
			err := launcher.Poll(ctx, 50*time.Millisecond, func(ctx context.Context) error {
				res, err := all.Tx(ctx, id, 2*time.Second)
				if err == nil && !final(res.Status) {
					err = fmt.Errorf("still %s", res.Status)
				}
				resolved[id] = res
				return err
			})
			if err != nil {
				t.Fatalf("parked %s not resolved: %v", id, err)
			}
		}
		for i, a := range acks {
			if a.err == nil && a.res.Status == wire.StatusPending {
				acks[i].res = resolved[a.res.TxID]
			}
		}
		lap(fmt.Sprintf("%d parked writes resolved", len(parked)))
	}
	cutOff(leader, "leader")
	writeThrough("between", ids, 3)
	leader = waitAgreedLeader(ctx, t, hostHTTP, urls, ids, "the writes between")
	cutOff(aFollowerOf(ids, leader), "follower")
	writeThrough("after", ids, 3)
	lap("9 more writes through every node committed")

	// Every acknowledged write once in every node's log.
	logs := map[string][]wire.LogEntry{}
	var upTo uint64
	for _, id := range ids {
		st, err := nodeClient(id, hostHTTP, 5*time.Second).ClusterFrom(ctx, urls[id])
		if err != nil {
			t.Fatal(err)
		}
		upTo = max(upTo, st.CommitIndex)
	}
	for _, id := range ids {
		logs[id] = readNodeLog(ctx, t, nodeClient(id, hostHTTP, 5*time.Second), urls[id], upTo)
	}
	if err := checkCluster(acks, logs); err != nil {
		t.Fatal(err)
	}
	lap(fmt.Sprintf("%d acknowledged writes checked in 3 logs of %d entries", len(acks), len(logs[ids[0]])))
}

// requireThreeHosts skips the test (fails it when CI is set) unless it can
// make network namespaces and run what it runs in them.
func requireThreeHosts(t *testing.T) {
	t.Helper()
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root (to create network namespaces)")
	}
	for _, bin := range []string{"ip", "redis-server"} {
		if _, err := exec.LookPath(bin); err != nil {
			missing = append(missing, bin+" in PATH (Debian package "+map[string]string{"ip": "iproute2", "redis-server": "redis-server"}[bin]+")")
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := "the three-host test needs " + strings.Join(missing, ", ")
	if os.Getenv("CI") != "" {
		t.Fatalf("%s, and CI is set: CI runs as root and scripts/test.sh installs the packages", msg)
	}
	t.Skipf("%s; run it as root: sudo -E go test -count=1 -run TestThreeHosts ./systemtest/", msg)
}

// startHostProcess starts bin with args (an `ip netns exec` line) and stops it
// in t.Cleanup, printing its log tail when the test failed.
func startHostProcess(t *testing.T, id, bin string, args []string, dataDir, logDir string) *launcher.Process {
	t.Helper()
	p, err := launcher.NewProcess(launcher.ProcessConfig{ID: id, Bin: bin, Args: args, DataDir: dataDir, LogDir: logDir})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- %s log tail:\n%s", id, p.LogTail(40))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := p.Stop(ctx); err != nil {
			t.Logf("stop %s: %v", id, err)
		}
	})
	return p
}

// waitAgreedLeader polls ids until each names the same leader among them and
// that one says it leads, for at most 30 s.
func waitAgreedLeader(ctx context.Context, t *testing.T, hc *http.Client, urls map[string]string, ids []string, after string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cl := client.NewClient(client.ClientConfig{HTTPClient: hc, Timeout: time.Second, AttemptTimeout: time.Second})
	var leader string
	err := launcher.Poll(ctx, 50*time.Millisecond, func(ctx context.Context) error {
		leader = ""
		states := map[string]string{}
		for _, id := range ids {
			st, err := cl.ClusterFrom(ctx, urls[id])
			switch {
			case err != nil:
				return fmt.Errorf("%s: %w", id, err)
			case st.ID != id:
				return fmt.Errorf("%s answers as %q", urls[id], st.ID)
			case st.LeaderID == "":
				return fmt.Errorf("%s knows no leader", id)
			case leader != "" && st.LeaderID != leader:
				return fmt.Errorf("%s sees %s, another sees %s", id, st.LeaderID, leader)
			}
			leader, states[id] = st.LeaderID, st.State
		}
		if states[leader] != "leader" {
			return fmt.Errorf("%v name %s, which is %q", ids, leader, states[leader])
		}
		return nil
	})
	if err != nil {
		t.Fatalf("no leader agreed by %v after %s: %v", ids, after, err)
	}
	return leader
}

// aFollowerOf returns the first of ids that is not leader.
func aFollowerOf(ids []string, leader string) string {
	for _, id := range ids {
		if id != leader {
			return id
		}
	}
	return ""
}

// readNodeLog pages through the log of the node at base, first waiting until
// it has applied upTo.
func readNodeLog(ctx context.Context, t *testing.T, cl *client.Client, base string, upTo uint64) []wire.LogEntry {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := launcher.Poll(wctx, 20*time.Millisecond, func(ctx context.Context) error {
		st, err := cl.ClusterFrom(ctx, base)
		if err == nil && st.AppliedIndex < upTo {
			err = fmt.Errorf("applied %d of %d", st.AppliedIndex, upTo)
		}
		return err
	})
	if err != nil {
		t.Fatalf("%s: %v", base, err)
	}
	return pageLog(ctx, t, cl, base)
}

// pingRedis sends one inline PING to addr over dial and wants +PONG.
func pingRedis(ctx context.Context, dial func(context.Context, string, string) (net.Conn, error), addr string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	conn, err := dial(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

// TestParseCompose feeds the three-host test's reader of deploy/compose.yaml
// the real file and broken ones, and expects each break to be named.
func TestParseCompose(t *testing.T) {
	good, err := os.ReadFile(composePath)
	if err != nil {
		t.Fatal(err)
	}
	p, err := parseCompose(good)
	if err != nil {
		t.Fatalf("parseCompose(%s) = %v", composePath, err)
	}
	if len(p.Nodes) != 3 || p.Redis.Port == "" || !p.Gateway.IsValid() {
		t.Fatalf("parseCompose(%s) = %+v, want 3 nodes, a Redis port and a gateway", composePath, p)
	}
	tests := []struct {
		name     string
		from, to string // one replacement in the real file
		want     string
	}{
		{"the real file", "", "", ""},
		{"a node's data outside its volume", "--data-dir=/data\n      - --http-addr=0.0.0.0:8080\n      - --advertise-http-addr=10.77.0.12", "--data-dir=/var/lib/txlog\n      - --http-addr=0.0.0.0:8080\n      - --advertise-http-addr=10.77.0.12", "no volume's target"},
		{"a raft address not the node's", "--raft-addr=10.77.0.13:7101", "--raft-addr=10.77.0.99:7101", "want the service's address 10.77.0.13"},
		{"an advertised address not the node's", "--advertise-http-addr=10.77.0.11:8080", "--advertise-http-addr=10.77.0.12:8080", "advertised HTTP address"},
		{"a node without --cluster", "      - --cluster=n1=10.77.0.11:7101,n2=10.77.0.12:7101,n3=10.77.0.13:7101\n      - --redis-addr=10.77.0.10:6379\n    ports:\n      - \"127.0.0.1:8083:8080\"", "      - --redis-addr=10.77.0.10:6379\n    ports:\n      - \"127.0.0.1:8083:8080\"", "no --cluster="},
		{"a Redis address not the Redis service's", "--redis-addr=10.77.0.10:6379\n    ports:\n      - \"127.0.0.1:8081", "--redis-addr=10.77.0.9:6379\n    ports:\n      - \"127.0.0.1:8081", "different Redis addresses"},
		{"a service without an address", "ipv4_address: 10.77.0.12", "aliases: [n2]", "ipv4_address"},
		{"an address outside the subnet", "ipv4_address: 10.77.0.10", "ipv4_address: 10.78.0.10", "want one in 10.77.0.0/24"},
		{"a host name not the id", "hostname: n3", "hostname: node3", "want both n3"},
		{"not YAML", "services:", "services: [", "parse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := string(good)
			if tt.from != "" {
				if !strings.Contains(b, tt.from) {
					t.Fatalf("%s no longer contains %q: update the case", composePath, tt.from)
				}
				b = strings.Replace(b, tt.from, tt.to, 1)
			}
			_, err := parseCompose([]byte(b))
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("parseCompose() = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("parseCompose() = %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
	if _, err := parseCompose([]byte("services: {}\nnetworks: {a: {}, b: {}}\n")); err == nil {
		t.Fatal("parseCompose(two networks) = nil, want an error")
	}
}
