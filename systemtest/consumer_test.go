package systemtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/launcher"
)

// TestConsumerOffsets commits a group's offset on a follower, by POST
// /v1/consumers/{group}/offset and by a commit_offset op among a
// transaction's ops, under the group's lease, and reads it on the other
// follower: forward only, fenced once the lease went to another holder.
func TestConsumerOffsets(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	leader := mustLeaderID(ctx, t, c)
	writer := aFollower(c, leader)
	reader := otherNode(c, leader, writer)
	wurl, rurl := c.URL(writer), c.URL(reader)
	const lease = "consumer/billing"
	cl := client.NewClient(client.ClientConfig{Endpoints: []string{wurl}, Timeout: 10 * time.Second})
	held, err := cl.AcquireLease(ctx, lease, "consumer-a", time.Minute)
	if err != nil {
		t.Fatalf("AcquireLease() = %v", err)
	}
	fence := fmt.Sprintf(`{"lease":%q,"token":%d}`, lease, held.Lease.Token)

	// 30 s: a slow fsync on a loaded machine must not park the write (202).
	status, body := httpDo(ctx, t, "POST", wurl+"/v1/consumers/billing/offset?timeout=30s", `{"offset":1,"fence":`+fence+`}`)
	if res := txResult(t, body); status != http.StatusOK || res.Status != wire.StatusCommitted {
		t.Fatalf("POST offset 1 on %s = %d %s, want 200 committed", writer, status, body)
	}
	status, body = httpDo(ctx, t, "POST", wurl+"/v1/tx?timeout=30s",
		`{"fence":`+fence+`,"ops":[{"op":"put","key":"billing/out","value":1},{"op":"commit_offset","group":"billing","offset":2}]}`)
	committed := txResult(t, body)
	if status != http.StatusOK || committed.Status != wire.StatusCommitted {
		t.Fatalf("tx with commit_offset 2 on %s = %d %s, want 200 committed", writer, status, body)
	}
	status, body = httpDo(ctx, t, "POST", wurl+"/v1/consumers/billing/offset", `{"offset":2}`)
	if res := txResult(t, body); status != http.StatusConflict || !reflect.DeepEqual(res.Conflict, &wire.Conflict{Group: "billing", Expected: 2, Actual: 2}) {
		t.Fatalf("POST offset 2 again = %d %s, want 409 naming the group at 2", status, body)
	}

	// The other follower: the offset, the entry's time, the lag.
	var g wire.ConsumerGroup
	waitUntil(ctx, t, "offset 2 on "+reader, func() bool {
		status, body := httpDo(ctx, t, "GET", rurl+"/v1/consumers/billing", "")
		return status == http.StatusOK && json.Unmarshal(body, &g) == nil && g.Offset == 2
	})
	// The lease and the nodes' registrations are entries before it.
	if g.Group != "billing" || g.UpdatedAt.IsZero() || committed.Index <= 2 || g.Lag < committed.Index-2 {
		t.Fatalf("GET /v1/consumers/billing on %s = %+v, want group billing at 2 with lag >= %d - 2", reader, g, committed.Index)
	}
	rcl := client.NewClient(client.ClientConfig{Endpoints: []string{rurl}, Timeout: 10 * time.Second})
	if l, err := rcl.Consumers(ctx); err != nil || len(l) != 1 || l[0].Group != "billing" || l[0].Offset != 2 {
		t.Fatalf("Consumers() on %s = %+v, %v", reader, l, err)
	}
	if status, body := httpDo(ctx, t, "GET", rurl+"/v1/consumers/nobody", ""); status != http.StatusNotFound || !json.Valid(body) {
		t.Fatalf("GET unknown group = %d %s, want a 404 JSON error", status, body)
	}

	// The lease goes to consumer-b: consumer-a's commits are fenced and
	// change nothing, consumer-b's move on from 2.
	if err := cl.ReleaseLease(ctx, lease, "consumer-a", held.Lease.Token); err != nil {
		t.Fatalf("ReleaseLease() = %v", err)
	}
	next, err := cl.AcquireLease(ctx, lease, "consumer-b", time.Minute)
	if err != nil {
		t.Fatalf("AcquireLease(consumer-b) = %v", err)
	}
	old := &wire.Fence{Lease: lease, Token: held.Lease.Token}
	if res, err := cl.CommitOffset(ctx, "billing", 20, old); err != nil || res.Status != wire.StatusRejected || res.Conflict == nil || res.Conflict.Fence != lease {
		t.Fatalf("CommitOffset() with the old token = %+v, %v; want rejected by the fence", res, err)
	}
	res, err := cl.CommitOffset(ctx, "billing", 3, &wire.Fence{Lease: lease, Token: next.Lease.Token})
	if err != nil || res.Status != wire.StatusCommitted {
		t.Fatalf("CommitOffset() with the new token = %+v, %v", res, err)
	}
	waitUntil(ctx, t, "offset 3 on "+reader, func() bool {
		g, err := rcl.Consumer(ctx, "billing")
		return err == nil && g.Offset == 3
	})
}

// otherNode returns the first node of c that is neither a nor b.
func otherNode(c *launcher.Cluster, a, b string) string {
	for _, p := range c.Nodes() {
		if p.ID() != a && p.ID() != b {
			return p.ID()
		}
	}
	return ""
}

// txResult decodes a transaction's answer, failing the test on bad JSON.
func txResult(t *testing.T, body []byte) wire.TxResult {
	t.Helper()
	var res wire.TxResult
	if err := json.Unmarshal(body, &res); err != nil {
		t.Fatalf("answer %s: %v", body, err)
	}
	return res
}
