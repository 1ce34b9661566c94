package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/store"
	"github.com/txlog/txlog/txid"
)

// TestSquattedTxIDReissued: a transaction committed under a txid this node
// is about to issue (a squatter, through the forwarding endpoint) does not
// answer the node's own write: the write is proposed again under a fresh
// txid and answered committed with its own versions, and its idempotency
// key keeps working. When the squatter took every fresh txid too
// (maxReissues of them), the write answers txid_conflict, never committed.
func TestSquattedTxIDReissued(t *testing.T) {
	n := oneNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	registerSelf(ctx, t, n) // the leader takes forwarded frames of registered members only

	// The node's txids from here on come from a generator with a stopped
	// clock, so that a twin of it tells which txids the node issues next.
	last := n.mem.ids.Next()
	cfg := txid.Config{Node: last.Node(), Floor: last, Now: func() time.Time { return last.Time() }}
	ids, err := txid.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	twin, err := txid.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n.mem.ids = ids
	// Reissued writes take the next txid too, so that the twin knows them
	// ("unpredictable" below puts back the node's own choice).
	n.mem.nextReissue = ids.Next

	frame := func(id txid.ID, key string) []byte {
		tx := store.Tx{ID: id, Ops: []store.Op{{Kind: store.OpPut, Key: key, Value: []byte(`"squatter"`)}}}
		return store.EncodeCommand(store.Command{Kind: store.KindTx, Payload: store.EncodeTx(tx)})
	}
	squat := func(id txid.ID, key string) {
		t.Helper()
		res, err := n.Propose(ctx, [][]byte{frame(id, key)}, wire.SubmitOptions{Timeout: 5 * time.Second, Fresh: true, From: n.cfg.ID})
		if err != nil || res[0].Error != nil || res[0].Status != wire.StatusCommitted {
			t.Fatalf("squatter's Propose() = %+v (error %+v), %v; want committed", res, res[0].Error, err)
		}
	}
	req := wire.TxRequest{IdempotencyKey: "mine", Ops: []wire.Op{{Op: "put", Key: "own", Value: json.RawMessage(`"mine"`)}}}

	t.Run("retried", func(t *testing.T) {
		taken := twin.Next()
		squat(taken, "squatted")
		res, err := n.Submit(ctx, req, wire.SubmitOptions{Timeout: 5 * time.Second})
		if err != nil || res.Status != wire.StatusCommitted || res.Duplicate {
			t.Fatalf("Submit() = %+v, %v; want committed, not a duplicate", res, err)
		}
		if fresh := twin.Next(); res.TxID != fresh {
			t.Fatalf("Submit() txid = %s, want the fresh %s (the squatted one was %s)", res.TxID, fresh, taken)
		}
		if v, ok := res.Versions["own"]; !ok || v != 1 || len(res.Versions) != 1 {
			t.Fatalf("Submit() versions = %v, want own: 1 (its own, not the squatter's)", res.Versions)
		}
		kv, err := n.lookups.get("own")
		if err != nil || string(kv.Value) != `"mine"` {
			t.Fatalf("get(own) = %+v, %v; want the write's value", kv, err)
		}
		if got := testutil.ToFloat64(n.met.txidReissued); got != 1 {
			t.Fatalf("txlog_txid_reissued_total = %v, want 1", got)
		}
		// The idempotency key names the reissued transaction.
		again, err := n.Submit(ctx, req, wire.SubmitOptions{Timeout: 5 * time.Second})
		if err != nil || !again.Duplicate || again.TxID != res.TxID {
			t.Fatalf("resubmission = %+v, %v; want a duplicate of %s", again, err, res.TxID)
		}
		twin.Next() // the resubmission's txid

		// Forwarded frames under the squatted txid: the same bytes are a
		// duplicate, other bytes refused, whether the leader looks the txid
		// up first (sent before) or only Apply sees it (fresh).
		for _, fresh := range []bool{true, false} {
			res, err := n.Propose(ctx, [][]byte{frame(taken, "squatted"), frame(taken, "other")}, wire.SubmitOptions{Timeout: 5 * time.Second, Fresh: fresh, From: n.cfg.ID})
			if err != nil {
				t.Fatalf("Propose(fresh=%v) = %v", fresh, err)
			}
			if r := res[0]; r.Error != nil || r.Status != wire.StatusCommitted || r.TxID != taken {
				t.Fatalf("Propose(fresh=%v) of the same bytes = %+v, want the recorded outcome", fresh, r)
			}
			if r := res[1]; r.Error == nil || r.Error.Code != wire.CodeTxIDConflict || r.Status == wire.StatusCommitted {
				t.Fatalf("Propose(fresh=%v) of other bytes = %+v (error %+v), want txid_conflict", fresh, r, r.Error)
			}
		}
		if _, err := n.lookups.get("other"); !errors.Is(err, wire.ErrNotFound) {
			t.Fatalf("get(other) = %v, want not found: the refused frames wrote nothing", err)
		}
	})

	t.Run("parked", func(t *testing.T) {
		// ack=accepted parks the write under the squatted txid; the
		// replayer meets the conflict and commits it under a fresh one.
		before := testutil.ToFloat64(n.met.txidReissued)
		taken := twin.Next()
		squat(taken, "squatted-p")
		req := wire.TxRequest{IdempotencyKey: "parked", Ops: []wire.Op{{Op: "put", Key: "own-p", Value: json.RawMessage(`"p"`)}}}
		res, err := n.Submit(ctx, req, wire.SubmitOptions{Timeout: 5 * time.Second, Ack: wire.AckAccepted})
		if err != nil || res.Status != wire.StatusPending || res.TxID != taken {
			t.Fatalf("Submit(ack=accepted) = %+v, %v; want pending under %s", res, err, taken)
		}
		for {
			n.replay.once() // the replayer's step (oneNode runs no loops)
			got, err := n.TxByIdempotencyKey(ctx, "parked", 0, wire.ReadOptions{})
			if err == nil && got.Status == wire.StatusCommitted {
				if got.TxID == taken || got.Versions["own-p"] != 1 {
					t.Fatalf("replayed write = %+v, want committed under a fresh txid with its own versions", got)
				}
				if n := testutil.ToFloat64(n.met.txidReissued); n != before+1 {
					t.Fatalf("txlog_txid_reissued_total = %v, want %v", n, before+1)
				}
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("the parked write was never committed: %+v, %v", got, err)
			}
		}
		twin.Next() // the replayer's fresh txid
	})

	t.Run("taken every time", func(t *testing.T) {
		// The first txid and every fresh one: refused after maxReissues.
		for i := range maxReissues + 1 {
			squat(twin.Next(), fmt.Sprintf("squatted-%d", i))
		}
		other := wire.TxRequest{Ops: []wire.Op{{Op: "put", Key: "own-2", Value: json.RawMessage(`1`)}}}
		res, err := n.Submit(ctx, other, wire.SubmitOptions{Timeout: 5 * time.Second})
		if !errors.Is(err, wire.ErrTxIDConflict) || res.Status == wire.StatusCommitted {
			t.Fatalf("Submit() = %+v, %v; want txid_conflict", res, err)
		}
		if status, body := wire.ErrorStatus(err); status != 409 || body.Code != wire.CodeTxIDConflict {
			t.Fatalf("ErrorStatus(%v) = %d %s, want 409 txid_conflict", err, status, body.Code)
		}
		if _, err := n.lookups.get("own-2"); !errors.Is(err, wire.ErrNotFound) {
			t.Fatalf("get(own-2) = %v, want not found", err)
		}
	})

	t.Run("unpredictable", func(t *testing.T) {
		// With the node's own choice of a reissued txid, a squatter of the
		// next maxReissues+1 txids catches the first proposal only.
		n.mem.nextReissue = nil
		squatted := map[txid.ID]bool{}
		for i := range maxReissues + 1 {
			id := twin.Next()
			squatted[id] = true
			squat(id, fmt.Sprintf("squatted-u%d", i))
		}
		res, err := n.Submit(ctx, wire.TxRequest{Ops: []wire.Op{{Op: "put", Key: "own-3", Value: json.RawMessage(`1`)}}}, wire.SubmitOptions{Timeout: 5 * time.Second})
		if err != nil || res.Status != wire.StatusCommitted || squatted[res.TxID] || res.Versions["own-3"] != 1 {
			t.Fatalf("Submit() = %+v, %v; want committed under a txid the squatter did not take", res, err)
		}
	})
}
