package systemtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/launcher"
	"github.com/txlog/txlog/node/parking/redistest"
	"github.com/txlog/txlog/txid"
)

// load is a set of clients that submit transactions without pause, half with
// ack=quorum and half with ack=accepted, through all nodes, until stopped.
type load struct {
	c      *launcher.Cluster
	stop   chan struct{}
	wg     sync.WaitGroup
	seq    atomic.Int64
	mu     sync.Mutex
	acks   []ack
	counts map[int]int // HTTP-level outcome → count: 200, 202, 409, 0 (error)
}

func startLoad(c *launcher.Cluster, clients int) *load {
	l := &load{c: c, stop: make(chan struct{}), counts: map[int]int{}}
	urls := c.HTTPAddrs()
	for w := range clients {
		eps := append(append([]string(nil), urls[w%len(urls):]...), urls[:w%len(urls)]...)
		cl := client.NewClient(client.ClientConfig{Endpoints: eps, Timeout: 5 * time.Second, MaxBackoff: 200 * time.Millisecond})
		ackLevel := wire.AckQuorum
		if w%2 == 1 {
			ackLevel = wire.AckAccepted
		}
		l.wg.Go(func() {
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				n := l.seq.Add(1)
				key := fmt.Sprintf("fo-%d", n)
				tx := wire.TxRequest{IdempotencyKey: key, Ops: []wire.Op{{Op: "put", Key: fmt.Sprintf("fk/%d", n%50), Value: json.RawMessage(fmt.Sprintf(`{"n":%d}`, n))}}}
				ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
				res, err := cl.Submit(ctx, tx, wire.SubmitOptions{Timeout: time.Second, Ack: ackLevel})
				cancel()
				l.record(ack{key: key, res: res, err: err})
			}
		})
	}
	return l
}

// firstAfter waits up to 10 s for the load's first 200 and first 202 answered
// after t, and returns how long after t each came (-1 when none came).
func (l *load) firstAfter(ctx context.Context, t time.Time) (ok, pending time.Duration) {
	ok, pending = -1, -1
	deadline := time.Now().Add(10 * time.Second)
	for (ok < 0 || pending < 0) && time.Now().Before(deadline) && ctx.Err() == nil {
		for _, a := range l.snapshot() {
			if a.err != nil || !a.at.After(t) {
				continue
			}
			d := a.at.Sub(t)
			switch a.res.Status {
			case wire.StatusCommitted, wire.StatusRejected:
				if ok < 0 || d < ok {
					ok = d
				}
			case wire.StatusPending:
				if (pending < 0 || d < pending) && a.res.Durability == wire.AckAccepted {
					pending = d
				}
			}
		}
		select { // poll with a deadline
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
	return ok, pending
}

// tally returns a copy of the outcome counts.
func (l *load) tally() map[int]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := make(map[int]int, len(l.counts))
	for k, v := range l.counts {
		m[k] = v
	}
	return m
}

func (l *load) record(a ack) {
	a.at = time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.acks = append(l.acks, a)
	switch {
	case a.err != nil:
		l.counts[0]++
	case a.res.Status == wire.StatusPending:
		l.counts[202]++
	case a.res.Status == wire.StatusRejected:
		l.counts[409]++
	default:
		l.counts[200]++
	}
}

// pendingSince returns the txids answered 202 from position from on.
func (l *load) snapshot() []ack {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]ack(nil), l.acks...)
}

func (l *load) halt() []ack {
	close(l.stop)
	l.wg.Wait()
	return l.snapshot()
}

// waitResolved polls until every given 202 has resolved, through any live node.
func waitResolved(ctx context.Context, t *testing.T, c *launcher.Cluster, ids []txid.ID) map[txid.ID]wire.TxResult {
	t.Helper()
	cl := client.NewClient(client.ClientConfig{Endpoints: c.HTTPAddrs(), MaxBackoff: 100 * time.Millisecond})
	out := make(map[txid.ID]wire.TxResult, len(ids))
	for _, id := range ids {
		for {
			res, err := cl.Tx(ctx, id, 2*time.Second)
			if err == nil && (res.Status == wire.StatusCommitted || res.Status == wire.StatusRejected) {
				out[id] = res
				break
			}
			if ctx.Err() != nil {
				for _, p := range c.Nodes() {
					st, err := cl.ClusterFrom(context.Background(), c.URL(p.ID()))
					t.Logf("%s: %+v %v", p.ID(), st.Extra, err)
				}
				t.Fatalf("txid %s (node %d, answered 202) not resolved in time: %+v, %v", id, id.Node(), res, err)
			}
		}
	}
	return out
}

// pendingIDs returns the txids of the acks answered 202.
func pendingIDs(acks []ack) []txid.ID {
	var ids []txid.ID
	for _, a := range acks {
		if a.err == nil && a.res.Status == wire.StatusPending {
			ids = append(ids, a.res.TxID)
		}
	}
	return ids
}

// TestFailoverLosesNothing is the failover issue's acceptance test: a cluster with
// a real Redis under continuous load survives three leader kills in a row, a loss
// of quorum, the death of a node holding parked writes (Redis carries them), and
// a Redis outage during a failover (the WALs carry them). Every 200 and 202
// resolves exactly once, and the logs of all nodes are identical.
func TestFailoverLosesNothing(t *testing.T) {
	redis := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := startClusterWith(t, "--redis-addr="+redis.Addr)
	l := startLoad(c, 8)
	var lastElection time.Time

	newLeader := func(after string) string {
		t.Helper()
		id, err := c.Leader(ctx)
		if err != nil {
			t.Fatalf("Leader() after %s: %v", after, err)
		}
		lastElection = time.Now()
		return id
	}

	// 1. SIGKILL the leader three times in a row, waiting for a new leader each
	// time; the killed node comes back before the next kill.
	for i := range 3 {
		leader := newLeader("start")
		killed := time.Now()
		if err := c.Kill(leader); err != nil {
			t.Fatal(err)
		}
		next := newLeader("kill")
		elected := time.Since(killed)
		first200, first202 := l.firstAfter(ctx, killed)
		t.Logf("kill %d: %s → %s leads after %v; first 200 after %v, first 202 after %v (load so far: %v)",
			i+1, leader, next, elected.Round(time.Millisecond), first200.Round(time.Millisecond), first202.Round(time.Millisecond), l.tally())
		if err := c.Restart(ctx, leader); err != nil {
			t.Fatal(err)
		}
	}

	// 2. Quorum loss: stop two nodes; the survivor keeps answering 202.
	survivor, down := loseQuorum(t, c, newLeader("restarts"))
	before := len(l.snapshot())
	survivorClient := client.NewClient(client.ClientConfig{Endpoints: []string{c.URL(survivor)}})
	var parkedOnSurvivor, walOnlyOnSurvivor []txid.ID
	for i := range 20 {
		res, err := survivorClient.Submit(ctx, wire.TxRequest{IdempotencyKey: fmt.Sprintf("ql-%d", i), Ops: []wire.Op{{Op: "put", Key: "quorum-loss", Value: json.RawMessage(fmt.Sprint(i))}}}, wire.SubmitOptions{Timeout: 500 * time.Millisecond})
		if err != nil || res.Status != wire.StatusPending {
			t.Fatalf("submit to the survivor without quorum = %+v, %v; want 202 pending", res, err)
		}
		l.record(ack{key: fmt.Sprintf("ql-%d", i), res: res})
		if slices.Contains(res.HeldBy, "redis") {
			parkedOnSurvivor = append(parkedOnSurvivor, res.TxID)
		} else {
			// Redis's breaker was open (a slow Redis on a loaded machine): the
			// answer says only the WAL holds it, which promises nothing while
			// the node is down; it must commit once the node is back.
			walOnlyOnSurvivor = append(walOnlyOnSurvivor, res.TxID)
		}
	}
	if len(parkedOnSurvivor) == 0 {
		t.Fatalf("none of 20 writes parked on the survivor was held by Redis (held_by); nothing left to show Redis carries them")
	}

	// 3. Kill the survivor before its parked writes are drained, then bring back
	// the other two: they elect a leader, which drains Redis. Those writes must
	// commit while the node that accepted them is still down.
	if err := c.Kill(survivor); err != nil {
		t.Fatal(err)
	}
	for _, id := range down {
		if err := c.Restart(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	newLeader("quorum back")
	rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
	waitResolved(rctx, t, c, parkedOnSurvivor)
	rcancel()
	t.Logf("quorum loss: %d writes parked on %s committed from Redis while it was down, %d held by its WAL alone (%d acks during the outage)", len(parkedOnSurvivor), survivor, len(walOnlyOnSurvivor), len(l.snapshot())-before)
	if err := c.Restart(ctx, survivor); err != nil {
		t.Fatal(err)
	}
	if len(walOnlyOnSurvivor) > 0 {
		rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
		waitResolved(rctx, t, c, walOnlyOnSurvivor)
		rcancel()
	}

	// 4. Redis stops during a failover: the WALs carry what is parked meanwhile.
	// The leader and one follower die with Redis down, so the survivor can only
	// park in its WAL; when they come back, the survivor replays it.
	redis.Stop()
	survivor, down = loseQuorum(t, c, newLeader("survivor back"))
	survivorClient = client.NewClient(client.ClientConfig{Endpoints: []string{c.URL(survivor)}})
	var parkedNoRedis []txid.ID
	for i := range 10 {
		key := fmt.Sprintf("nr-%d", i)
		res, err := survivorClient.Submit(ctx, wire.TxRequest{IdempotencyKey: key, Ops: []wire.Op{{Op: "put", Key: "no-redis", Value: json.RawMessage(fmt.Sprint(i))}}}, wire.SubmitOptions{Timeout: 300 * time.Millisecond})
		if err != nil || res.Status != wire.StatusPending {
			t.Fatalf("submit to the survivor without quorum or Redis = %+v, %v; want 202 pending", res, err)
		}
		l.record(ack{key: key, res: res})
		parkedNoRedis = append(parkedNoRedis, res.TxID)
	}
	for _, id := range down {
		if err := c.Restart(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	newLeader("quorum back without redis")
	rctx, rcancel = context.WithTimeout(ctx, 30*time.Second)
	waitResolved(rctx, t, c, parkedNoRedis)
	rcancel()
	t.Logf("redis down: %d writes parked on %s's WAL alone resolved", len(parkedNoRedis), survivor)
	redis.RestartEmpty()

	// The end: stop the load, resolve every 202 within 30 s of the last election,
	// then compare every node's log with what the clients were told.
	acks := l.halt()
	rctx, rcancel = context.WithDeadline(ctx, lastElection.Add(30*time.Second))
	resolvePending(rctx, t, c, acks)
	rcancel()
	logs := checkSettled(ctx, t, c, acks)
	t.Logf("outcomes: %d×200, %d×202, %d×409, %d errors; %d log entries", l.counts[200], l.counts[202], l.counts[409], l.counts[0], len(logs["n1"]))
	if l.counts[202] == 0 || l.counts[200] == 0 {
		t.Fatalf("the load saw %d×200 and %d×202; want both", l.counts[200], l.counts[202])
	}
}

// TestIntakeWALModes checks each --intake-wal mode end to end: writes commit with
// a leader; without quorum the survivor parks them (202); they commit when the
// quorum is back, also after the survivor itself restarted (its WAL has them).
// One parked write asks for a 1µs timeout: the request's time is over before
// the WAL append is, and the survivor must still wait for it and answer 202
// (with --intake-wal=off the append only starts when the proposal gave up).
func TestIntakeWALModes(t *testing.T) {
	for _, mode := range []string{"parallel", "sync", "off"} {
		t.Run(mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			args := []string{"--intake-wal=" + mode}
			if mode == "sync" {
				args = append(args, "--store-commit-interval=0") // the fsync-everything configuration
			}
			c := startClusterWith(t, args...)
			cl := client.NewClient(client.ClientConfig{Endpoints: c.HTTPAddrs()})
			put := func(cl *client.Client, key string, timeout time.Duration) wire.TxResult {
				t.Helper()
				res, err := cl.Submit(ctx, wire.TxRequest{IdempotencyKey: key, Ops: []wire.Op{{Op: "put", Key: key, Value: json.RawMessage(`"v"`)}}}, wire.SubmitOptions{Timeout: timeout})
				if err != nil {
					t.Fatalf("Submit(%s) = %v", key, err)
				}
				return res
			}
			if res := put(cl, "with-leader", 5*time.Second); res.Status != wire.StatusCommitted {
				t.Fatalf("with a leader: %+v, want committed", res)
			}
			survivor, _ := loseQuorum(t, c, mustLeaderID(ctx, t, c))
			sc := client.NewClient(client.ClientConfig{Endpoints: []string{c.URL(survivor)}})
			var parked []txid.ID
			for i := range 5 {
				timeout := 300 * time.Millisecond
				if i == 4 {
					timeout = time.Microsecond
				}
				res := put(sc, fmt.Sprintf("parked-%d", i), timeout)
				if res.Status != wire.StatusPending {
					t.Fatalf("without quorum: %+v, want pending", res)
				}
				parked = append(parked, res.TxID)
			}
			// The survivor dies too; its WAL alone carries the parked writes.
			if err := c.Kill(survivor); err != nil {
				t.Fatal(err)
			}
			for _, p := range c.Nodes() {
				if err := c.Restart(ctx, p.ID()); err != nil {
					t.Fatal(err)
				}
			}
			mustLeaderID(ctx, t, c)
			rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
			defer rcancel()
			resolved := waitResolved(rctx, t, c, parked)
			for id, res := range resolved {
				if res.Status != wire.StatusCommitted || res.TxID != id {
					t.Fatalf("parked %s resolved as %+v, want committed under its own txid", id, res)
				}
			}
		})
	}
}

// loseQuorum kills every node but one follower of leader, and returns that
// survivor and the killed nodes.
func loseQuorum(t *testing.T, c *launcher.Cluster, leader string) (survivor string, down []string) {
	t.Helper()
	for _, p := range c.Nodes() {
		if p.ID() != leader && survivor == "" {
			survivor = p.ID()
			continue
		}
		down = append(down, p.ID())
	}
	for _, id := range down {
		if err := c.Kill(id); err != nil {
			t.Fatal(err)
		}
	}
	return survivor, down
}

func mustLeaderID(ctx context.Context, t *testing.T, c *launcher.Cluster) string {
	t.Helper()
	id, err := c.Leader(ctx)
	if err != nil {
		t.Fatalf("Leader() = %v", err)
	}
	return id
}

// aFollower returns the first node of c, in its order, other than leader.
func aFollower(c *launcher.Cluster, leader string) string {
	for _, p := range c.Nodes() {
		if p.ID() != leader {
			return p.ID()
		}
	}
	return ""
}

// TestOverloaded checks the bound on parked writes: past --max-unresolved the
// survivor of a quorum loss answers 503 overloaded (nothing done), and takes
// writes again once the parked ones drained.
func TestOverloaded(t *testing.T) {
	const limit = 3
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := startClusterWith(t, fmt.Sprintf("--max-unresolved=%d", limit))
	survivor, down := loseQuorum(t, c, mustLeaderID(ctx, t, c))
	sc := client.NewClient(client.ClientConfig{Endpoints: []string{c.URL(survivor)}, Timeout: 2 * time.Second})
	submit := func(i int) (wire.TxResult, error) {
		return sc.Submit(ctx, wire.TxRequest{IdempotencyKey: fmt.Sprintf("ov-%d", i), Ops: []wire.Op{{Op: "put", Key: "ov", Value: json.RawMessage(fmt.Sprint(i))}}}, wire.SubmitOptions{Timeout: 200 * time.Millisecond, Ack: wire.AckAccepted})
	}
	var parked []txid.ID
	for i := range limit {
		res, err := submit(i)
		if err != nil || res.Status != wire.StatusPending {
			t.Fatalf("write %d = %+v, %v; want 202 pending", i, res, err)
		}
		parked = append(parked, res.TxID)
	}
	if res, err := submit(limit); !errors.Is(err, wire.ErrOverloaded) {
		t.Fatalf("write past the limit = %+v, %v; want ErrOverloaded", res, err)
	}
	for _, id := range down {
		if err := c.Restart(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	mustLeaderID(ctx, t, c)
	rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
	defer rcancel()
	waitResolved(rctx, t, c, parked)
	// Drained: the survivor takes writes again (the client retries while the
	// last done-marks land).
	if res, err := submit(limit + 1); err != nil {
		t.Fatalf("write after the drain = %+v, %v", res, err)
	}
}
