package systemtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/launcher"
)

// rywWant is what a read must see after a write: the fields a route's
// check looks at.
type rywWant struct {
	key     string // a key, group, lease name or idempotency key
	version uint64 // a key's version, a group's offset, a lease's token
	index   uint64 // the write's log index
	txid    string
	holder  string
	leader  string // the leader's ID and term, for the cluster view
	term    uint64
}

// rywRoute is one read route of the read-your-writes test: write makes a
// change through the node at base and says what a read must see; path is
// the read (with its query, without consistency); check returns why an
// answer misses the write, nil when it sees it.
type rywRoute struct {
	name  string
	write func(ctx context.Context, t *testing.T, c *launcher.Cluster, base string, round int) rywWant
	path  func(w rywWant) string
	check func(status int, body []byte, w rywWant) error
}

// rywSubmit commits a transaction through base and returns its result.
func rywSubmit(ctx context.Context, t *testing.T, base, body string) wire.TxResult {
	t.Helper()
	// 30 s: a slow fsync on a loaded machine must not park the write (202).
	status, b := httpDo(ctx, t, http.MethodPost, base+"/v1/tx?timeout=30s", body)
	var res wire.TxResult
	if status != http.StatusOK || json.Unmarshal(b, &res) != nil || res.Status != wire.StatusCommitted {
		t.Fatalf("POST /v1/tx %s on %s = %d %s, want 200 committed", body, base, status, b)
	}
	return res
}

// decodeOK decodes a 200 answer into v, or says why it is not one.
func decodeOK(status int, body []byte, v any) error {
	if status != http.StatusOK {
		return fmt.Errorf("answer %d %s", status, strings.TrimSpace(string(body)))
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("decode %s: %w", body, err)
	}
	return nil
}

// rywOffset is the last offset the test committed: each commit moves on.
var rywOffset atomic.Uint64

// rywRoutes are every read route of the API, each with a write it must see.
func rywRoutes() []rywRoute {
	putKey := func(ctx context.Context, t *testing.T, _ *launcher.Cluster, base string, round int) rywWant {
		res := rywSubmit(ctx, t, base, fmt.Sprintf(`{"ops":[{"op":"put","key":"ryw/kv","value":%d}]}`, round))
		return rywWant{key: "ryw/kv", version: res.Versions["ryw/kv"], index: res.Index}
	}
	txWrite := func(ctx context.Context, t *testing.T, _ *launcher.Cluster, base string, round int) rywWant {
		key := fmt.Sprintf("ryw-tx-%d-%d", time.Now().UnixNano(), round)
		res := rywSubmit(ctx, t, base, fmt.Sprintf(`{"idempotency_key":%q,"ops":[{"op":"put","key":"ryw/tx","value":%d}]}`, key, round))
		return rywWant{key: key, txid: res.TxID.String(), index: res.Index}
	}
	checkTx := func(status int, body []byte, w rywWant) error {
		var res wire.TxResult
		if err := decodeOK(status, body, &res); err != nil {
			return err
		}
		if res.Status != wire.StatusCommitted || res.TxID.String() != w.txid || res.Index != w.index {
			return fmt.Errorf("tx %s %s at %d, want %s committed at %d", res.TxID, res.Status, res.Index, w.txid, w.index)
		}
		return nil
	}
	offset := func(ctx context.Context, t *testing.T, _ *launcher.Cluster, base string, round int) rywWant {
		o := rywOffset.Add(1)
		status, b := httpDo(ctx, t, http.MethodPost, base+"/v1/consumers/ryw-g/offset", fmt.Sprintf(`{"offset":%d}`, o))
		if status != http.StatusOK {
			t.Fatalf("commit offset %d on %s = %d %s", o, base, status, b)
		}
		return rywWant{key: "ryw-g", version: o}
	}
	checkGroup := func(g wire.ConsumerGroup, w rywWant) error {
		if g.Group != w.key || g.Offset < w.version {
			return fmt.Errorf("group %q at offset %d, want %q at %d or more", g.Group, g.Offset, w.key, w.version)
		}
		return nil
	}
	lease := func(ctx context.Context, t *testing.T, _ *launcher.Cluster, base string, round int) rywWant {
		name := fmt.Sprintf("ryw/lease-%d-%d", time.Now().UnixNano(), round)
		cl := client.NewClient(client.ClientConfig{Endpoints: []string{base}, Timeout: 10 * time.Second})
		res, err := cl.AcquireLease(ctx, name, "holder-"+name, time.Minute)
		if err != nil {
			t.Fatalf("AcquireLease(%s) on %s = %v", name, base, err)
		}
		return rywWant{key: name, holder: "holder-" + name, version: res.Lease.Token}
	}
	checkLease := func(l wire.Lease, w rywWant) error {
		if l.Name != w.key || l.Holder != w.holder || l.Token != w.version {
			return fmt.Errorf("lease %q held by %q token %d, want %q by %q token %d", l.Name, l.Holder, l.Token, w.key, w.holder, w.version)
		}
		return nil
	}
	return []rywRoute{
		{name: "kv", write: putKey,
			path: func(w rywWant) string { return "/v1/kv/" + w.key },
			check: func(status int, body []byte, w rywWant) error {
				var kv wire.KV
				if err := decodeOK(status, body, &kv); err != nil {
					return err
				}
				if kv.Version < w.version {
					return fmt.Errorf("version %d, want %d or more", kv.Version, w.version)
				}
				return nil
			}},
		{name: "range",
			write: func(ctx context.Context, t *testing.T, _ *launcher.Cluster, base string, round int) rywWant {
				key := fmt.Sprintf("ryw/range/%d-%d", time.Now().UnixNano(), round)
				res := rywSubmit(ctx, t, base, fmt.Sprintf(`{"ops":[{"op":"put","key":%q,"value":%d}]}`, key, round))
				return rywWant{key: key, index: res.Index}
			},
			path: func(w rywWant) string {
				return "/v1/kv?keys_only=true&limit=1&prefix=" + url.QueryEscape(w.key)
			},
			check: func(status int, body []byte, w rywWant) error {
				var p wire.KVPage
				if err := decodeOK(status, body, &p); err != nil {
					return err
				}
				if len(p.KVs) != 1 || p.KVs[0].Key != w.key || p.Index < w.index {
					return fmt.Errorf("page at %d with %d keys, want %q at %d or later", p.Index, len(p.KVs), w.key, w.index)
				}
				return nil
			}},
		{name: "consumer", write: offset,
			path: func(w rywWant) string { return "/v1/consumers/" + w.key },
			check: func(status int, body []byte, w rywWant) error {
				var g wire.ConsumerGroup
				if err := decodeOK(status, body, &g); err != nil {
					return err
				}
				return checkGroup(g, w)
			}},
		{name: "consumers", write: offset,
			path: func(rywWant) string { return "/v1/consumers" },
			check: func(status int, body []byte, w rywWant) error {
				var l wire.ConsumerList
				if err := decodeOK(status, body, &l); err != nil {
					return err
				}
				for _, g := range l.Consumers {
					if g.Group == w.key {
						return checkGroup(g, w)
					}
				}
				return fmt.Errorf("no group %q in %d groups", w.key, len(l.Consumers))
			}},
		{name: "lease", write: lease,
			path: func(w rywWant) string { return "/v1/leases/" + w.key },
			check: func(status int, body []byte, w rywWant) error {
				var l wire.Lease
				if err := decodeOK(status, body, &l); err != nil {
					return err
				}
				return checkLease(l, w)
			}},
		{name: "leases", write: lease,
			path: func(rywWant) string { return "/v1/leases" },
			check: func(status int, body []byte, w rywWant) error {
				var l wire.LeaseList
				if err := decodeOK(status, body, &l); err != nil {
					return err
				}
				for _, x := range l.Leases {
					if x.Name == w.key {
						return checkLease(x, w)
					}
				}
				return fmt.Errorf("no lease %q in %d leases", w.key, len(l.Leases))
			}},
		{name: "tx", write: txWrite, path: func(w rywWant) string { return "/v1/tx/" + w.txid }, check: checkTx},
		{name: "tx-by-key", write: txWrite, path: func(w rywWant) string { return "/v1/tx?idempotency_key=" + url.QueryEscape(w.key) }, check: checkTx},
		{name: "cluster",
			write: func(ctx context.Context, t *testing.T, c *launcher.Cluster, base string, round int) rywWant {
				if round%5 == 4 {
					// A leader change: the view must name the new leader
					// and its term at once.
					cl := client.NewClient(client.ClientConfig{Endpoints: []string{base}, Timeout: 20 * time.Second})
					res, err := cl.TransferLeadershipVia(ctx, base, wire.TransferRequest{})
					if err != nil {
						t.Fatalf("TransferLeadership via %s = %v", base, err)
					}
					st, err := cl.ClusterFrom(ctx, c.URL(res.LeaderID))
					if err != nil || st.State != "leader" {
						t.Fatalf("new leader %s: %+v, %v", res.LeaderID, st, err)
					}
					return rywWant{leader: res.LeaderID, term: st.Term, index: st.CommitIndex}
				}
				w := putKey(ctx, t, c, base, round)
				st, err := client.NewClient(client.ClientConfig{Endpoints: []string{base}}).Cluster(ctx)
				if err != nil {
					t.Fatalf("Cluster() via %s = %v", base, err)
				}
				return rywWant{leader: st.LeaderID, term: st.Term, index: w.index}
			},
			path: func(rywWant) string { return "/v1/cluster" },
			check: func(status int, body []byte, w rywWant) error {
				var st wire.ClusterStatus
				if err := decodeOK(status, body, &st); err != nil {
					return err
				}
				if st.LeaderID != w.leader || st.Term != w.term || st.CommitIndex < w.index {
					return fmt.Errorf("leader %q term %d commit %d, want %q term %d commit %d or more", st.LeaderID, st.Term, st.CommitIndex, w.leader, w.term, w.index)
				}
				return nil
			}},
	}
}

// rywRound writes once through writer and reads through every other node
// at once; it returns the misses, one line each.
func rywRound(ctx context.Context, t *testing.T, c *launcher.Cluster, r rywRoute, writer string, round int, consistency string) []string {
	w := r.write(ctx, t, c, c.URL(writer), round)
	path := r.path(w)
	if consistency != "" {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		path += sep + "consistency=" + consistency
	}
	var mu sync.Mutex
	var misses []string
	var wg sync.WaitGroup
	for _, p := range c.Nodes() {
		if p.ID() == writer {
			continue
		}
		wg.Go(func() {
			status, body := rywGet(ctx, c.URL(p.ID())+path)
			if err := r.check(status, body, w); err != nil {
				mu.Lock()
				misses = append(misses, fmt.Sprintf("%s round %d: write via %s, GET %s via %s: %v", r.name, round, writer, path, p.ID(), err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return misses
}

// rywGet is one GET; a transport error is status 0 with the error as body.
func rywGet(ctx context.Context, u string) (int, []byte) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, []byte(err.Error())
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, []byte(err.Error())
	}
	return resp.StatusCode, b
}

// TestReadYourWritesEveryRoute writes through one node and at once reads
// what it wrote through each of the others, concurrently, for every read
// route at the default consistency (linearizable), rounds of it, the
// writer moving from node to node and, for the cluster view, leadership
// too. Every read must see its write.
func TestReadYourWritesEveryRoute(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	mustLeaderID(ctx, t, c)
	const rounds = 20
	nodes := c.Nodes()
	for _, r := range rywRoutes() {
		t.Run(r.name, func(t *testing.T) {
			var misses []string
			for round := range rounds {
				writer := nodes[round%len(nodes)].ID()
				misses = append(misses, rywRound(ctx, t, c, r, writer, round, "")...)
			}
			for _, m := range misses {
				t.Error(m)
			}
		})
	}

	// The checker, fed what a stale read may answer, reports a miss for
	// every route; and stale reads through the followers, right after a
	// write through the leader, are counted (they may miss or not: no
	// assertion, the count is logged).
	t.Run("checker", func(t *testing.T) {
		w := rywWant{key: "k", version: 5, index: 10, txid: "0000000000001", holder: "h", leader: "n1", term: 3}
		stale := map[string][]string{
			"kv":        {`{"key":"k","value":1,"version":4,"index":9}`},
			"range":     {`{"index":9,"kvs":[],"more":false,"next":""}`},
			"consumer":  {`{"group":"k","offset":4,"updated_at":"2026-01-01T00:00:00Z","lag":0}`},
			"consumers": {`{"consumers":[]}`},
			"lease":     {`{"name":"k","holder":"h","token":4,"ttl":"1m0s","expires_in":"1s"}`},
			"leases":    {`{"leases":[]}`},
			"tx":        {`{"txid":"0000000000001","status":"pending"}`},
			"tx-by-key": {`{"txid":"0000000000001","status":"committed","index":0}`},
			"cluster":   {`{"id":"n2","state":"follower","leader_id":"n1","term":3,"commit_index":9,"applied_index":9,"members":[]}`, `{"leader_id":"n2","term":3,"commit_index":10}`},
		}
		for _, r := range rywRoutes() {
			if len(stale[r.name]) == 0 {
				t.Errorf("%s: no bad case", r.name)
			}
			for _, body := range stale[r.name] {
				if err := r.check(http.StatusOK, []byte(body), w); err == nil {
					t.Errorf("%s: check passed the stale answer %s", r.name, body)
				}
			}
			if err := r.check(http.StatusNotFound, []byte(`{"error":{"code":"not_found","message":"x"}}`), w); err == nil {
				t.Errorf("%s: check passed a 404", r.name)
			}
		}
		leader := mustLeaderID(ctx, t, c)
		missed := 0
		for _, r := range rywRoutes() {
			if r.name == "cluster" {
				continue // its writes move leadership
			}
			for round := range 3 {
				missed += len(rywRound(ctx, t, c, r, leader, round, wire.ConsistencyStale))
			}
		}
		t.Logf("stale reads through the followers right after a write through the leader: %d misses of %d", missed, 8*3*2)
	})
}

// checkPaged checks pages of a prefix read against the keys there from
// the start (pre): keys in strictly increasing order over all pages, each
// of pre exactly once; keys not in pre (written meanwhile) may appear.
func checkPaged(pre []string, seen []string) error {
	for i := 1; i < len(seen); i++ {
		if seen[i] <= seen[i-1] {
			return fmt.Errorf("key %q after %q: out of order or twice", seen[i], seen[i-1])
		}
	}
	want := make(map[string]bool, len(pre))
	for _, k := range pre {
		want[k] = true
	}
	got := 0
	for _, k := range seen {
		if want[k] {
			got++
		}
	}
	if got != len(pre) {
		var missing []string
		have := make(map[string]bool, len(seen))
		for _, k := range seen {
			have[k] = true
		}
		for _, k := range pre {
			if !have[k] && len(missing) < 5 {
				missing = append(missing, k)
			}
		}
		return fmt.Errorf("%d of %d keys seen; missing %q...", got, len(pre), missing)
	}
	return nil
}

// TestRangePagesWhileWriting loads 100,000 keys with POST /v1/tx/batch and
// pages through them through a follower, linearizable, while two writers
// add keys between them and update existing ones: each key there from
// the start is seen exactly once, in key order.
func TestRangePagesWhileWriting(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	leader := mustLeaderID(ctx, t, c)
	base := c.URL(leader)
	const n, perTx, perBatch = 100_000, 1000, 10
	key := func(i int) string { return fmt.Sprintf("big/%06d", i) }
	start := time.Now()
	for b := 0; b < n/(perTx*perBatch); b++ {
		var txs strings.Builder
		for tx := range perBatch {
			if tx > 0 {
				txs.WriteByte(',')
			}
			txs.WriteString(`{"ops":[`)
			for op := range perTx {
				if op > 0 {
					txs.WriteByte(',')
				}
				fmt.Fprintf(&txs, `{"op":"put","key":%q,"value":%d}`, key((b*perBatch+tx)*perTx+op), op)
			}
			txs.WriteString(`]}`)
		}
		// 30 s, as in rywSubmit.
		status, body := httpDo(ctx, t, http.MethodPost, base+"/v1/tx/batch?timeout=30s", `{"txs":[`+txs.String()+`]}`)
		var br wire.BatchResponse
		if status != http.StatusOK || json.Unmarshal(body, &br) != nil || len(br.Results) != perBatch {
			t.Fatalf("batch %d = %d %.300s", b, status, body)
		}
		for _, r := range br.Results {
			if r.Status != wire.StatusCommitted {
				t.Fatalf("batch %d: %+v", b, r)
			}
		}
	}
	t.Logf("loaded %d keys in %v", n, time.Since(start).Round(time.Millisecond))
	pre := make([]string, n)
	for i := range n {
		pre[i] = key(i)
	}

	// Writers: new keys between the old ones ("big/000123x"), and updates.
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var writes [2]int
	for w := range 2 {
		wg.Go(func() {
			cl := client.NewClient(client.ClientConfig{Endpoints: []string{c.URL(c.Nodes()[w].ID())}, Timeout: 10 * time.Second})
			for i := 0; wctx.Err() == nil; i++ {
				at := (i*7919 + w*50_000) % n
				ops := []wire.Op{
					{Op: wire.OpPut, Key: key(at) + "x", Value: json.RawMessage(`1`)},
					{Op: wire.OpPut, Key: key((at + 1) % n), Value: json.RawMessage(fmt.Sprint(i))},
				}
				if _, err := cl.Submit(wctx, wire.TxRequest{Ops: ops}, wire.SubmitOptions{}); err != nil && wctx.Err() == nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
				writes[w]++
			}
		})
	}
	reader := client.NewClient(client.ClientConfig{Endpoints: []string{c.URL(aFollower(c, leader))}, Timeout: 10 * time.Second})
	var seen []string
	pages := 0
	start = time.Now()
	err := reader.RangeAll(ctx, "big/", client.RangeOptions{Limit: wire.MaxRangeLimit, KeysOnly: true}, func(p wire.KVPage) error {
		pages++
		for _, kv := range p.KVs {
			seen = append(seen, kv.Key)
		}
		return nil
	})
	took := time.Since(start)
	stop()
	wg.Wait()
	if err != nil {
		t.Fatalf("RangeAll = %v", err)
	}
	t.Logf("paged %d keys in %d pages in %v while %d writes went on", len(seen), pages, took.Round(time.Millisecond), writes[0]+writes[1])
	if err := checkPaged(pre, seen); err != nil {
		t.Fatal(err)
	}
	if writes[0]+writes[1] == 0 {
		t.Error("no write went on while paging")
	}
	// The checker fails on a page sequence that repeats, skips or goes back.
	for _, bad := range [][]string{
		{"big/000000", "big/000000", "big/000001"},
		{"big/000000"},
		{"big/000001", "big/000000"},
	} {
		if checkPaged([]string{"big/000000", "big/000001"}, bad) == nil {
			t.Errorf("checkPaged passed %q", bad)
		}
	}
}

// TestRangeBadParams asks a real node for range reads with bad parameters:
// each is a 400 invalid_parameter naming the parameter and its value.
func TestRangeBadParams(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	base := c.URL(mustLeaderID(ctx, t, c))
	for _, tc := range []struct{ query, want string }{
		{"limit=0", `limit="0"`},
		{"limit=-1", `limit="-1"`},
		{"limit=abc", `limit="abc"`},
		{"limit=1000000", `limit="1000000": want an integer from 1 to 1000`},
		{"keys_only=maybe", `keys_only="maybe"`},
		{"consistency=strong", `consistency="strong"`},
		{"prefix=a&colour=red", "colour"},
	} {
		status, body := httpDo(ctx, t, http.MethodGet, base+"/v1/kv?"+tc.query, "")
		var e struct{ Error wire.ErrorBody }
		if status != http.StatusBadRequest || json.Unmarshal(body, &e) != nil || e.Error.Code != wire.CodeInvalidParam || !strings.Contains(e.Error.Message, tc.want) {
			t.Errorf("GET /v1/kv?%s = %d %s, want 400 invalid_parameter naming %s", tc.query, status, body, tc.want)
		}
	}
	// After without a prefix is allowed: the keys of every prefix after it.
	rywSubmit(ctx, t, base, `{"ops":[{"op":"put","key":"a","value":1},{"op":"put","key":"b","value":2}]}`)
	status, body := httpDo(ctx, t, http.MethodGet, base+"/v1/kv?after=a", "")
	var p wire.KVPage
	if err := decodeOK(status, body, &p); err != nil || len(p.KVs) == 0 || p.KVs[0].Key != "b" {
		t.Errorf("GET /v1/kv?after=a = %d %s, want b first", status, body)
	}
}

// TestRangeScoped reads ranges with auth on through every node, as a
// credential scoped to a/: only its keys, never a hidden one or a next that
// names one, paging one key at a time; and the other read routes through a
// follower still filter.
func TestRangeScoped(t *testing.T) {
	sc := startSecureCluster(t, 3)
	leader := sc.leader(t)
	sc.submit(t, leader, sc.tok(credWriter), putBody("", "a/1", "a/2", "a0", "b/1", "ab", "a/3"))
	sc.submit(t, leader, sc.tok(credWriter), `{"ops":[{"op":"commit_offset","group":"a/g","offset":1},{"op":"commit_offset","group":"b/g","offset":1}]}`)
	hidden := []string{"a0", "b/1", "ab", "b/g", "_txlog/"}
	for i := range sc.addrs {
		var keys []string
		after := ""
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatalf("node %d: more than 10 pages", i+1)
			}
			a := sc.do(t, i, sc.tok(credAReader), req{method: http.MethodGet, path: "/v1/kv?limit=1&after=" + url.QueryEscape(after)})
			var p wire.KVPage
			if err := decodeOK(a.status, a.body, &p); err != nil {
				t.Fatalf("node %d: %v", i+1, err)
			}
			if l := leaks(a.body, hidden); len(l) > 0 {
				t.Fatalf("node %d: page %s shows %q", i+1, a.body, l)
			}
			for _, kv := range p.KVs {
				keys = append(keys, kv.Key)
			}
			if !p.More {
				break
			}
			after = p.Next
		}
		if got := strings.Join(keys, ","); got != "a/1,a/2,a/3" {
			t.Errorf("node %d: a/ reader paged %s, want a/1,a/2,a/3", i+1, got)
		}
		a := sc.do(t, i, sc.tok(credAReader), req{method: http.MethodGet, path: "/v1/kv?prefix=b/"})
		if a.status != http.StatusOK || len(leaks(a.body, hidden)) > 0 || !strings.Contains(string(a.body), `"kvs":[]`) {
			t.Errorf("node %d: prefix b/ as a/ reader = %s, want an empty page", i+1, a)
		}
		a = sc.do(t, i, sc.tok(credAReader), req{method: http.MethodGet, path: "/v1/consumers"})
		if a.status != http.StatusOK || len(leaks(a.body, hidden)) > 0 || !strings.Contains(string(a.body), "a/g") {
			t.Errorf("node %d: consumers as a/ reader = %s", i+1, a)
		}
		a = sc.do(t, i, sc.tok(credReader), req{method: http.MethodGet, path: "/v1/kv?keys_only=true"})
		if a.status != http.StatusOK || strings.Contains(string(a.body), "_txlog/") || !strings.Contains(string(a.body), "b/1") {
			t.Errorf("node %d: unscoped reader = %s, want b/1 and no reserved key", i+1, a)
		}
	}
	if a := sc.do(t, 0, cred{}, req{method: http.MethodGet, path: "/v1/kv"}); a.status != http.StatusUnauthorized {
		t.Errorf("range without a credential = %s, want 401", a)
	}
}

// TestReadsWithoutLeader stops two of three nodes and reads every route
// through the third: by default each answers as a kv read does then (503
// no_leader), and with consistency=stale each answers from the node's own
// state.
func TestReadsWithoutLeader(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	leader := mustLeaderID(ctx, t, c)
	base := c.URL(leader)
	res := rywSubmit(ctx, t, base, `{"idempotency_key":"nl-1","ops":[{"op":"put","key":"nl/a","value":1},{"op":"commit_offset","group":"nl-g","offset":1}]}`)
	cl := client.NewClient(client.ClientConfig{Endpoints: []string{base}, Timeout: 10 * time.Second})
	if _, err := cl.AcquireLease(ctx, "nl/l", "h", time.Hour); err != nil {
		t.Fatal(err)
	}
	survivor := aFollower(c, leader)
	waitUntil(ctx, t, "the lease on "+survivor, func() bool {
		status, _ := httpDo(ctx, t, http.MethodGet, c.URL(survivor)+"/v1/leases/nl/l?consistency=stale", "")
		return status == http.StatusOK
	})
	for _, p := range c.Nodes() {
		if p.ID() != survivor {
			if err := p.Kill(); err != nil {
				t.Fatal(err)
			}
		}
	}
	surl := c.URL(survivor)
	waitUntil(ctx, t, survivor+" without a leader", func() bool {
		status, body := httpDo(ctx, t, http.MethodGet, surl+"/v1/cluster?consistency=stale", "")
		var st wire.ClusterStatus
		return status == http.StatusOK && json.Unmarshal(body, &st) == nil && st.LeaderID == ""
	})
	paths := []string{"/v1/kv/nl/a", "/v1/kv?prefix=nl/", "/v1/tx/" + res.TxID.String(), "/v1/tx?idempotency_key=nl-1",
		"/v1/leases/nl/l", "/v1/leases", "/v1/consumers/nl-g", "/v1/consumers", "/v1/cluster"}
	type got struct {
		status int
		code   string
	}
	read := func(consistency string) map[string]got {
		var mu sync.Mutex
		out := map[string]got{}
		var wg sync.WaitGroup
		for _, p := range paths {
			wg.Go(func() {
				sep := "?"
				if strings.Contains(p, "?") {
					sep = "&"
				}
				u := surl + p
				if consistency != "" {
					u += sep + "consistency=" + consistency
				}
				status, body := rywGet(ctx, u)
				var e struct{ Error wire.ErrorBody }
				_ = json.Unmarshal(body, &e)
				mu.Lock()
				out[p] = got{status, e.Error.Code}
				mu.Unlock()
			})
		}
		wg.Wait()
		return out
	}
	def := read("")
	for _, p := range paths {
		if def[p] != def["/v1/kv/nl/a"] || def[p].code != wire.CodeNoLeader {
			t.Errorf("GET %s without a leader = %+v, want as GET /v1/kv/nl/a: %+v (no_leader)", p, def[p], def["/v1/kv/nl/a"])
		}
	}
	for p, g := range read(wire.ConsistencyStale) {
		if g.status != http.StatusOK {
			t.Errorf("GET %s?consistency=stale without a leader = %+v, want 200", p, g)
		}
	}
}
