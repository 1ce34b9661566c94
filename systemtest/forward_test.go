package systemtest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/txid"
)

// TestForwardModes sends every write through one follower, in each --forward
// mode: before, while and after the leader is paused (SIGSTOP, so that its
// connections stall instead of breaking), and checks that every write commits
// once, in the log of that follower. While there is no leader a write may be
// parked (202); it must commit all the same.
func TestForwardModes(t *testing.T) {
	for _, mode := range []string{"stream", "http"} {
		t.Run(mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			c := startClusterWith(t, "--forward="+mode)
			leader := mustLeaderID(ctx, t, c)
			via := aFollower(c, leader)
			cl := client.NewClient(client.ClientConfig{Endpoints: []string{c.URL(via)}})
			var (
				mu     sync.Mutex
				ids    = map[txid.ID]string{}
				parked []txid.ID
			)
			round := func(name string, mayPark bool) {
				t.Helper()
				var wg sync.WaitGroup
				for i := range 20 {
					wg.Go(func() {
						key := fmt.Sprintf("%s-%d", name, i)
						res, err := cl.Submit(ctx, wire.TxRequest{IdempotencyKey: key, Ops: []wire.Op{{Op: "put", Key: key, Value: json.RawMessage(`1`)}}}, wire.SubmitOptions{Timeout: 10 * time.Second})
						ok := res.Status == wire.StatusCommitted || (mayPark && res.Status == wire.StatusPending)
						if err != nil || !ok {
							t.Errorf("%s through %s: %+v, %v; want committed", key, via, res, err)
							return
						}
						mu.Lock()
						ids[res.TxID] = key
						if res.Status == wire.StatusPending {
							parked = append(parked, res.TxID)
						}
						mu.Unlock()
					})
				}
				wg.Wait()
			}
			round("before", false)
			if err := c.Pause(leader); err != nil {
				t.Fatal(err)
			}
			round("paused", true)
			if err := c.Resume(leader); err != nil {
				t.Fatal(err)
			}
			round("after", false)
			if t.Failed() {
				return
			}
			for id, res := range waitResolved(ctx, t, c, parked) {
				if res.Status != wire.StatusCommitted {
					t.Errorf("parked %s resolved as %+v, want committed", id, res)
				}
			}
			t.Logf("%d writes, %d of them parked", len(ids), len(parked))
			log := readLog(ctx, t, c.URL(via), lastIndex(ctx, t, c))
			seen := map[txid.ID]int{}
			for _, e := range log {
				if _, ok := ids[e.TxID]; ok {
					seen[e.TxID]++
				}
			}
			for id, key := range ids {
				if seen[id] != 1 {
					t.Errorf("%s (%s) is %d times in %s's log, want once", key, id, seen[id], via)
				}
			}
		})
	}
}
