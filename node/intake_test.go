package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/store"
	"github.com/txlog/txlog/txid"
)

// freeAddrs returns n loopback addresses whose ports were free a moment ago.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	var addrs []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, ln.Addr().String())
		defer ln.Close()
	}
	return addrs
}

// TestParkFailedWALIsUnknown opens one node of a three-node cluster whose other
// two never start, so that no write commits and every write is parked. With
// the intake WAL working the node answers 202 pending. Once an append fails
// (here the WAL is closed under it), the node must not answer no_leader ("not
// carried out"): a failed append may be on disk and a restart would replay it.
// It answers unknown_outcome with the txid, and /readyz says it is not ready.
func TestParkFailedWALIsUnknown(t *testing.T) {
	addrs := freeAddrs(t, 3)
	n, err := Open(context.Background(), Config{
		ID:       "n1",
		DataDir:  decidedDir(t), // its peers never answer: it decided its cluster ID before
		HTTPAddr: "127.0.0.1:0",
		RaftAddr: addrs[0],
		Cluster:  []Peer{{ID: "n1", RaftAddr: addrs[0]}, {ID: "n2", RaftAddr: addrs[1]}, {ID: "n3", RaftAddr: addrs[2]}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	submit := func(key string) (wire.TxResult, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		return n.Submit(ctx, wire.TxRequest{IdempotencyKey: key, Ops: []wire.Op{{Op: "put", Key: key, Value: json.RawMessage(`1`)}}}, wire.SubmitOptions{})
	}
	res, err := submit("parked")
	if err != nil || res.Status != wire.StatusPending || res.TxID == 0 {
		t.Fatalf("with the WAL: %+v, %v; want 202 pending with a txid", res, err)
	}
	if err := n.Ready(context.Background()); err == nil || strings.Contains(err.Error(), "intake wal") {
		t.Fatalf("Ready() with a working WAL and no leader = %v, want not ready for want of a leader", err)
	}
	if err := n.intake.wal.Close(); err != nil {
		t.Fatal(err)
	}
	res, err = submit("wal-failed")
	if !errors.Is(err, wire.ErrUnknownOutcome) || errors.Is(err, wire.ErrNoLeader) || res.TxID == 0 {
		t.Fatalf("after a failed WAL append: %+v, %v; want unknown_outcome with a txid", res, err)
	}
	// A node that cannot park is not ready, whatever Raft says.
	if err := n.Ready(context.Background()); err == nil || !strings.Contains(err.Error(), "intake wal") {
		t.Fatalf("Ready() with a failed WAL = %v, want not ready, naming the intake wal", err)
	}
}

// TestIntakeIdempotencyKeys opens one node of a three-node cluster whose other
// two never start, so that every write is parked, and checks what a key
// pending there answers: the lookup by key finds it pending with its txid; a
// resubmission of the same transaction gets that txid and parks nothing new;
// another transaction under the key is refused naming that txid. After a
// restart, the same holds for the records the intake WAL gave back.
func TestIntakeIdempotencyKeys(t *testing.T) {
	addrs := freeAddrs(t, 3)
	dir := decidedDir(t) // its peers never answer: it decided its cluster ID before
	open := func() *Node {
		t.Helper()
		n, err := Open(context.Background(), Config{
			ID:       "n1",
			DataDir:  dir,
			HTTPAddr: "127.0.0.1:0",
			RaftAddr: addrs[0],
			Cluster:  []Peer{{ID: "n1", RaftAddr: addrs[0]}, {ID: "n2", RaftAddr: addrs[1]}, {ID: "n3", RaftAddr: addrs[2]}},
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	n := open()
	defer func() { n.Close() }()
	tx := func(key, value string) wire.TxRequest {
		return wire.TxRequest{IdempotencyKey: key, Ops: []wire.Op{{Op: "put", Key: "a", Value: json.RawMessage(value)}}}
	}
	submit := func(txs ...wire.TxRequest) []wire.TxResult {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		res, err := n.SubmitBatch(ctx, txs, wire.SubmitOptions{})
		if err != nil {
			t.Fatalf("SubmitBatch() = %v", err)
		}
		return res
	}
	lookup := func(key string) (wire.TxResult, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return n.TxByIdempotencyKey(ctx, key, 0, wire.ReadOptions{Consistency: wire.ConsistencyStale}) // no leader: this node's view
	}
	wantPending := func(what string, r wire.TxResult, id txid.ID) {
		t.Helper()
		if r.Error != nil || r.Status != wire.StatusPending || r.TxID != id || !slices.Equal(r.HeldBy, []string{wire.HeldByWAL}) {
			t.Fatalf("%s = %+v (error %+v), want pending txid %s held by the wal", what, r, r.Error, id)
		}
	}
	wantReused := func(what string, r wire.TxResult, id txid.ID) {
		t.Helper()
		if r.Error == nil || r.Error.Code != wire.CodeIdempotencyKeyReused || r.Error.TxID != id {
			t.Fatalf("%s = %+v (error %+v), want idempotency_key_reused naming %s", what, r, r.Error, id)
		}
	}

	first := submit(tx("k", `1`))[0]
	if first.Status != wire.StatusPending || first.TxID == 0 || !slices.Equal(first.HeldBy, []string{wire.HeldByWAL}) {
		t.Fatalf("first submission = %+v, want 202 pending held by the wal", first)
	}
	id := first.TxID
	for round := range 2 {
		what := fmt.Sprintf("round %d: ", round)
		res, err := lookup("k")
		if err != nil {
			t.Fatalf("%sTxByIdempotencyKey(k) = %v, want pending", what, err)
		}
		wantPending(what+"lookup by key", res, id)
		if res, err := n.Tx(context.Background(), id, 0, wire.ReadOptions{Consistency: wire.ConsistencyStale}); err != nil {
			t.Fatalf("%sTx(%s) = %v", what, id, err)
		} else {
			wantPending(what+"lookup by txid", res, id)
		}
		again := submit(tx("k", `1`), tx("k", `2`), tx("j", `1`), tx("j", `1`), tx("j", `3`))
		wantPending(what+"same transaction again", again[0], id)
		if !again[0].Duplicate {
			t.Fatalf("%ssame transaction again = %+v, want a duplicate", what, again[0])
		}
		wantReused(what+"another transaction under the key", again[1], id)
		// Within one batch: the second of a new key is the first's.
		wantPending(what+"new key j", again[2], again[2].TxID)
		wantPending(what+"j again in the batch", again[3], again[2].TxID)
		wantReused(what+"j with another value in the batch", again[4], again[2].TxID)
		if got := n.intake.size(); got != 2+round {
			t.Fatalf("%sunresolved entries = %d, want %d: resubmissions park nothing new", what, got, 2+round)
		}
		if got := len(n.intake.wal.Pending()); got != 2+round {
			t.Fatalf("%sintake wal records not done = %d, want %d", what, got, 2+round)
		}
		if round == 1 {
			// A resubmission while the original is still in its request
			// waits for it, and answers 202 with its txid once it is parked.
			type answer struct {
				res []wire.TxResult
				err error
			}
			orig := make(chan answer, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
				defer cancel()
				res, err := n.SubmitBatch(ctx, []wire.TxRequest{tx("w", `1`)}, wire.SubmitOptions{})
				orig <- answer{res, err}
			}()
			deadline := time.Now().Add(5 * time.Second)
			for {
				if _, _, ok := n.intake.pendingKey("w"); ok {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the original of w never reached the intake")
				}
				runtime.Gosched()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			joined, err := n.SubmitBatch(ctx, []wire.TxRequest{tx("w", `1`)}, wire.SubmitOptions{})
			cancel()
			o := <-orig
			if err != nil || o.err != nil {
				t.Fatalf("SubmitBatch() = %v, %v", err, o.err)
			}
			wantPending(what+"original of w", o.res[0], o.res[0].TxID)
			wantPending(what+"w while its original was in flight", joined[0], o.res[0].TxID)
		}
		if round == 0 {
			// After a restart the WAL's records are the entries: the same
			// answers; the next round's j is one more key.
			if err := n.Close(); err != nil {
				t.Fatal(err)
			}
			n = open()
			submit(tx("j2", `1`))
		}
	}
}

// TestProposeReusedKey: on the leader of a one-node cluster, a proposal
// forwarded by another node (which could not know the key) of another
// transaction under a committed key is refused when applied, with
// idempotency_key_reused naming the original; the same transaction under
// another txid is a duplicate of it.
func TestProposeReusedKey(t *testing.T) {
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
	defer n.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var orig wire.TxResult
	for {
		orig, err = n.Submit(ctx, wire.TxRequest{IdempotencyKey: "k", Ops: []wire.Op{{Op: "put", Key: "a", Value: json.RawMessage(`1`)}}}, wire.SubmitOptions{Timeout: time.Second})
		if err == nil && orig.Status == wire.StatusCommitted {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no commit on a one-node cluster: %+v, %v", orig, err)
		}
	}
	frame := func(id txid.ID, value string) []byte {
		tx := store.Tx{ID: id, IdempotencyKey: "k", Ops: []store.Op{{Kind: store.OpPut, Key: "a", Value: []byte(value)}}}
		return store.EncodeCommand(store.Command{Kind: store.KindTx, Payload: store.EncodeTx(tx)})
	}
	other, same := n.mem.ids.Next(), n.mem.ids.Next()
	registerSelf(ctx, t, n)
	res, err := n.Propose(ctx, [][]byte{frame(other, `2`), frame(same, `1`)}, wire.SubmitOptions{Timeout: 5 * time.Second, Fresh: true, From: "n1"})
	if err != nil {
		t.Fatalf("Propose() = %v", err)
	}
	if e := res[0].Error; e == nil || e.Code != wire.CodeIdempotencyKeyReused || e.TxID != orig.TxID {
		t.Fatalf("another transaction under k = %+v (error %+v), want idempotency_key_reused naming %s", res[0], e, orig.TxID)
	}
	if r := res[1]; r.Error != nil || !r.Duplicate || r.TxID != orig.TxID || r.Status != wire.StatusCommitted {
		t.Fatalf("the same transaction under k = %+v, want a duplicate of %s", r, orig.TxID)
	}
	if _, err := n.Tx(ctx, other, 0, wire.ReadOptions{}); !errors.Is(err, wire.ErrNotFound) {
		t.Fatalf("Tx() of the refused proposal = %v, want not found", err)
	}
}
