package node

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/store"
)

// oneNode opens a one-node cluster and waits until it commits a write.
func oneNode(t *testing.T) *Node {
	t.Helper()
	addrs := freeAddrs(t, 1)
	n, err := Open(context.Background(), Config{
		ID:       "n1",
		DataDir:  t.TempDir(),
		HTTPAddr: "127.0.0.1:0",
		RaftAddr: addrs[0],
		Cluster:  []Peer{{ID: "n1", RaftAddr: addrs[0]}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		res, err := n.Submit(ctx, wire.TxRequest{Ops: []wire.Op{{Op: "put", Key: "warm", Value: json.RawMessage(`1`)}}}, wire.SubmitOptions{Timeout: time.Second})
		if err == nil && res.Status == wire.StatusCommitted {
			return n
		}
		if ctx.Err() != nil {
			t.Fatalf("no commit on a one-node cluster: %+v, %v", res, err)
		}
	}
}

// TestLeaseFenceThroughNode: lease commands go through the log and answer
// with the lease; a stale token's write is rejected with the fence conflict
// whether it is submitted or proposed as a forwarded frame.
func TestLeaseFenceThroughNode(t *testing.T) {
	n := oneNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	a, err := n.AcquireLease(ctx, wire.LeaseRequest{Name: "jobs/settle", Holder: "a", TTL: 5 * time.Second}, false)
	if err != nil || !a.Acquired || a.Token == 0 || a.Holder != "a" || a.TTL != "5s" || a.ExpiresIn != "5s" {
		t.Fatalf("AcquireLease() = %+v, %v", a, err)
	}
	_, err = n.AcquireLease(ctx, wire.LeaseRequest{Name: "jobs/settle", Holder: "b", TTL: 5 * time.Second}, false)
	if le, ok := errors.AsType[*wire.LeaseError](err); !ok || le.Code != wire.CodeLeaseHeld || le.Lease.Token != a.Token || le.Lease.Holder != "a" {
		t.Fatalf("acquire by b = %v, want lease_held naming a's lease", err)
	}
	again, err := n.AcquireLease(ctx, wire.LeaseRequest{Name: "jobs/settle", Holder: "a", TTL: 5 * time.Second}, false)
	if err != nil || again.Acquired || again.Token != a.Token {
		t.Fatalf("acquire again by a = %+v, %v; want the current lease", again, err)
	}
	r, err := n.AcquireLease(ctx, wire.LeaseRequest{Name: "jobs/settle", Holder: "a", TTL: 10 * time.Second, Token: a.Token}, false)
	if err != nil || r.Acquired || r.Token != a.Token || r.TTL != "10s" {
		t.Fatalf("renew = %+v, %v", r, err)
	}
	if _, err := n.AcquireLease(ctx, wire.LeaseRequest{Name: "jobs/settle", Holder: "a", TTL: time.Second, Token: a.Token + 100}, false); !errors.Is(err, wire.ErrFenced) {
		t.Fatalf("renew with a wrong token = %v, want fenced", err)
	}

	fenced := func(token uint64, value string) wire.TxRequest {
		return wire.TxRequest{Fence: &wire.Fence{Lease: "jobs/settle", Token: token}, Ops: []wire.Op{{Op: "put", Key: "run", Value: json.RawMessage(value)}}}
	}
	ok, err := n.Submit(ctx, fenced(a.Token, `1`), wire.SubmitOptions{Timeout: 5 * time.Second})
	if err != nil || ok.Status != wire.StatusCommitted {
		t.Fatalf("fenced write with the token = %+v, %v", ok, err)
	}
	if err := n.ReleaseLease(ctx, "jobs/settle", "b", a.Token, false); !errors.Is(err, wire.ErrFenced) {
		t.Fatalf("release by b = %v, want fenced", err)
	}
	if err := n.ReleaseLease(ctx, "jobs/settle", "a", a.Token, false); err != nil {
		t.Fatalf("release = %v", err)
	}
	b, err := n.AcquireLease(ctx, wire.LeaseRequest{Name: "jobs/settle", Holder: "b", TTL: 5 * time.Second}, false)
	if err != nil || b.Token <= a.Token {
		t.Fatalf("acquire by b after the release = %+v, %v; want a token above %d", b, err, a.Token)
	}
	stale, err := n.Submit(ctx, fenced(a.Token, `2`), wire.SubmitOptions{Timeout: 5 * time.Second})
	want := wire.Conflict{Fence: "jobs/settle", Expected: a.Token, Actual: b.Token}
	if err != nil || stale.Status != wire.StatusRejected || stale.Conflict == nil || *stale.Conflict != want {
		t.Fatalf("a's late write = %+v (conflict %+v), %v; want rejected with %+v", stale, stale.Conflict, err, want)
	}
	// The same through the leader's side of forwarding: the fence rides in
	// the encoded transaction.
	tx := store.Tx{ID: n.mem.ids.Next(), Fence: &store.Fence{Lease: "jobs/settle", Token: a.Token}, Ops: []store.Op{{Kind: store.OpPut, Key: "run", Value: []byte(`3`)}}}
	frame := store.EncodeCommand(store.Command{Kind: store.KindTx, Payload: store.EncodeTx(tx)})
	registerSelf(ctx, t, n) // the leader takes n1's frames once n1's number is registered
	res, err := n.Propose(ctx, [][]byte{frame}, wire.SubmitOptions{Timeout: 5 * time.Second, Fresh: true, From: "n1"})
	if err != nil || res[0].Status != wire.StatusRejected || res[0].Conflict == nil || *res[0].Conflict != want {
		t.Fatalf("forwarded late write = %+v (error %+v), %v; want rejected with %+v", res, res[0].Error, err, want)
	}
	if kv, err := n.Get(ctx, "run", wire.ReadOptions{}); err != nil || string(kv.Value) != "1" {
		t.Fatalf("run = %+v, %v; want the one write made under a live token", kv, err)
	}
	page, err := n.Log(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var fencedEntries int
	for _, e := range page.Entries {
		if e.Fence != nil && e.Fence.Lease == "jobs/settle" {
			fencedEntries++
		}
	}
	if fencedEntries != 3 {
		t.Fatalf("%d log entries show their fence, want 3", fencedEntries)
	}
	ls, err := n.Leases(ctx, wire.ReadOptions{})
	if err != nil || len(ls) != 1 || ls[0].Holder != "b" || ls[0].Token != b.Token {
		t.Fatalf("Leases() = %+v, %v", ls, err)
	}
}

// TestLeaseLongPoll: a poll after the current token answers at the release,
// and at the expiry with nothing applied in between; a poll with
// after_token 0 waits for a grant.
func TestLeaseLongPoll(t *testing.T) {
	n := oneNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	type answer struct {
		l   wire.Lease
		err error
	}
	poll := func(after uint64) chan answer {
		ch := make(chan answer, 1)
		go func() {
			l, err := n.Lease(ctx, "l", 15*time.Second, after, wire.ReadOptions{})
			ch <- answer{l, err}
		}()
		return ch
	}
	within := func(ch chan answer, d time.Duration) answer {
		t.Helper()
		select {
		case a := <-ch:
			return a
		case <-time.After(d):
			t.Fatalf("no answer within %v", d)
			return answer{}
		}
	}

	grant := poll(0) // free: waits for a holder
	a, err := n.AcquireLease(ctx, wire.LeaseRequest{Name: "l", Holder: "a", TTL: time.Hour}, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := within(grant, 5*time.Second); got.err != nil || got.l.Token != a.Token {
		t.Fatalf("poll for a grant = %+v, %v", got.l, got.err)
	}
	released := poll(a.Token)
	select {
	case got := <-released:
		t.Fatalf("poll after the current token answered at once: %+v, %v", got.l, got.err)
	case <-time.After(100 * time.Millisecond):
	}
	if err := n.ReleaseLease(ctx, "l", "a", a.Token, false); err != nil {
		t.Fatal(err)
	}
	if got := within(released, 5*time.Second); !errors.Is(got.err, wire.ErrNotFound) {
		t.Fatalf("poll at the release = %+v, %v; want not found", got.l, got.err)
	}

	b, err := n.AcquireLease(ctx, wire.LeaseRequest{Name: "l", Holder: "b", TTL: time.Second}, false)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if got := within(poll(b.Token), 5*time.Second); !errors.Is(got.err, wire.ErrNotFound) {
		t.Fatalf("poll at the expiry = %+v, %v; want not found", got.l, got.err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("the poll answered %v after a 1s lease was granted", took)
	}
}
