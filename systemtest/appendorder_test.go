package systemtest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/launcher"
)

// TestMixedLeaderAppend runs a cluster in which n1 writes its Raft log before
// sending new entries (--raft-serial-append, hashicorp/raft's order) and n2 and
// n3 while sending them (the default, txlog's raft patch). Under a steady load
// through all three nodes, leadership goes to n1, then to n2, and then n2 is
// killed and restarted. Every acknowledged write must be in every node's log
// exactly once, and the logs must be the same.
func TestMixedLeaderAppend(t *testing.T) {
	c := startClusterConfig(t, launcher.ClusterConfig{
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
	load := startPutLoad(ctx, t, urls, 8)
	committedSince := load.committedSince
	admin := client.NewClient(client.ClientConfig{Endpoints: urls})
	lead := func(id string) {
		t.Helper()
		if mustLeaderID(ctx, t, c) != id {
			res, err := admin.TransferLeadership(ctx, wire.TransferRequest{ID: id})
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
	results := load.stop()

	checkSettled(ctx, t, c, results)
	t.Logf("%d writes; n1 (serial) and n2 (parallel) led, then %s after n2 was killed", len(results), newLeader)
}

// putLoad is a steady stream of blind puts through every node, each client
// going to the nodes in turn from its own first one, keeping each answer,
// until stop; the rolling tests restart and replace members under it.
type putLoad struct {
	t       *testing.T
	ctx     context.Context
	next    atomic.Int64
	halt    atomic.Bool
	mu      sync.Mutex
	results []ack
	wg      sync.WaitGroup
}

// startPutLoad starts clients writers against urls.
func startPutLoad(ctx context.Context, t *testing.T, urls []string, clients int) *putLoad {
	l := &putLoad{t: t, ctx: ctx}
	for w := range clients {
		eps := append(append([]string(nil), urls[w%len(urls):]...), urls[:w%len(urls)]...)
		cl := client.NewClient(client.ClientConfig{Endpoints: eps, Timeout: 20 * time.Second})
		l.wg.Go(func() {
			for !l.halt.Load() && ctx.Err() == nil {
				a := blindPut(ctx, cl, l.next.Add(1))
				l.mu.Lock()
				l.results = append(l.results, a)
				l.mu.Unlock()
			}
		})
	}
	return l
}

// committedSince waits until n more writes were answered.
func (l *putLoad) committedSince(n int) {
	l.t.Helper()
	l.mu.Lock()
	from := len(l.results)
	l.mu.Unlock()
	waitUntil(l.ctx, l.t, "writes under load", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.results) >= from+n
	})
}

// committed counts the writes answered committed so far.
func (l *putLoad) committed() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return committedAcks(l.results)
}

// more waits for 20 more writes to commit after the step named after.
func (l *putLoad) more(after string) {
	l.t.Helper()
	from := l.committed()
	waitUntil(l.ctx, l.t, "writes to commit after "+after, func() bool { return l.committed() >= from+20 })
}

// stop stops the writers and returns every write's result.
func (l *putLoad) stop() []ack {
	l.halt.Store(true)
	l.wg.Wait()
	return l.results
}
