package main

import (
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/chaos"
)

// TestMembership joins a fourth node through --join, checks that it catches up
// with the log, removes it, and hands leadership to a chosen node.
func TestMembership(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := startCluster(t)
	cl := api.NewClient(api.ClientConfig{Endpoints: c.HTTPAddrs()})
	for i := range 20 {
		if _, err := cl.Submit(ctx, api.TxRequest{Ops: []api.Op{{Op: "put", Key: "m/" + strconv.Itoa(i), Value: json.RawMessage(`1`)}}}, api.SubmitOptions{}); err != nil {
			t.Fatalf("Submit() = %v", err)
		}
	}

	// Join n4 through a follower: the request is forwarded to the leader.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	raftAddr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	leader := mustLeaderID(ctx, t, c)
	via := c.URL(aFollower(c, leader))
	n4, err := chaos.NewProcess(chaos.ProcessConfig{
		ID: "n4", Bin: txlogdBin, DataDir: filepath.Join(dir, "n4"), LogDir: dir,
		Args: []string{"--id=n4", "--data-dir=" + filepath.Join(dir, "n4"), "--http-addr=127.0.0.1:0", "--raft-addr=" + raftAddr, "--join=" + via},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := n4.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- n4 log tail:\n%s", n4.LogTail(40))
		}
		n4.Kill()
	})
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
	kv, err := cl.GetFrom(ctx, n4URL, "m/19", api.ReadOptions{Consistency: api.ConsistencyStale})
	if err != nil || string(kv.Value) != "1" {
		t.Fatalf("stale read of m/19 on n4 = %+v, %v", kv, err)
	}

	// Remove it again (through any node).
	if err := cl.Remove(ctx, "n4"); err != nil {
		t.Fatalf("Remove(n4) = %v", err)
	}
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

	// Hand leadership to a chosen follower.
	leader = mustLeaderID(ctx, t, c)
	var target string
	for _, p := range c.Nodes() {
		if p.ID() != leader {
			target = p.ID()
		}
	}
	res, err := cl.TransferLeadership(ctx, api.TransferRequest{ID: target})
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
