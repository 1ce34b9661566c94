package systemtest

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
)

// TestStoreLosesOpenEntries kills a follower whose store holds applied entries
// in an open, uncommitted transaction (--store-commit-interval=1h: only what
// must commit does), and checks that the restarted node reopens its store at
// an older applied index, applies the rest again from the Raft log, and ends
// with exactly the committed state, like every other node.
func TestStoreLosesOpenEntries(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := startClusterWith(t, "--store-commit-interval=1h")
	cl := client.NewClient(client.ClientConfig{Endpoints: c.HTTPAddrs()})
	var acks []ack
	submit := func(from, to int) {
		for i := from; i < to; i++ {
			key := fmt.Sprintf("sc-%d", i)
			res, err := cl.Submit(ctx, wire.TxRequest{IdempotencyKey: key, Ops: []wire.Op{{Op: "put", Key: fmt.Sprintf("k/%d", i%7), Value: json.RawMessage(fmt.Sprint(i))}}}, wire.SubmitOptions{})
			if err != nil {
				t.Fatalf("Submit(%s) = %v", key, err)
			}
			acks = append(acks, ack{key: key, res: res})
		}
	}
	submit(0, 100)

	leader := mustLeaderID(ctx, t, c)
	victim := aFollower(c, leader)
	p := c.Node(victim)
	// A member's registration commits the store at once: wait until the last
	// is in the log, so that none comes after the kill's open entries.
	waitUntil(ctx, t, "every member registered", func() bool {
		st, err := cl.ClusterFrom(ctx, c.URL(leader))
		if err != nil || len(st.Members) != len(c.Nodes()) {
			return false
		}
		for _, m := range st.Members {
			if m.NodeNumber == 0 {
				return false
			}
		}
		return true
	})
	before := lastIndex(ctx, t, c)
	// Wait until the victim has applied everything, without reading its log
	// (a read that comes up short commits).
	waitUntil(ctx, t, "the victim applying the last index", func() bool {
		st, err := cl.ClusterFrom(ctx, c.URL(victim))
		return err == nil && st.AppliedIndex >= before
	})
	if err := c.Kill(victim); err != nil {
		t.Fatal(err)
	}
	submit(100, 150)
	if err := c.Restart(ctx, victim); err != nil {
		t.Fatal(err)
	}
	opened := regexp.MustCompile(`"msg":"store opened".*?"index":(\d+)`)
	var reopenedAt uint64
	waitUntil(ctx, t, "the log line of the reopened store", func() bool {
		m := opened.FindAllStringSubmatch(p.LogTail(400), -1)
		if len(m) < 2 { // the first start's, and the restart's
			return false
		}
		reopenedAt, _ = strconv.ParseUint(m[len(m)-1][1], 10, 64)
		return true
	})
	if reopenedAt >= before {
		t.Fatalf("the killed store reopened at applied index %d, the cluster was at %d: no open entries were lost, the test tests nothing", reopenedAt, before)
	}
	t.Logf("store reopened at index %d after a kill at %d", reopenedAt, before)
	submit(150, 170)

	// Every node, the restarted one included, holds exactly the committed state.
	logs := checkSettled(ctx, t, c, acks)
	want := lastVersions(logs[leader])
	for k, v := range want {
		kv, err := cl.GetFrom(ctx, c.URL(victim), k, wire.ReadOptions{Consistency: wire.ConsistencyStale})
		if err != nil || kv.Version != v {
			t.Fatalf("stale read of %s on the restarted %s = %+v, %v; want version %d", k, victim, kv, err, v)
		}
	}
	if len(logs[victim]) != len(acks) {
		t.Fatalf("%s has %d log entries, want %d", victim, len(logs[victim]), len(acks))
	}
}
