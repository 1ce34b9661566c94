package main

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/chaos"
)

// TestMixedLeaderAppend runs a cluster in which n1 writes its Raft log before
// sending new entries (--raft-serial-append, hashicorp/raft's order) and n2 and
// n3 while sending them (the default, txlog's raft patch). Under a steady load
// through all three nodes, leadership goes to n1, then to n2, and then n2 is
// killed and restarted. Every acknowledged write must be in every node's log
// exactly once, and the logs must be the same.
func TestMixedLeaderAppend(t *testing.T) {
	c := startClusterConfig(t, chaos.ClusterConfig{
		NodeArgs: func(id string, _ map[string]string) ([]string, error) {
			if id == "n1" {
				return []string{"--raft-serial-append"}, nil
			}
			return nil, nil
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	urls := c.HTTPAddrs()

	var (
		next    atomic.Int64
		stop    atomic.Bool
		mu      sync.Mutex
		results []ack
		wg      sync.WaitGroup
	)
	for w := range 8 {
		eps := append(append([]string(nil), urls[w%3:]...), urls[:w%3]...)
		cl := api.NewClient(api.ClientConfig{Endpoints: eps, Timeout: 20 * time.Second})
		wg.Go(func() {
			for !stop.Load() && ctx.Err() == nil {
				a := blindPut(ctx, cl, next.Add(1))
				mu.Lock()
				results = append(results, a)
				mu.Unlock()
			}
		})
	}
	// committedSince waits until n more writes were answered.
	committedSince := func(n int) {
		t.Helper()
		mu.Lock()
		from := len(results)
		mu.Unlock()
		waitUntil(ctx, t, "writes under load", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(results) >= from+n
		})
	}
	admin := api.NewClient(api.ClientConfig{Endpoints: urls})
	lead := func(id string) {
		t.Helper()
		if mustLeaderID(ctx, t, c) != id {
			res, err := admin.TransferLeadership(ctx, api.TransferRequest{ID: id})
			if err != nil || res.LeaderID != id {
				t.Fatalf("TransferLeadership(%s) = %+v, %v", id, res, err)
			}
		}
		committedSince(300)
	}

	committedSince(100)
	lead("n1") // serial
	lead("n2") // parallel
	if err := c.Kill("n2"); err != nil {
		t.Fatalf("Kill(n2) = %v", err)
	}
	newLeader := mustLeaderID(ctx, t, c)
	committedSince(300)
	if err := c.Restart(ctx, "n2"); err != nil {
		t.Fatalf("Restart(n2) = %v", err)
	}
	committedSince(100)
	stop.Store(true)
	wg.Wait()

	checkSettled(ctx, t, c, results)
	t.Logf("%d writes; n1 (serial) and n2 (parallel) led, then %s after n2 was killed", len(results), newLeader)
}
