package systemtest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
)

// TestAckAll checks ack=all against real nodes: a 200 with durability "all"
// means every voter has applied the transaction before the answer (each node
// finds it at once, without waiting), for single transactions and for a batch,
// sent to a follower and to the leader; with a voter frozen the answer is 202
// pending with durability "quorum", and the transactions are committed anyway.
func TestAckAll(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := startCluster(t)
	leader := mustLeaderID(ctx, t, c)
	// ack=all asks each voter at its registered HTTP address: wait until every
	// node knows every other's.
	waitUntil(ctx, t, "every node knowing every HTTP address", func() bool {
		for _, base := range c.HTTPAddrs() {
			st, err := client.NewClient(client.ClientConfig{Endpoints: []string{base}}).ClusterFrom(ctx, base)
			if err != nil || len(st.Members) != 3 {
				return false
			}
			for _, m := range st.Members {
				if m.HTTPAddr == "" {
					return false
				}
			}
		}
		return true
	})
	var follower, other string
	for _, p := range c.Nodes() {
		switch {
		case p.ID() == leader:
		case follower == "":
			follower = p.ID()
		default:
			other = p.ID()
		}
	}
	put := func(i int) wire.TxRequest {
		return wire.TxRequest{IdempotencyKey: fmt.Sprintf("all-%d", i), Ops: []wire.Op{{Op: "put", Key: fmt.Sprintf("all/%d", i%5), Value: json.RawMessage(fmt.Sprint(i))}}}
	}
	// appliedOn reports whether every node already has each transaction,
	// asked without waiting.
	appliedOn := func(rs []wire.TxResult) {
		t.Helper()
		for _, p := range c.Nodes() {
			cl := client.NewClient(client.ClientConfig{Endpoints: []string{c.URL(p.ID())}})
			for _, r := range rs {
				got, err := cl.Tx(ctx, r.TxID, 0)
				if err != nil || got.Index != r.Index {
					t.Errorf("%s right after the ack=all answer: Tx(%s) = %+v, %v; want it applied at index %d", p.ID(), r.TxID, got, err, r.Index)
				}
			}
		}
	}
	// 30 s: a batch of 50 fsynced on every voter of a loaded machine must
	// not be parked (202) by the timeout.
	all := wire.SubmitOptions{Ack: wire.AckAll, Timeout: 30 * time.Second}

	for v, via := range []string{follower, leader} {
		cl := client.NewClient(client.ClientConfig{Endpoints: []string{c.URL(via)}})
		var single []wire.TxResult
		for i := range 5 {
			r, err := cl.Submit(ctx, put(v*1000+i), all)
			if err != nil || r.Status != wire.StatusCommitted || r.Durability != wire.AckAll {
				t.Fatalf("Submit(ack=all) via %s = %+v, %v; want committed with durability all", via, r, err)
			}
			single = append(single, r)
		}
		appliedOn(single)

		var batch []wire.TxRequest
		for i := range 50 {
			batch = append(batch, put(v*1000+100+i))
		}
		rs, err := cl.SubmitBatch(ctx, batch, all)
		if err != nil {
			t.Fatalf("SubmitBatch(ack=all) via %s = %v", via, err)
		}
		for i, r := range rs {
			if r.Error != nil || r.Status != wire.StatusCommitted || r.Durability != wire.AckAll {
				t.Fatalf("SubmitBatch(ack=all) via %s: result %d = %+v; want committed with durability all", via, i, r)
			}
		}
		appliedOn(rs)

		// A resubmission answered from the store is held to ack=all too.
		r, err := cl.Submit(ctx, put(v*1000), all)
		if err != nil || !r.Duplicate || r.Durability != wire.AckAll {
			t.Fatalf("resubmission with ack=all via %s = %+v, %v; want a duplicate with durability all", via, r, err)
		}
	}

	// A frozen voter cannot apply: the answer must not claim "all". The
	// leader may have moved under the writes: freeze a voter that is not it.
	leader = mustLeaderID(ctx, t, c)
	other = aFollower(c, leader)
	if err := c.Pause(other); err != nil {
		t.Fatal(err)
	}
	defer c.Resume(other)
	cl := client.NewClient(client.ClientConfig{Endpoints: []string{c.URL(leader)}})
	rs, err := cl.SubmitBatch(ctx, []wire.TxRequest{put(9001), put(9002)}, wire.SubmitOptions{Ack: wire.AckAll, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatalf("SubmitBatch(ack=all) with %s frozen = %v", other, err)
	}
	for i, r := range rs {
		if r.Status != wire.StatusPending || r.Durability != wire.AckQuorum {
			t.Errorf("with %s frozen: result %d = %+v; want pending with durability quorum", other, i, r)
		}
	}
	if err := c.Resume(other); err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		got, err := cl.Tx(ctx, r.TxID, 10*time.Second)
		if err != nil || got.Status != wire.StatusCommitted {
			t.Errorf("Tx(%s) after the frozen voter's ack=all = %+v, %v; want committed", r.TxID, got, err)
		}
	}
}
