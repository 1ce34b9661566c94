package systemtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/chaos"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/launcher"
	"github.com/txlog/txlog/node/parking/redistest"
	"github.com/txlog/txlog/txid"
)

// wireAnswer is an answer to POST /v1/tx as it came over the wire.
type wireAnswer struct {
	status int
	res    wire.TxResult
	err    *wire.ErrorBody
}

// postTx submits tx to the node at base over plain HTTP, so that the test sees
// the status and the JSON the server wrote, not the client's reading of them.
func postTx(ctx context.Context, t *testing.T, base string, tx wire.TxRequest, timeout time.Duration) wireAnswer {
	t.Helper()
	body, err := json.Marshal(tx)
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("%s/v1/tx?timeout=%s", base, timeout)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	a := wireAnswer{status: resp.StatusCode}
	if err := json.Unmarshal(b, &a.res); err != nil {
		t.Fatalf("POST %s: answer %d %q: %v", url, resp.StatusCode, b, err)
	}
	a.err = a.res.Error
	return a
}

// lookupKey asks the node at base for the transaction under key (wait 0).
func lookupKey(ctx context.Context, t *testing.T, base, key string) (wire.TxResult, error) {
	t.Helper()
	cl := client.NewClient(client.ClientConfig{Endpoints: []string{base}, Timeout: 5 * time.Second})
	return cl.TxByIdempotencyKey(ctx, key, 0)
}

// lookupKeyStale looks key up on the node at base with consistency=stale:
// that node's own view, the one a node without a leader gives (a
// linearizable lookup answers 503 no_leader then).
func lookupKeyStale(ctx context.Context, t *testing.T, base, key string) (wire.TxResult, error) {
	t.Helper()
	status, body := httpDo(ctx, t, http.MethodGet, base+"/v1/tx?consistency=stale&idempotency_key="+url.QueryEscape(key), "")
	var res wire.TxResult
	if status != http.StatusOK {
		return res, fmt.Errorf("answer %d %s", status, body)
	}
	return res, json.Unmarshal(body, &res)
}

func putTx(key, value string) wire.TxRequest {
	return wire.TxRequest{IdempotencyKey: key, Ops: []wire.Op{{Op: "put", Key: "idem/" + key, Value: json.RawMessage(value)}}}
}

// wantReused fails unless a is 422 idempotency_key_reused naming orig.
func wantReused(t *testing.T, what string, a wireAnswer, orig txid.ID) {
	t.Helper()
	if a.status != http.StatusUnprocessableEntity || a.err == nil || a.err.Code != wire.CodeIdempotencyKeyReused || a.err.TxID != orig {
		t.Fatalf("%s: %d %+v (error %+v), want 422 idempotency_key_reused naming txid %s", what, a.status, a.res, a.err, orig)
	}
}

// TestIdempotencyKeys checks the rules of idempotency keys on real processes:
// on the leader and through a follower, a resubmission of the same
// transaction answers the original, and another transaction under the key is
// refused with 422 naming the original. On a node without quorum, a parked
// write is found by its key (pending, with its txid and held_by), a
// resubmission gets the same txid and parks nothing new, and another
// transaction is refused. Last, a parked write whose key the rest of the
// cluster committed meanwhile for another transaction is refused when it is
// replayed, on every node alike (the store's check at apply time): the
// cluster's logs hold the key once, and the parked txid is never answered
// with the other transaction's outcome.
func TestIdempotencyKeys(t *testing.T) {
	redis := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := startClusterWith(t, "--redis-addr="+redis.Addr)
	leader := mustLeaderID(ctx, t, c)
	follower := aFollower(c, leader)

	for _, at := range []struct{ name, id string }{{"leader", leader}, {"follower", follower}} {
		t.Run(at.name, func(t *testing.T) {
			base := c.URL(at.id)
			key := "on-" + at.name
			// 30 s: a slow fsync on a loaded machine must not park the write (202).
			first := postTx(ctx, t, base, putTx(key, `1`), 30*time.Second)
			if first.status != http.StatusOK || first.res.Status != wire.StatusCommitted {
				t.Fatalf("first submission: %d %+v", first.status, first.res)
			}
			again := postTx(ctx, t, base, putTx(key, `1`), 30*time.Second)
			if again.status != http.StatusOK || again.res.TxID != first.res.TxID || !again.res.Duplicate || again.res.Index != first.res.Index {
				t.Fatalf("same transaction again: %d %+v, want 200 the original %s as a duplicate", again.status, again.res, first.res.TxID)
			}
			wantReused(t, "another value under the key", postTx(ctx, t, base, putTx(key, `2`), 5*time.Second), first.res.TxID)
			other := putTx(key, `1`)
			other.Ops[0].IfVersion = new(uint64)
			wantReused(t, "an if_version added under the key", postTx(ctx, t, base, other, 5*time.Second), first.res.TxID)
			// The Go client gives back the txid too.
			cl := client.NewClient(client.ClientConfig{Endpoints: []string{base}})
			_, err := cl.Submit(ctx, putTx(key, `3`), wire.SubmitOptions{})
			if e, ok := errors.AsType[*wire.KeyReusedError](err); !ok || e.TxID != first.res.TxID {
				t.Fatalf("Client.Submit of another value = %v, want a KeyReusedError naming %s", err, first.res.TxID)
			}
			res, err := lookupKey(ctx, t, base, key)
			if err != nil || res.TxID != first.res.TxID || res.Status != wire.StatusCommitted {
				t.Fatalf("lookup by key = %+v, %v; want the original committed", res, err)
			}
		})
	}

	t.Run("parked", func(t *testing.T) {
		survivor, down := loseQuorum(t, c, leader)
		base := c.URL(survivor)
		const key = "parked"
		first := postTx(ctx, t, base, putTx(key, `1`), 300*time.Millisecond)
		if first.status != http.StatusAccepted || first.res.Status != wire.StatusPending || first.res.TxID == 0 ||
			!slices.Equal(first.res.HeldBy, []string{wire.HeldByWAL, wire.HeldByRedis}) {
			t.Fatalf("without quorum: %d %+v, want 202 pending held by the wal and redis", first.status, first.res)
		}
		parked := first.res.TxID
		res, err := lookupKeyStale(ctx, t, base, key)
		if err != nil || res.Status != wire.StatusPending || res.TxID != parked {
			t.Fatalf("lookup by key of the parked write = %+v, %v; want pending %s", res, err, parked)
		}
		again := postTx(ctx, t, base, putTx(key, `1`), 300*time.Millisecond)
		if again.status != http.StatusAccepted || again.res.TxID != parked || again.res.Status != wire.StatusPending {
			t.Fatalf("same transaction again: %d %+v, want 202 pending %s", again.status, again.res, parked)
		}
		wantReused(t, "another value under the parked key", postTx(ctx, t, base, putTx(key, `2`), 300*time.Millisecond), parked)
		st, err := client.NewClient(client.ClientConfig{}).ClusterFrom(ctx, base)
		if err != nil || st.Extra["intake_unresolved"] != "1" {
			t.Fatalf("survivor's intake: %+v, %v; want 1 unresolved: resubmissions park nothing new", st.Extra, err)
		}

		// The survivor goes down with the write in its WAL only; the others
		// come back without it and commit another transaction under the key.
		if err := c.Kill(survivor); err != nil {
			t.Fatal(err)
		}
		redis.RestartEmpty()
		for _, id := range down {
			if err := c.Restart(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		newLeader := mustLeaderID(ctx, t, c)
		theirs := postTx(ctx, t, c.URL(newLeader), putTx(key, `2`), 10*time.Second)
		if theirs.status != http.StatusOK || theirs.res.Status != wire.StatusCommitted {
			t.Fatalf("another transaction under the key, elsewhere: %d %+v, want 200", theirs.status, theirs.res)
		}
		if err := c.Restart(ctx, survivor); err != nil {
			t.Fatal(err)
		}
		waitUntil(ctx, t, "the survivor's replay of the parked write", func() bool {
			st, err := client.NewClient(client.ClientConfig{}).ClusterFrom(ctx, base)
			return err == nil && st.Extra["intake_unresolved"] == "0"
		})
		if err := c.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
		for _, p := range c.Nodes() {
			res, err := lookupKey(ctx, t, c.URL(p.ID()), key)
			if err != nil || res.TxID != theirs.res.TxID || res.Status != wire.StatusCommitted {
				t.Fatalf("%s: lookup by key = %+v, %v; want %s committed", p.ID(), res, err, theirs.res.TxID)
			}
			cl := client.NewClient(client.ClientConfig{Endpoints: []string{c.URL(p.ID())}})
			if res, err := cl.Tx(ctx, parked, 0); !errors.Is(err, wire.ErrNotFound) {
				t.Fatalf("%s: the refused parked write %s = %+v, %v; want not found, never the other transaction's outcome", p.ID(), parked, res, err)
			}
		}
		wantReused(t, "the parked transaction again", postTx(ctx, t, base, putTx(key, `1`), 5*time.Second), theirs.res.TxID)
		checkKeyOnce(ctx, t, c, key)
	})
}

// checkKeyOnce fails unless every node's log holds one entry with the
// idempotency key and the logs agree.
func checkKeyOnce(ctx context.Context, t *testing.T, c *launcher.Cluster, key string) {
	t.Helper()
	top := lastIndex(ctx, t, c)
	var first []wire.LogEntry
	for i, p := range c.Nodes() {
		log := readLog(ctx, t, c.URL(p.ID()), top)
		n := 0
		for _, e := range log {
			if e.IdempotencyKey == key {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%s: %d log entries with key %q, want 1", p.ID(), n, key)
		}
		if i == 0 {
			first = log
		} else if len(log) != len(first) {
			t.Fatalf("%s: %d log entries, %s has %d", p.ID(), len(log), c.Nodes()[0].ID(), len(first))
		}
	}
}

// TestIdempotencyKeyElsewhere: a write parked on a follower cut off from Raft
// (its HTTP still works) is found by its key through the other nodes, which
// ask it, and answered pending with its txid; once the follower is back, the
// write commits under that txid, once.
func TestIdempotencyKeyElsewhere(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	net := chaos.NewNetwork(nil)
	defer net.Close()
	c := startClusterConfig(t, launcher.ClusterConfig{NodeArgs: net.DialArgs})
	leader := mustLeaderID(ctx, t, c)
	cut := aFollower(c, leader)
	net.Isolate(cut)
	waitUntil(ctx, t, cut+" to lose the leader", func() bool {
		st, err := client.NewClient(client.ClientConfig{}).ClusterFrom(ctx, c.URL(cut))
		return err == nil && st.LeaderID == ""
	})
	const key = "elsewhere"
	first := postTx(ctx, t, c.URL(cut), putTx(key, `1`), 300*time.Millisecond)
	if first.status != http.StatusAccepted || first.res.TxID == 0 {
		t.Fatalf("on the cut-off follower: %d %+v, want 202", first.status, first.res)
	}
	for _, p := range c.Nodes() {
		res, err := lookupKeyStale(ctx, t, c.URL(p.ID()), key)
		if err != nil || res.Status != wire.StatusPending || res.TxID != first.res.TxID {
			t.Fatalf("%s: lookup by key = %+v, %v; want pending %s (parked on %s)", p.ID(), res, err, first.res.TxID, cut)
		}
	}
	net.Heal()
	waitUntil(ctx, t, "the parked write to commit", func() bool {
		res, err := lookupKey(ctx, t, c.URL(leader), key)
		return err == nil && res.Status == wire.StatusCommitted
	})
	res, err := lookupKey(ctx, t, c.URL(leader), key)
	if err != nil || res.TxID != first.res.TxID {
		t.Fatalf("after the heal: %+v, %v; want %s committed", res, err, first.res.TxID)
	}
	checkKeyOnce(ctx, t, c, key)
}
