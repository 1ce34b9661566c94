package launcher

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func startFakeCluster(t *testing.T, ctx context.Context, cfg ClusterConfig) *Cluster {
	t.Helper()
	if cfg.Bin == "" {
		cfg.Bin = fakeBin
	}
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	c, err := StartCluster(ctx, cfg)
	if err != nil {
		t.Fatalf("StartCluster: %v", err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// failWithLogs reports err together with the tail of every node's log.
func failWithLogs(t *testing.T, c *Cluster, format string, args ...any) {
	t.Helper()
	var b strings.Builder
	for _, p := range c.Nodes() {
		b.WriteString("--- " + p.ID() + " ---\n" + p.LogTail(20) + "\n")
	}
	t.Fatalf(format+"\n%s", append(args, b.String())...)
}

func wantLeader(t *testing.T, ctx context.Context, c *Cluster, want string) {
	t.Helper()
	got, err := c.Leader(ctx)
	if err != nil {
		failWithLogs(t, c, "Leader() = %v", err)
	}
	if got != want {
		t.Fatalf("Leader() = %s, want %s", got, want)
	}
}

func TestCluster(t *testing.T) {
	ctx := testCtx(t, 60*time.Second)
	c := startFakeCluster(t, ctx, ClusterConfig{})

	if got := len(c.Nodes()); got != DefaultNodes {
		t.Fatalf("len(Nodes()) = %d, want %d", got, DefaultNodes)
	}
	urls := c.HTTPAddrs()
	if len(urls) != 3 || !strings.HasPrefix(urls[0], "http://127.0.0.1:") {
		t.Fatalf("HTTPAddrs() = %v, want 3 loopback URLs", urls)
	}
	for _, p := range c.Nodes() {
		if c.RaftAddr(p.ID()) == "" {
			t.Fatalf("RaftAddr(%s) is empty", p.ID())
		}
		if p.DataDir() != filepath.Join(c.Dir(), p.ID()) || p.LogPath() != filepath.Join(c.Dir(), p.ID()+".log") {
			t.Fatalf("%s: data dir %s, log %s; want them under %s", p.ID(), p.DataDir(), p.LogPath(), c.Dir())
		}
	}
	if err := c.WaitReady(ctx); err != nil {
		failWithLogs(t, c, "WaitReady() = %v", err)
	}
	wantLeader(t, ctx, c, "n1")

	// Killing the leader moves leadership; the fake picks the first reachable member.
	if err := c.Kill("n1"); err != nil {
		t.Fatalf("Kill(n1) = %v", err)
	}
	wantLeader(t, ctx, c, "n2")

	oldURL := c.URL("n1")
	if err := c.Restart(ctx, "n1"); err != nil {
		t.Fatalf("Restart(n1) = %v", err)
	}
	wantLeader(t, ctx, c, "n1")
	if c.URL("n1") == oldURL {
		t.Fatalf("URL(n1) = %s after restart on port 0, want a new port", oldURL)
	}
	// The restarted node kept its data dir: the fake counts its starts there.
	s, err := c.status(ctx, "n1")
	if err != nil {
		t.Fatal(err)
	}
	if s.Term != 2 {
		t.Fatalf("n1 term (starts on its data dir) = %d, want 2", s.Term)
	}

	// A paused node is left out of the agreement rather than stalling it.
	if err := c.Pause("n2"); err != nil {
		t.Fatalf("Pause(n2) = %v", err)
	}
	wantLeader(t, ctx, c, "n1")
	if err := c.Resume("n2"); err != nil {
		t.Fatalf("Resume(n2) = %v", err)
	}

	// Restart of a running node stops it gracefully first.
	if err := c.Restart(ctx, "n3"); err != nil {
		t.Fatalf("Restart(n3) = %v", err)
	}
	if tail := c.Node("n3").LogTail(10); !strings.Contains(tail, "shutting down") {
		t.Fatalf("n3 log:\n%s\nwant a graceful shutdown before the restart", tail)
	}
	if err := c.Stop(ctx, "n3"); err != nil {
		t.Fatalf("Stop(n3) = %v", err)
	}
	if c.Node("n3").Running() {
		t.Fatal("n3 runs after Stop")
	}
	if err := c.Kill("n9"); err == nil {
		t.Fatal("Kill(n9) = nil, want an unknown-node error")
	}

	if err := c.Close(ctx); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if err := c.Close(ctx); err != nil {
		t.Fatalf("second Close() = %v", err)
	}
	for _, p := range c.Nodes() {
		if p.Running() {
			t.Fatalf("%s runs after Close", p.ID())
		}
	}
	if err := c.Restart(ctx, "n1"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Restart() after Close = %v, want ErrClosed", err)
	}
}

func TestClusterCloseStopsLeaderLast(t *testing.T) {
	ctx := testCtx(t, 60*time.Second)
	c := startFakeCluster(t, ctx, ClusterConfig{Nodes: 3})
	wantLeader(t, ctx, c, "n1")

	// Record the order in which the nodes exit.
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	for _, p := range c.Nodes() {
		wg.Go(func() {
			p.Wait(ctx)
			mu.Lock()
			order = append(order, p.ID())
			mu.Unlock()
		})
	}
	if err := c.Close(ctx); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	wg.Wait()
	if len(order) != 3 || order[2] != "n1" {
		t.Fatalf("exit order %v, want the leader n1 last", order)
	}
}

func TestClusterCloseKillsStragglers(t *testing.T) {
	ctx := testCtx(t, 60*time.Second)
	c := startFakeCluster(t, ctx, ClusterConfig{Nodes: 2, Env: []string{"FAKENODE_IGNORE_TERM=1"}, StopTimeout: 100 * time.Millisecond})
	err := c.Close(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close() = %v, want the stop timeouts reported", err)
	}
	for _, p := range c.Nodes() {
		if p.Running() {
			t.Fatalf("%s runs after Close", p.ID())
		}
	}
}

func TestClusterFixedPorts(t *testing.T) {
	ctx := testCtx(t, 60*time.Second)
	hp, err := FreePorts(loopback, 2)
	if err != nil {
		t.Fatal(err)
	}
	c := startFakeCluster(t, ctx, ClusterConfig{Nodes: 1, HTTPBasePort: hp[0], RaftBasePort: hp[1]})
	if got, want := c.URL("n1"), "http://127.0.0.1:"+strconv.Itoa(hp[0]); got != want {
		t.Fatalf("URL(n1) = %s, want %s", got, want)
	}
	if got, want := c.RaftAddr("n1"), "127.0.0.1:"+strconv.Itoa(hp[1]); got != want {
		t.Fatalf("RaftAddr(n1) = %s, want %s", got, want)
	}
	wantLeader(t, ctx, c, "n1")
}

// TestClusterPrivateHostRestart: a node killed on fixed ports comes back on
// them although another program bound the same port on 127.0.0.1 while it was
// down, when the cluster has an address of its own; on 127.0.0.1 the same
// restart fails, which is how a chaos run lost a node in CI.
func TestClusterPrivateHostRestart(t *testing.T) {
	host := PrivateLoopback()
	if host == loopback {
		if runtime.GOOS == "linux" {
			t.Fatalf("PrivateLoopback() = %s on Linux, want another 127/8 address", host)
		}
		t.Skipf("only %s can be bound here", loopback)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		t.Fatalf("PrivateLoopback() = %q, want a loopback address", host)
	}
	for _, tc := range []struct {
		host   string
		wantOK bool
	}{{host, true}, {loopback, false}} {
		t.Run(tc.host, func(t *testing.T) {
			ctx := testCtx(t, 60*time.Second)
			hp, err := FreeRange(tc.host, 1)
			if err != nil {
				t.Fatal(err)
			}
			c := startFakeCluster(t, ctx, ClusterConfig{Nodes: 1, Host: tc.host, HTTPBasePort: hp})
			url := "http://" + net.JoinHostPort(tc.host, strconv.Itoa(hp))
			if got := c.URL("n1"); got != url {
				t.Fatalf("URL(n1) = %s, want %s", got, url)
			}
			if h, _, _ := net.SplitHostPort(c.RaftAddr("n1")); h != tc.host {
				t.Fatalf("RaftAddr(n1) = %s, want host %s", c.RaftAddr("n1"), tc.host)
			}
			if err := c.Kill("n1"); err != nil {
				t.Fatal(err)
			}
			// Another program takes the port on 127.0.0.1 while n1 is down.
			squat, err := net.Listen("tcp", net.JoinHostPort(loopback, strconv.Itoa(hp)))
			if err != nil {
				t.Fatalf("bind the killed node's port on %s: %v", loopback, err)
			}
			defer squat.Close()
			err = c.Restart(ctx, "n1")
			if !tc.wantOK {
				if err == nil {
					t.Fatalf("Restart(n1) on %s with its port taken = nil, want an error", tc.host)
				}
				return
			}
			if err != nil {
				t.Fatalf("Restart(n1) = %v", err)
			}
			if got := c.URL("n1"); got != url {
				t.Fatalf("URL(n1) after restart = %s, want %s", got, url)
			}
			wantLeader(t, ctx, c, "n1")
		})
	}
}

// TestFreeRange: the ports are consecutive, free on the host and below the
// ephemeral range.
func TestFreeRange(t *testing.T) {
	lo, hi, ok := belowEphemeral()
	base, err := FreeRange(loopback, 3)
	if err != nil {
		t.Fatal(err)
	}
	if ok && (base < lo || base+3 > hi) {
		t.Fatalf("FreeRange = %d..%d, want within [%d, %d)", base, base+2, lo, hi)
	}
	for p := base; p < base+3; p++ {
		l, err := net.Listen("tcp", net.JoinHostPort(loopback, strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d of the range not free: %v", p, err)
		}
		l.Close()
	}
}

// TestFreePortsExclude: no excluded port is handed out, even when nearly every
// port below the ephemeral range is excluded.
func TestFreePortsExclude(t *testing.T) {
	lo, hi, ok := belowEphemeral()
	if !ok {
		lo, hi = 10000, 32768
	}
	var exclude []int
	for p := lo; p < hi; p++ {
		if p < lo+100 || p >= lo+120 {
			exclude = append(exclude, p)
		}
	}
	ps, err := FreePorts(loopback, 5, exclude...)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 5 {
		t.Fatalf("FreePorts = %v, want 5 ports", ps)
	}
	for _, p := range ps {
		if slices.Contains(exclude, p) {
			t.Fatalf("FreePorts = %v: %d is excluded", ps, p)
		}
	}
}

func TestClusterNodeArgs(t *testing.T) {
	ctx := testCtx(t, 60*time.Second)
	var mu sync.Mutex
	seen := map[string]map[string]string{}
	c := startFakeCluster(t, ctx, ClusterConfig{NodeArgs: func(id string, raftAddrs map[string]string) ([]string, error) {
		mu.Lock()
		defer mu.Unlock()
		seen[id] = raftAddrs
		return []string{"--raft-dial=" + id}, nil
	}})
	for _, p := range c.Nodes() {
		if got := len(seen[p.ID()]); got != 3 {
			t.Fatalf("NodeArgs(%s) saw %d Raft addresses, want 3", p.ID(), got)
		}
		if seen[p.ID()]["n2"] != c.RaftAddr("n2") {
			t.Fatalf("NodeArgs(%s) saw n2 at %s, want %s", p.ID(), seen[p.ID()]["n2"], c.RaftAddr("n2"))
		}
		if args := p.Args(); args[len(args)-1] != "--raft-dial="+p.ID() {
			t.Fatalf("%s args %v, want NodeArgs' flag last", p.ID(), args)
		}
	}
	wantLeader(t, ctx, c, "n1")

	_, err := StartCluster(ctx, ClusterConfig{Bin: fakeBin, Dir: t.TempDir(), NodeArgs: func(string, map[string]string) ([]string, error) {
		return nil, errors.New("no proxy")
	}})
	if err == nil || !strings.Contains(err.Error(), "no proxy") {
		t.Fatalf("StartCluster() with a failing NodeArgs = %v", err)
	}
}

func TestClusterStartFailure(t *testing.T) {
	ctx := testCtx(t, 60*time.Second)
	dir := t.TempDir()
	_, err := StartCluster(ctx, ClusterConfig{Bin: fakeBin, Dir: dir, Env: []string{"FAKENODE_EXIT=2"}})
	if err == nil || !strings.Contains(err.Error(), "exiting on request") {
		t.Fatalf("StartCluster() = %v, want an error quoting the node's log", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "n1.log")); err != nil {
		t.Fatalf("log file: %v", err)
	}
}

func TestClusterConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     ClusterConfig
		wantErr []string
	}{
		{"ok", ClusterConfig{Bin: "b", Dir: "d"}, nil},
		{"fixed ports", ClusterConfig{Bin: "b", Dir: "d", HTTPBasePort: 8081, RaftBasePort: 7101}, nil},
		{"missing", ClusterConfig{}, []string{"Bin is required", "Dir is required"}},
		{"too many nodes", ClusterConfig{Bin: "b", Dir: "d", Nodes: 101}, []string{"Nodes 101"}},
		{"port overflow", ClusterConfig{Bin: "b", Dir: "d", HTTPBasePort: 65535}, []string{"HTTPBasePort 65535"}},
		{"negative port", ClusterConfig{Bin: "b", Dir: "d", RaftBasePort: -1}, []string{"RaftBasePort -1"}},
		{"overlap", ClusterConfig{Bin: "b", Dir: "d", HTTPBasePort: 7000, RaftBasePort: 7002}, []string{"overlap"}},
		{"private host", ClusterConfig{Bin: "b", Dir: "d", Host: "127.31.2.9"}, nil},
		{"host not loopback", ClusterConfig{Bin: "b", Dir: "d", Host: "10.0.0.1"}, []string{`Host "10.0.0.1"`}},
		{"host a name", ClusterConfig{Bin: "b", Dir: "d", Host: "localhost"}, []string{`Host "localhost"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.withDefaults().Validate()
			if (err == nil) != (len(tt.wantErr) == 0) {
				t.Fatalf("Validate() = %v, want errors %v", err, tt.wantErr)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %v, want it to mention %q", err, w)
				}
			}
		})
	}
}

// TestFreePortsBelowEphemeral: the reserved ports are distinct, free to bind,
// and outside the kernel's ephemeral range, where binds to port 0 and outgoing
// connections could take them before the node binds.
func TestFreePortsBelowEphemeral(t *testing.T) {
	lo, hi, ok := belowEphemeral()
	ps, err := FreePorts(loopback, 20)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ps {
		if seen[p] {
			t.Errorf("port %d reserved twice in %v", p, ps)
		}
		seen[p] = true
		if ok && (p < lo || p >= hi) {
			t.Errorf("port %d outside [%d, %d), below the ephemeral range", p, lo, hi)
		}
		l, err := net.Listen("tcp", net.JoinHostPort(loopback, strconv.Itoa(p)))
		if err != nil {
			t.Errorf("port %d not free after FreePorts: %v", p, err)
			continue
		}
		l.Close()
	}
	if !ok {
		t.Logf("no ephemeral range known here: the kernel picked the ports")
	}
}

// TestPollKeepsErrorBeforeDeadline: when the last call of f fails only because
// ctx ended, Poll reports the failure before it.
func TestPollKeepsErrorBeforeDeadline(t *testing.T) {
	errFirst := errors.New("n1: answered as n2")
	ctx := testCtx(t, 100*time.Millisecond)
	calls := 0
	err := Poll(ctx, time.Millisecond, func(ctx context.Context) error {
		calls++
		if calls == 1 {
			return errFirst
		}
		<-ctx.Done()
		return fmt.Errorf("n1: %w", ctx.Err())
	})
	if !errors.Is(err, errFirst) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Poll() = %v, want the deadline and the first call's error", err)
	}
}

// TestClusterWaitReadyChecksNodeID: WaitReady and Leader do not take the
// answers of another process at a node's URL for the node's.
func TestClusterWaitReadyChecksNodeID(t *testing.T) {
	ctx := testCtx(t, 30*time.Second)
	c := startFakeCluster(t, ctx, ClusterConfig{})
	if err := c.WaitReady(ctx); err != nil {
		failWithLogs(t, c, "WaitReady() = %v", err)
	}
	url := c.URL("n1")
	foreign := httptest.NewServer(noIDServer)
	t.Cleanup(foreign.Close)
	c.setURL("n1", strings.TrimPrefix(foreign.URL, "http://"))

	if err := c.WaitReady(testCtx(t, time.Second)); !isWrongNode(err) || !strings.Contains(err.Error(), `n1: answered as ""`) {
		t.Errorf("WaitReady() with a foreign server at n1 = %v, want n1 answered as \"\"", err)
	}
	if _, err := c.Leader(testCtx(t, time.Second)); !isWrongNode(err) {
		t.Errorf("Leader() with a foreign server at n1 = %v, want a wrongNodeError", err)
	}

	c.setURL("n1", strings.TrimPrefix(url, "http://"))
	if err := c.WaitReady(ctx); err != nil {
		failWithLogs(t, c, "WaitReady() with n1 back = %v", err)
	}
}

// noIDServer is a process that is no txlog node but answers every GET with 200
// and an empty JSON object, /readyz included.
var noIDServer = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte("{}"))
})

func isWrongNode(err error) bool {
	_, ok := errors.AsType[*WrongNodeError](err)
	return ok
}
