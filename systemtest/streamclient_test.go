package systemtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/launcher"
)

// streamLoad is many goroutines writing through one client.Client, over its
// write streams (the default), until stopped: each write a blind put with an
// idempotency key of its own, answered once.
type streamLoad struct {
	cl   *client.Client
	stop chan struct{}
	wg   sync.WaitGroup
	seq  atomic.Int64
	mu   sync.Mutex
	acks []ack
	errs int
}

func startStreamLoad(cl *client.Client, writers int) *streamLoad {
	l := &streamLoad{cl: cl, stop: make(chan struct{})}
	for range writers {
		l.wg.Go(func() {
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				n := l.seq.Add(1)
				key := fmt.Sprintf("sc-%d", n)
				tx := wire.TxRequest{IdempotencyKey: key, Ops: []wire.Op{{Op: "put", Key: fmt.Sprintf("sk/%d", n), Value: json.RawMessage(fmt.Sprint(n))}}}
				ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
				res, err := cl.Submit(ctx, tx, wire.SubmitOptions{Timeout: 2 * time.Second})
				cancel()
				l.mu.Lock()
				l.acks = append(l.acks, ack{key: key, res: res, err: err})
				if err != nil {
					l.errs++
				}
				l.mu.Unlock()
			}
		})
	}
	return l
}

// committed returns the number of writes answered committed so far.
func (l *streamLoad) committed() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return committedAcks(l.acks)
}

// waitCommitted polls until n more writes than now were committed.
func (l *streamLoad) waitCommitted(ctx context.Context, t *testing.T, more int, what string) {
	t.Helper()
	want := l.committed() + more
	for l.committed() < want {
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %d writes committed, want %d: %v", what, l.committed(), want, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (l *streamLoad) halt() []ack {
	close(l.stop)
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.acks
}

// checkAnsweredOnce fails when an idempotency key was answered more than once
// (each writer answers each of its keys once) and logs the tally.
func checkAnsweredOnce(t *testing.T, acks []ack) {
	t.Helper()
	seen := map[string]bool{}
	tally := map[string]int{}
	for _, a := range acks {
		if seen[a.key] {
			t.Errorf("write %s answered twice", a.key)
		}
		seen[a.key] = true
		if a.err != nil {
			tally["error"]++
		} else {
			tally[a.res.Status]++
		}
	}
	t.Logf("%d writes: %v", len(acks), tally)
}

// streamRequests sums txlog_client_stream_requests_total{result=committed}
// over the nodes that answer.
func streamRequests(ctx context.Context, t *testing.T, c *launcher.Cluster) float64 {
	t.Helper()
	var sum float64
	for _, p := range c.Nodes() {
		if !p.Running() || p.Paused() {
			continue
		}
		v, _ := scrapeMetrics(ctx, t, c.URL(p.ID())+"/metrics").value("txlog_client_stream_requests_total", "result=committed")
		sum += v
	}
	return sum
}

// testStreamClientFault writes from 32 goroutines through one client.Client
// over its streams while fault hits the leader, then checks with the chaos
// checkers that every write was answered once, every 202 resolved and
// nothing was lost or doubled, and that the writes went over the streams.
func testStreamClientFault(t *testing.T, fault func(ctx context.Context, t *testing.T, c *launcher.Cluster, leader string, l *streamLoad)) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c := startCluster(t)
	cl := client.NewClient(client.ClientConfig{Endpoints: c.HTTPAddrs(), MaxBackoff: 200 * time.Millisecond})
	defer cl.Close()
	l := startStreamLoad(cl, 32)
	l.waitCommitted(ctx, t, 200, "before the fault")
	leader := mustLeaderID(ctx, t, c)
	fault(ctx, t, c, leader, l)
	l.waitCommitted(ctx, t, 200, "after the fault")
	acks := l.halt()
	checkAnsweredOnce(t, acks)
	checkSettled(ctx, t, c, acks)
	if n := streamRequests(ctx, t, c); n == 0 {
		t.Errorf("txlog_client_stream_requests_total{result=committed} = 0 on every node: want the writes over the streams")
	}
}

// TestStreamClientLeaderKill SIGKILLs the leader under a stream load: the
// writes in flight on its stream are resolved by lookups (same txid, same
// idempotency key) and go on through the next leader.
func TestStreamClientLeaderKill(t *testing.T) {
	testStreamClientFault(t, func(ctx context.Context, t *testing.T, c *launcher.Cluster, leader string, l *streamLoad) {
		if err := c.Kill(leader); err != nil {
			t.Fatal(err)
		}
		next, err := c.Leader(ctx)
		if err != nil {
			t.Fatalf("Leader() after the kill: %v", err)
		}
		t.Logf("killed %s; %s leads", leader, next)
		l.waitCommitted(ctx, t, 100, "while "+leader+" is down")
		if err := c.Restart(ctx, leader); err != nil {
			t.Fatal(err)
		}
	})
}

// TestStreamClientLeaderPause SIGSTOPs the leader under a stream load, long
// enough for an election, then SIGCONTs it: the client takes the paused
// leader's stream for dead when its pings go unanswered, and the writes go on
// through the next leader.
func TestStreamClientLeaderPause(t *testing.T) {
	testStreamClientFault(t, func(ctx context.Context, t *testing.T, c *launcher.Cluster, leader string, l *streamLoad) {
		p := c.Node(leader)
		if err := p.Pause(); err != nil {
			t.Fatal(err)
		}
		l.waitCommitted(ctx, t, 200, "while "+leader+" is paused")
		if err := p.Resume(); err != nil {
			t.Fatal(err)
		}
		t.Logf("paused %s until %d writes more committed", leader, 200)
	})
}

// TestStreamClientSecure writes over the stream to a cluster with TLS on
// its client ports and an auth file: the token and the CA of the Client's
// http.Client carry over to the stream, and a wrong token is refused with
// unauthenticated, not retried.
func TestStreamClientSecure(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := startClusterConfig(t, launcher.ClusterConfig{Secure: &launcher.SecureConfig{}})
	sec := c.Security()
	cl := client.NewClient(client.ClientConfig{Endpoints: c.HTTPAddrs(), TLS: sec.TLSConfig(), Token: sec.AdminToken})
	defer cl.Close()
	if _, err := c.Leader(ctx); err != nil {
		t.Fatalf("Leader() = %v", err)
	}
	l := startStreamLoad(cl, 16)
	l.waitCommitted(ctx, t, 100, "over TLS")
	acks := l.halt()
	checkAnsweredOnce(t, acks)
	checkSettledSecure(ctx, t, c, cl, acks)

	bad := client.NewClient(client.ClientConfig{Endpoints: c.HTTPAddrs(), TLS: sec.TLSConfig(), Token: "not-a-token"})
	defer bad.Close()
	_, err := bad.Submit(ctx, wire.TxRequest{Ops: []wire.Op{{Op: "put", Key: "x", Value: json.RawMessage("1")}}}, wire.SubmitOptions{})
	if e, ok := errors.AsType[*wire.Error](err); !ok || e.Code != wire.CodeUnauthenticated {
		t.Fatalf("Submit() with a wrong token = %v, want unauthenticated", err)
	}
}

// checkSettledSecure is checkSettled for a secured cluster: it reads every
// node's log with the TLS and token of cfg's Client.
func checkSettledSecure(ctx context.Context, t *testing.T, c *launcher.Cluster, cl *client.Client, results []ack) {
	t.Helper()
	var upTo uint64
	for _, base := range c.HTTPAddrs() {
		st, err := cl.ClusterFrom(ctx, base)
		if err != nil {
			t.Fatalf("ClusterFrom(%s) = %v", base, err)
		}
		upTo = max(upTo, st.CommitIndex)
	}
	sec := c.Security()
	logs := map[string][]wire.LogEntry{}
	for _, p := range c.Nodes() {
		base := c.URL(p.ID())
		one := client.NewClient(client.ClientConfig{Endpoints: []string{base}, TLS: sec.TLSConfig(), Token: sec.AdminToken})
		for {
			st, err := one.ClusterFrom(ctx, base)
			if err == nil && st.AppliedIndex >= upTo {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%s did not apply up to %d: %+v, %v", base, upTo, st, err)
			case <-time.After(20 * time.Millisecond):
			}
		}
		for from := uint64(1); ; {
			page, err := one.Log(ctx, from, 1000)
			if err != nil {
				t.Fatalf("Log(%s, %d) = %v", base, from, err)
			}
			logs[p.ID()] = append(logs[p.ID()], page.Entries...)
			if len(page.Entries) == 0 || page.Next <= from {
				break
			}
			from = page.Next
		}
	}
	if err := checkCluster(results, logs); err != nil {
		t.Fatal(err)
	}
}

// TestStreamClientFlowControl writes from 64 goroutines through one
// client.Client to nodes that take 4 requests in flight per stream: the
// requests past the bound are answered 429 stream_full and sent again after
// a pause, each write is answered once, and nothing is lost or doubled.
func TestStreamClientFlowControl(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := startClusterWith(t, "--client-stream-inflight=4")
	leader := mustLeaderID(ctx, t, c)
	cl := client.NewClient(client.ClientConfig{Endpoints: c.HTTPAddrs(), MaxBackoff: 50 * time.Millisecond})
	defer cl.Close()
	l := startStreamLoad(cl, 64)
	l.waitCommitted(ctx, t, 500, "at the bound")
	acks := l.halt()
	checkAnsweredOnce(t, acks)
	if l.errs > 0 {
		t.Errorf("%d writes failed, want none: stream_full is retried", l.errs)
	}
	full := scrapeMetrics(ctx, t, c.URL(leader)+"/metrics").must(t, "txlog_client_stream_requests_total", "result=stream_full")
	t.Logf("%v requests answered stream_full on %s", full, leader)
	if full == 0 {
		t.Errorf("no request answered stream_full: the bound of 4 was never reached by 64 writers")
	}
	checkSettled(ctx, t, c, acks)
}
