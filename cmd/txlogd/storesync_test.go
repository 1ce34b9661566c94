package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/api"
)

// TestUnsyncedStoreRecovers runs the cluster with --store-fsync=false and checks
// the recovery rule of node/storefile.go: after a process crash the store file is
// kept; after a machine crash (another boot ID) a torn store file is thrown away
// and rebuilt from the Raft log, so the node ends with exactly the committed state.
func TestUnsyncedStoreRecovers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bootFile := filepath.Join(t.TempDir(), "boot_id")
	if err := os.WriteFile(bootFile, []byte("boot-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := startClusterWith(t, "--store-fsync=false", "--boot-id-file="+bootFile)
	cl := api.NewClient(api.ClientConfig{Endpoints: c.HTTPAddrs()})
	var acks []ack
	submit := func(from, to int) {
		for i := from; i < to; i++ {
			key := fmt.Sprintf("us-%d", i)
			res, err := cl.Submit(ctx, api.TxRequest{IdempotencyKey: key, Ops: []api.Op{{Op: "put", Key: fmt.Sprintf("k/%d", i%7), Value: json.RawMessage(fmt.Sprint(i))}}}, api.SubmitOptions{})
			if err != nil {
				t.Fatalf("Submit(%s) = %v", key, err)
			}
			acks = append(acks, ack{key: key, res: res})
		}
	}
	submit(0, 100)

	leader := mustLeaderID(ctx, t, c)
	var victim string
	for _, p := range c.Nodes() {
		if p.ID() != leader {
			victim = p.ID()
			break
		}
	}
	p := c.Node(victim)

	// 1. Process crash, same boot: the store file is whole and kept.
	if err := c.Kill(victim); err != nil {
		t.Fatal(err)
	}
	submit(100, 150)
	if err := c.Restart(ctx, victim); err != nil {
		t.Fatal(err)
	}
	waitUntil(ctx, t, "the log line about the kept store", func() bool {
		return strings.Contains(p.LogTail(400), "store kept after a process crash")
	})

	// 2. Machine crash: another boot, and the store file torn (here: garbage).
	if err := c.Kill(victim); err != nil {
		t.Fatal(err)
	}
	submit(150, 200)
	if err := os.WriteFile(filepath.Join(p.DataDir(), "state.db"), []byte(strings.Repeat("torn page ", 1000)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bootFile, []byte("boot-2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(ctx, victim); err != nil {
		t.Fatal(err)
	}
	waitUntil(ctx, t, "the log line about the discarded store", func() bool {
		return strings.Contains(p.LogTail(400), "store discarded after a crash across a machine restart")
	})
	submit(200, 220)

	// Every node, the rebuilt one included, holds exactly the committed state.
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	upTo := lastIndex(ctx, t, c)
	logs := map[string][]api.LogEntry{}
	for _, n := range c.Nodes() {
		logs[n.ID()] = readLog(ctx, t, c.URL(n.ID()), upTo)
	}
	if err := checkCluster(acks, logs); err != nil {
		t.Fatal(err)
	}
	want := lastVersions(logs[leader])
	for k, v := range want {
		kv, err := cl.GetFrom(ctx, c.URL(victim), k, api.ReadOptions{Consistency: api.ConsistencyStale})
		if err != nil || kv.Version != v {
			t.Fatalf("stale read of %s on the rebuilt %s = %+v, %v; want version %d", k, victim, kv, err, v)
		}
	}
	if len(logs[victim]) != len(acks) {
		t.Fatalf("%s has %d log entries, want %d", victim, len(logs[victim]), len(acks))
	}

	// 3. A clean stop leaves the clean marker, and the next start keeps the file
	// whatever the boot.
	if err := c.Stop(ctx, victim); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(p.DataDir(), "state.clean")); err != nil {
		t.Fatalf("no clean marker after a clean stop: %v", err)
	}
}
