package systemtest

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/txid"
)

// TestErrorAnswers: on a real cluster, through every node (a follower
// forwards to the leader), each 404 names the kind and the id that is
// missing, once; a 405 carries Allow; no message names a URL or a node's
// address; and a transfer of leadership to the leader is a 200 no-op that
// says so, the leader unchanged.
func TestErrorAnswers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := startCluster(t)
	leader := mustLeaderID(ctx, t, c)
	missing := txid.ID(0xdead).String()
	addr := regexp.MustCompile(`\b\d{1,3}(\.\d{1,3}){3}:\d+\b`)
	for _, p := range c.Nodes() {
		base := c.URL(p.ID())
		for _, tc := range []struct {
			method, path string
			status       int
			msg          string
		}{
			{"GET", "/v1/kv/nokey", 404, `key "nokey" not found`},
			{"GET", "/v1/tx/" + missing, 404, "transaction " + missing + " not found"},
			{"GET", "/v1/tx?idempotency_key=nokey", 404, `no transaction under idempotency key "nokey"`},
			{"GET", "/v1/consumers/nogroup", 404, `consumer group "nogroup" has no committed offset`},
			{"GET", "/v1/leases/nolease", 404, `lease "nolease" not found (free or expired)`},
			{"DELETE", "/v1/cluster/nodes/n9", 404, `node "n9" is not a member`},
			{"GET", "/v1/nope", 404, "no route GET /v1/nope"},
			{"GET", "/ui/nope", 404, "no route GET /ui/nope"}, // not net/http's plain text
			{"POST", "/v1/tx", 400, "id: unknown field"},      // a body's field, worded by the table
			{"PATCH", "/v1/tx", 405, "method PATCH not allowed on /v1/tx; it takes GET, POST"},
			{"GET", "/v1/kv/k?foo=1", 400, `unknown parameter "foo"; this route takes: consistency`},
			{"GET", "/v1/log?limit=-1", 400, `parameter limit="-1": want an integer from 1 to 1000`},
			{"POST", "/v1/cluster/transfer-leadership", 400, `body field id="n9": not a member; want the id of a voter`},
		} {
			body := ""
			if tc.method == "POST" {
				body = `{"id":"n9"}`
			}
			a := call(ctx, t, tc.method, base+tc.path, body)
			var e struct {
				Error wire.ErrorBody `json:"error"`
			}
			if err := json.Unmarshal([]byte(a.body), &e); err != nil || a.status != tc.status || e.Error.Message != tc.msg {
				t.Errorf("%s %s%s = %d %s, want %d %q", tc.method, p.ID(), tc.path, a.status, a.body, tc.status, tc.msg)
			}
			if strings.Contains(a.body, "http://") || addr.MatchString(a.body) {
				t.Errorf("%s %s%s = %s: names a URL or an address", tc.method, p.ID(), tc.path, a.body)
			}
		}
		req, _ := http.NewRequestWithContext(ctx, "PATCH", base+"/v1/tx", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Allow"); got != "GET, POST" {
			t.Errorf("PATCH %s/v1/tx: Allow %q, want %q", p.ID(), got, "GET, POST")
		}

		// To the leader itself, through each node.
		start := time.Now()
		a := call(ctx, t, "POST", base+"/v1/cluster/transfer-leadership", `{"id":"`+leader+`"}`)
		var res wire.TransferResult
		if err := json.Unmarshal([]byte(a.body), &res); err != nil || a.status != 200 || res.LeaderID != leader || !res.Unchanged {
			t.Fatalf("transfer to the leader %s via %s = %d %s, want 200 unchanged", leader, p.ID(), a.status, a.body)
		}
		t.Logf("transfer to the leader via %s answered in %v", p.ID(), time.Since(start))
	}
	if got := mustLeaderID(ctx, t, c); got != leader {
		t.Fatalf("leader after the no-op transfers = %s, want %s", got, leader)
	}
}
