package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/auth"
	"github.com/txlog/txlog/txid"
)

// fakeAuth is an Authenticator over a map from bearer token to Principal.
type fakeAuth map[string]*auth.Principal

func (f fakeAuth) Authenticate(r *http.Request) (*auth.Principal, error) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return nil, fmt.Errorf("%w: no credential", auth.ErrUnauthenticated)
	}
	p, ok := f[tok]
	if !ok {
		return nil, fmt.Errorf("%w: unknown token", auth.ErrUnauthenticated)
	}
	return p, nil
}

// The credentials of the tests: a token per role, without prefixes, and
// scoped ones that see only "al/".
var testAuth = fakeAuth{
	"read":   {Name: "reader", Role: auth.RoleRead, Via: "token"},
	"write":  {Name: "writer", Role: auth.RoleWrite, Via: "token"},
	"admin":  {Name: "root", Role: auth.RoleAdmin, Via: "token"},
	"ral":    {Name: "al-reader", Role: auth.RoleRead, Prefixes: []string{"al/"}, Via: "token"},
	"wal":    {Name: "al-writer", Role: auth.RoleWrite, Prefixes: []string{"al/"}, Via: "token"},
	"admal":  {Name: "al-admin", Role: auth.RoleAdmin, Prefixes: []string{"al/"}, Via: "cert"},
	"wal-bo": {Name: "al-bo-writer", Role: auth.RoleWrite, Prefixes: []string{"al/", "bo/"}, Via: "token"},
}

// testHost is the Host of the tests' requests: an IP literal, always allowed.
const testHost = "127.0.0.1:7000"

// world is a Backend with every optional part (leases, consumer groups, a
// LogFollower) over a log whose entries touch names in and out of the scope
// "al/": the keys under "bee/" and "_txlog/" are what a scoped reader must
// never see (hiddenNames).
type world struct {
	*memLog
	mu     sync.Mutex
	writes []string // every write the backend was asked for
	leases []wire.Lease
	groups []wire.ConsumerGroup
}

// hiddenNames are the substrings no answer to an "al/" credential may hold.
var hiddenNames = []string{"bee/", "_txlog/", "unreadable"}

// pendingID is the txid the world answers pending for.
const pendingID = txid.ID(0x0999)

func newWorld() *world {
	w := &world{memLog: newMemLog()}
	put := func(k string) wire.Op { return wire.Op{Op: wire.OpPut, Key: k, Value: json.RawMessage("1")} }
	entry := func(i uint64, ops ...wire.Op) wire.LogEntry {
		vs := map[string]uint64{}
		for _, op := range ops {
			if op.Key != "" {
				vs[op.Key] = i
			}
		}
		return wire.LogEntry{Index: i, Term: 1, TxID: txid.ID(100 + i), IdempotencyKey: fmt.Sprintf("k%d", i), Status: wire.StatusCommitted, Ops: ops, Versions: vs}
	}
	e5 := entry(5, put("al/3"))
	e5.Fence = &wire.Fence{Lease: "bee/l", Token: 6}
	e9 := entry(9, put("al/5"))
	e9.Status, e9.Versions, e9.Conflict = wire.StatusRejected, nil, &wire.Conflict{Key: "bee/9", Expected: 1, Actual: 2}
	w.entries = []wire.LogEntry{
		entry(1, put("al/1")),
		entry(2, put("bee/1")),
		entry(3, put("al/2"), put("bee/2")),
		entry(4, wire.Op{Op: wire.OpCommitOffset, Group: "bee/g", Offset: 3}),
		e5,
		{Index: 6, Ops: []wire.Op{}, Status: wire.StatusUnreadable, Unreadable: true, Record: []byte("unreadable")},
		entry(7, put("_txlog/audit/x")),
		entry(8, put("al/4")),
		e9,
	}
	w.leases = []wire.Lease{{Name: "al/l", Holder: "h1", Token: 5, ExpiresIn: "5s"}, {Name: "bee/l", Holder: "h2", Token: 6, ExpiresIn: "5s"}}
	w.groups = []wire.ConsumerGroup{{Group: "al/g", Offset: 1}, {Group: "bee/g", Offset: 3}}
	b := &w.memLog.fakeBackend
	b.SubmitFunc = func(_ context.Context, tx wire.TxRequest, _ wire.SubmitOptions) (wire.TxResult, error) {
		w.wrote(fmt.Sprint(tx.Ops))
		return committed(tx), nil
	}
	b.SubmitBatchFunc = func(_ context.Context, txs []wire.TxRequest, _ wire.SubmitOptions) ([]wire.TxResult, error) {
		out := make([]wire.TxResult, len(txs))
		for i, tx := range txs {
			w.wrote(fmt.Sprint(tx.Ops))
			out[i] = committed(tx)
		}
		return out, nil
	}
	b.TxFunc = func(_ context.Context, id txid.ID, _ time.Duration) (wire.TxResult, error) {
		if id == pendingID {
			return wire.TxResult{TxID: id, Status: wire.StatusPending, Versions: map[string]uint64{"bee/p": 1}}, nil
		}
		return w.result(func(e wire.LogEntry) bool { return e.TxID == id })
	}
	b.TxByIdempotencyKeyFunc = func(_ context.Context, key string, _ time.Duration) (wire.TxResult, error) {
		return w.result(func(e wire.LogEntry) bool { return e.IdempotencyKey == key })
	}
	b.GetFunc = func(_ context.Context, key string, _ wire.ReadOptions) (wire.KV, error) {
		return wire.KV{Key: key, Value: json.RawMessage("1"), Version: 1, Index: 1}, nil
	}
	b.ClusterFunc = func(context.Context) (wire.ClusterStatus, error) {
		return wire.ClusterStatus{ID: "n1", State: "leader"}, nil
	}
	// The keys of a range read: in and out of the scope, as the log has them.
	b.RangeFunc = func(_ context.Context, req wire.RangeRequest, _ wire.ReadOptions) (wire.KVPage, error) {
		return rangeOver([]string{"_txlog/audit/x", "al/1", "al/2", "al/3", "al/4", "al/5", "bee/1", "bee/2"}, req), nil
	}
	b.JoinFunc = func(context.Context, wire.JoinRequest) (wire.JoinResult, error) {
		w.wrote("join")
		return wire.JoinResult{NodeNumber: 2}, nil
	}
	b.RemoveFunc = func(context.Context, string) error { w.wrote("remove"); return nil }
	b.TransferLeadershipFunc = func(context.Context, wire.TransferRequest) (wire.TransferResult, error) {
		w.wrote("transfer")
		return wire.TransferResult{LeaderID: "n2"}, nil
	}
	return w
}

func committed(tx wire.TxRequest) wire.TxResult {
	vs := map[string]uint64{}
	for _, op := range tx.Ops {
		if op.Key != "" {
			vs[op.Key] = 1
		}
	}
	return wire.TxResult{TxID: testID, Status: wire.StatusCommitted, Index: 100, Versions: vs}
}

func (w *world) wrote(what string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes = append(w.writes, what)
}

func (w *world) written() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.writes)
}

// result answers a lookup with the entry that match picks.
func (w *world) result(match func(wire.LogEntry) bool) (wire.TxResult, error) {
	w.memLog.mu.Lock()
	defer w.memLog.mu.Unlock()
	for _, e := range w.entries {
		if !e.Unreadable && match(e) {
			return wire.TxResult{TxID: e.TxID, Status: e.Status, IdempotencyKey: e.IdempotencyKey, Index: e.Index, Term: e.Term, Versions: e.Versions, Conflict: e.Conflict}, nil
		}
	}
	return wire.TxResult{}, wire.ErrNotFound
}

func (w *world) AcquireLease(_ context.Context, req wire.LeaseRequest, _ bool) (wire.LeaseResult, error) {
	w.wrote("acquire " + req.Name)
	return wire.LeaseResult{Lease: wire.Lease{Name: req.Name, Holder: req.Holder, Token: 9, ExpiresIn: "5s"}, Acquired: true}, nil
}

func (w *world) ReleaseLease(_ context.Context, name, _ string, _ uint64, _ bool) error {
	w.wrote("release " + name)
	return nil
}

func (w *world) Lease(_ context.Context, name string, _ time.Duration, _ uint64, _ wire.ReadOptions) (wire.Lease, error) {
	for _, l := range w.leases {
		if l.Name == name {
			return l, nil
		}
	}
	return wire.Lease{}, wire.ErrNotFound
}

func (w *world) Leases(context.Context, wire.ReadOptions) ([]wire.Lease, error) {
	return slices.Clone(w.leases), nil
}

func (w *world) Consumer(_ context.Context, group string, _ wire.ReadOptions) (wire.ConsumerGroup, error) {
	for _, g := range w.groups {
		if g.Group == group {
			return g, nil
		}
	}
	return wire.ConsumerGroup{}, wire.ErrNotFound
}

func (w *world) Consumers(context.Context, wire.ReadOptions) ([]wire.ConsumerGroup, error) {
	return slices.Clone(w.groups), nil
}

var (
	_ LeaseBackend    = (*world)(nil)
	_ ConsumerBackend = (*world)(nil)
	_ LogFollower     = (*world)(nil)
)

// worldConfig is the Config of the tests of auth: with auth (on), a
// dashboard and /metrics, and audit records kept in *audits.
func worldConfig(on bool, audits *[]wire.AuditRecord) Config {
	cfg := testConfig
	cfg.MaxKeyBytes = 64
	cfg.MetricsHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "metrics\n") })
	cfg.Dashboard = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"dashboard":"`+r.URL.Path+`"}`+"\n")
	})
	cfg.AdvertiseHost = "node1.example"
	if on {
		cfg.Auth = testAuth
		var mu sync.Mutex
		cfg.Audit = func(rec wire.AuditRecord) {
			mu.Lock()
			defer mu.Unlock()
			if audits != nil {
				*audits = append(*audits, rec)
			}
		}
	}
	return cfg
}

// ask sends one request to h with the token (none: "") and the headers
// hdr (name, value pairs), from testHost, and returns the answer. A request
// to the log stream runs with a context already done, so that the stream
// answers what it has and ends.
func ask(t *testing.T, h http.Handler, method, target, body, token string, hdr ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	req.Host = testHost
	req.RemoteAddr = "192.0.2.7:5555"
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	if strings.HasPrefix(target, wire.LogStreamPath) {
		ctx, cancel := context.WithCancel(req.Context())
		cancel()
		req = req.WithContext(ctx)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// rangeOver answers req over keys (sorted) as a store would: the keys in
// req.Spans strictly after req.After, at most req.Limit.
func rangeOver(keys []string, req wire.RangeRequest) wire.KVPage {
	page := wire.KVPage{Index: 9, KVs: []wire.KV{}, Next: req.After}
	for _, k := range keys {
		in := false
		for _, s := range req.Spans {
			in = in || (k >= s.Start && (s.End == "" || k < s.End))
		}
		if !in || (req.After != "" && k <= req.After) {
			continue
		}
		if len(page.KVs) == req.Limit {
			page.More = true
			break
		}
		kv := wire.KV{Key: k, Version: 1, Index: 1}
		if !req.KeysOnly {
			kv.Value = json.RawMessage("1")
		}
		page.KVs = append(page.KVs, kv)
		page.Next = k
	}
	return page
}
