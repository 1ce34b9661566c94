package api

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/auth"
	"github.com/txlog/txlog/txid"
)

// scopedRead is one read of the sweep that a credential scoped to "al/"
// makes over the world: want is the status a correct server answers.
type scopedRead struct {
	target string
	want   int
}

// scopedReads reads every path that gives a key, group or lease name, each
// way that reaches a name outside "al/" (newWorld).
func scopedReads() []scopedRead {
	reads := []scopedRead{
		{"/v1/log?from=1&limit=1000", 200},
		{"/v1/log?from=2&limit=1", 200},
		{"/v1/log?from=1&limit=1000&prefix=bee/", 200},
		{"/v1/log?from=1&wait=1ms", 200},
		{"/v1/log/stream?from=1", 200},
		{"/v1/leases", 200},
		{"/v1/consumers", 200},
		{"/v1/tx/" + pendingID.String(), 200},
		{"/v1/kv/bee/1", 403},
		{"/v1/kv/_txlog/audit/x", 403},
		{"/v1/leases/bee/l", 403},
		{"/v1/consumers/bee/g", 403},
	}
	// Every decided transaction that touches a hidden name: by txid and
	// by idempotency key, not found.
	for _, i := range []int{2, 3, 4, 5, 7, 9} {
		reads = append(reads,
			scopedRead{"/v1/tx/" + txid.ID(100+i).String(), 404},
			scopedRead{fmt.Sprintf("/v1/tx?idempotency_key=k%d", i), 404})
	}
	return reads
}

// leaks is the checker of the scope: the problems of the answers to
// scopedReads that srv gave token. An answer leaks when its status is not
// the one wanted, when a 200 holds a hidden name (hiddenNames), or when a
// transaction outside the scope is answered otherwise than one never heard
// of (the existence of a transaction is not told either).
func leaks(t *testing.T, srv http.Handler, token string) []string {
	t.Helper()
	unknown := ask(t, srv, "GET", "/v1/tx/"+txid.ID(0xdead).String(), "", token)
	unknownKey := ask(t, srv, "GET", "/v1/tx?idempotency_key=never", "", token)
	var out []string
	for _, rd := range scopedReads() {
		rec := ask(t, srv, "GET", rd.target, "", token)
		body := rec.Body.String()
		switch {
		case rec.Code != rd.want:
			out = append(out, fmt.Sprintf("GET %s = %d, want %d: %s", rd.target, rec.Code, rd.want, body))
		case rec.Code == 200:
			for _, h := range hiddenNames {
				if strings.Contains(body, h) {
					out = append(out, fmt.Sprintf("GET %s shows %q: %s", rd.target, h, body))
				}
			}
		case rec.Code == 404:
			// The answer names what was asked for, and only that.
			ref, refID, id := unknown, txid.ID(0xdead).String(), strings.TrimPrefix(rd.target, "/v1/tx/")
			if k, ok := strings.CutPrefix(rd.target, "/v1/tx?idempotency_key="); ok {
				ref, refID, id = unknownKey, "never", k
			}
			if strings.ReplaceAll(body, id, "ID") != strings.ReplaceAll(ref.Body.String(), refID, "ID") {
				out = append(out, fmt.Sprintf("GET %s = %s, unlike an unknown one's %s", rd.target, body, ref.Body))
			}
		}
	}
	return out
}

// TestScopeNoLeak: a credential scoped to "al/" (read, write or admin) sees
// no name outside it on any read path.
func TestScopeNoLeak(t *testing.T) {
	for _, tok := range []string{"ral", "wal", "admal"} {
		t.Run(tok, func(t *testing.T) {
			srv := NewServer(worldConfig(true, nil), newWorld())
			for _, l := range leaks(t, srv, tok) {
				t.Error(l)
			}
		})
	}
}

// TestScopeCheckerCatchesLeaks: the checker fails a server whose scope is
// broken: one that drops the credential's prefixes (the bug of a filter
// that forgets them) leaks on every read of the sweep, and so does a server
// with auth off.
func TestScopeCheckerCatchesLeaks(t *testing.T) {
	broken := fakeAuth{"ral": {Name: "al-reader", Role: auth.RoleRead, Via: "token"}} // the scope lost
	cfg := worldConfig(true, nil)
	cfg.Auth = broken
	off := worldConfig(false, nil)
	for name, srv := range map[string]*Server{"prefixes dropped": NewServer(cfg, newWorld()), "auth off": NewServer(off, newWorld())} {
		got := leaks(t, srv, "ral")
		for _, rd := range scopedReads() {
			// Reserved names stay hidden from a reader without prefixes, and
			// a pending transaction's versions from every reader.
			reserved := rd.target == "/v1/kv/_txlog/audit/x" || rd.target == "/v1/tx/"+pendingID.String() || rd.target == "/v1/tx/"+txid.ID(107).String() || rd.target == "/v1/tx?idempotency_key=k7"
			if reserved && name == "prefixes dropped" {
				continue
			}
			found := false
			for _, l := range got {
				found = found || strings.HasPrefix(l, "GET "+rd.target+" ")
			}
			if !found {
				t.Errorf("%s: the checker found no leak in GET %s (%d others found)", name, rd.target, len(got))
			}
		}
	}
}

// TestScopedLogPages: a page's limit counts only the entries delivered, its
// next moves past the ones skipped, and an entry touching a name outside
// the scope (a key, a group, a fence's lease, a conflict) is never delivered,
// nor an unreadable one or one of the reserved keys to a non-admin.
func TestScopedLogPages(t *testing.T) {
	srv := NewServer(worldConfig(true, nil), newWorld())
	tests := []struct {
		token, target string
		want          []uint64
		next          uint64
	}{
		{"ral", "/v1/log?from=1&limit=1", []uint64{1}, 2},
		{"ral", "/v1/log?from=2&limit=1", []uint64{8}, 9},
		{"ral", "/v1/log?from=1&limit=2", []uint64{1, 8}, 9},
		{"ral", "/v1/log?from=9&limit=5", nil, 10},
		{"ral", "/v1/log?from=1&prefix=al/", []uint64{1, 8}, 10},
		{"ral", "/v1/log?from=1&prefix=bee/", nil, 10},
		{"admal", "/v1/log?from=1", []uint64{1, 8}, 10},
		{"wal-bo", "/v1/log?from=1", []uint64{1, 8}, 10},
		{"read", "/v1/log?from=1", []uint64{1, 2, 3, 4, 5, 8, 9}, 10},
		{"read", "/v1/log?from=6&limit=2", []uint64{8, 9}, 10},
		{"admin", "/v1/log?from=1", []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9}, 10},
	}
	for _, tt := range tests {
		rec := ask(t, srv, "GET", tt.target, "", tt.token)
		if rec.Code != 200 {
			t.Fatalf("GET %s as %s = %d %s", tt.target, tt.token, rec.Code, rec.Body)
		}
		samePage(t, tt.token+" "+tt.target, decodeAs[wire.LogPage](t, rec.Body.Bytes()), tt.want, tt.next)
	}
	// A reader that follows next gets every entry it sees, once.
	var got []uint64
	for from := uint64(1); ; {
		page := decodeAs[wire.LogPage](t, ask(t, srv, "GET", fmt.Sprintf("/v1/log?from=%d&limit=1", from), "", "ral").Body.Bytes())
		got = append(got, indexes(page)...)
		if page.Next == from {
			break
		}
		from = page.Next
	}
	if !slices.Equal(got, []uint64{1, 8}) {
		t.Fatalf("following next: %v, want [1 8]", got)
	}
}

// TestScopedLongPoll: a long poll is not answered by an entry outside the
// scope; it waits on for one inside.
func TestScopedLongPoll(t *testing.T) {
	w := newWorld()
	srv := NewServer(worldConfig(true, nil), w)
	w.mu.Lock()
	waits := w.memLog.waits
	w.mu.Unlock()
	done := make(chan *httptest.ResponseRecorder, 1)
	go func() { done <- ask(t, srv, "GET", "/v1/log?from=10&wait=30s", "", "ral") }()
	w.waitedFor(t, waits+1)
	w.append(10, "bee/x")
	w.waitedFor(t, waits+3) // woken, skipped 10, waiting again
	select {
	case rec := <-done:
		t.Fatalf("answered on an entry out of scope: %d %s", rec.Code, rec.Body)
	default:
	}
	w.append(11, "al/x")
	rec := <-done
	if rec.Code != 200 {
		t.Fatalf("long poll = %d %s", rec.Code, rec.Body)
	}
	samePage(t, "long poll", decodeAs[wire.LogPage](t, rec.Body.Bytes()), []uint64{11}, 12)
}

// TestScopedStream: the stream of a scoped credential carries only the
// entries it sees, the ones applied while it streams included; a reader
// without prefixes gets all but the reserved and unreadable ones; and no
// stream gets a page another that sees more shared (the stream cache).
func TestScopedStream(t *testing.T) {
	w := newWorld()
	ts := httptest.NewServer(NewServer(worldConfig(true, nil), w))
	defer ts.Close()
	open := func(token string) (*bufio.Reader, func()) {
		req, _ := http.NewRequest("GET", ts.URL+"/v1/log/stream?from=1", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := ts.Client().Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("stream as %s: %v %v", token, resp, err)
		}
		return bufio.NewReader(resp.Body), func() { resp.Body.Close() }
	}
	// ids reads events up to the one with index last, and returns their
	// ids; no line may hold one of hidden.
	ids := func(br *bufio.Reader, last uint64, hidden ...string) []uint64 {
		var out []uint64
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("stream: %v after %v", err, out)
			}
			for _, h := range hidden {
				if strings.Contains(line, h) {
					t.Fatalf("stream shows %q: %s", h, line)
				}
			}
			var id uint64
			if _, err := fmt.Sscanf(line, "id: %d", &id); err == nil {
				out = append(out, id)
				if id == last {
					return out
				}
			}
		}
		t.Fatalf("stream: no event %d within 10s, got %v", last, out)
		return nil
	}
	all, closeAll := open("admin") // fills the shared pages first
	defer closeAll()
	if got := ids(all, 9); !slices.Equal(got, []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9}) {
		t.Fatalf("admin stream: %v", got)
	}
	reader, closeReader := open("read")
	defer closeReader()
	if got := ids(reader, 9, "_txlog/", "unreadable"); !slices.Equal(got, []uint64{1, 2, 3, 4, 5, 8, 9}) {
		t.Fatalf("reader stream: %v", got)
	}
	scoped, closeScoped := open("ral")
	defer closeScoped()
	if got := ids(scoped, 8, hiddenNames...); !slices.Equal(got, []uint64{1, 8}) {
		t.Fatalf("scoped stream: %v, want [1 8]", got)
	}
	w.append(10, "bee/x")
	w.append(11, "_txlog/audit/y")
	w.append(12, "al/x")
	if got := ids(all, 12); !slices.Equal(got, []uint64{10, 11, 12}) {
		t.Fatalf("admin stream after applies: %v", got)
	}
	if got := ids(reader, 12, "_txlog/"); !slices.Equal(got, []uint64{10, 12}) {
		t.Fatalf("reader stream after applies: %v, want [10 12]", got)
	}
	if got := ids(scoped, 12, hiddenNames...); !slices.Equal(got, []uint64{12}) {
		t.Fatalf("scoped stream after applies: %v, want [12]", got)
	}
}

// TestScopedWrites: a write that touches a name outside the credential's
// scope, or a reserved one, is refused 403 naming it, and nothing reaches
// the backend; the rest go through.
func TestScopedWrites(t *testing.T) {
	tests := []struct {
		name, token, method, target, body string
		status                            int
		msg                               string
	}{
		{"in scope", "wal", "POST", "/v1/tx", `{"ops":[{"op":"put","key":"al/x","value":1}]}`, 200, ""},
		{"one key out", "wal", "POST", "/v1/tx", `{"ops":[{"op":"put","key":"al/x","value":1},{"op":"delete","key":"bee/x"}]}`, 403, `ops[1].key "bee/x": outside the credential's key scope`},
		{"prefix of the prefix", "wal", "POST", "/v1/tx", `{"ops":[{"op":"put","key":"al","value":1}]}`, 403, `ops[0].key "al"`},
		{"fence out", "wal", "POST", "/v1/tx", `{"fence":{"lease":"bee/l","token":6},"ops":[{"op":"put","key":"al/x","value":1}]}`, 403, `fence.lease "bee/l"`},
		{"group out", "wal", "POST", "/v1/tx", `{"ops":[{"op":"commit_offset","group":"bee/g","offset":4}]}`, 403, `ops[0].group "bee/g"`},
		{"offset of a group out", "wal", "POST", "/v1/consumers/bee/g/offset", `{"offset":4}`, 403, `group "bee/g"`},
		{"offset of a group in", "wal", "POST", "/v1/consumers/al/g/offset", `{"offset":4}`, 200, ""},
		{"offset fenced out", "wal", "POST", "/v1/consumers/al/g/offset", `{"offset":4,"fence":{"lease":"bee/l","token":6}}`, 403, `fence.lease "bee/l"`},
		{"batch with one out", "wal", "POST", "/v1/tx/batch", `{"txs":[{"ops":[{"op":"put","key":"al/x","value":1}]},{"ops":[{"op":"put","key":"bee/x","value":1}]}]}`, 403, `txs[1].ops[0].key "bee/x"`},
		{"batch in", "wal-bo", "POST", "/v1/tx/batch", `{"txs":[{"ops":[{"op":"put","key":"al/x","value":1}]},{"ops":[{"op":"put","key":"bo/x","value":1}]}]}`, 200, ""},
		{"reserved key by an admin", "admin", "POST", "/v1/tx", `{"ops":[{"op":"put","key":"_txlog/audit/forged","value":1}]}`, 403, "reserved for the node"},
		{"reserved key in a batch", "admin", "POST", "/v1/tx/batch", `{"txs":[{"ops":[{"op":"delete","key":"_txlog/audit/1"}]}]}`, 403, "reserved"},
		{"lease out", "wal", "PUT", "/v1/leases/bee/l", `{"holder":"h","ttl":"5s"}`, 403, `name "bee/l"`},
		{"lease release out", "wal", "DELETE", "/v1/leases/bee/l?holder=h2&token=6", ``, 403, `name "bee/l"`},
		{"lease reserved", "admin", "PUT", "/v1/leases/_txlog/l", `{"holder":"h","ttl":"5s"}`, 403, "reserved"},
		{"lease in", "wal", "PUT", "/v1/leases/al/l", `{"holder":"h","ttl":"5s"}`, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld()
			rec := ask(t, NewServer(worldConfig(true, nil), w), tt.method, tt.target, tt.body, tt.token)
			if rec.Code != tt.status {
				t.Fatalf("= %d %s, want %d", rec.Code, rec.Body, tt.status)
			}
			if tt.status == 200 {
				if len(w.written()) == 0 {
					t.Fatal("nothing reached the backend")
				}
				return
			}
			if e := errorOf(t, rec); e.Code != wire.CodeForbidden || !strings.Contains(e.Message, tt.msg) {
				t.Fatalf("error %+v, want forbidden with %q", e, tt.msg)
			}
			if len(w.written()) > 0 {
				t.Fatalf("refused, and still wrote %v", w.written())
			}
		})
	}
	// With auth off a reserved key is an ordinary one.
	w := newWorld()
	if rec := ask(t, NewServer(worldConfig(false, nil), w), "POST", "/v1/tx", `{"ops":[{"op":"put","key":"_txlog/x","value":1}]}`, ""); rec.Code != 200 {
		t.Fatalf("auth off, reserved key: %d %s", rec.Code, rec.Body)
	}
}

// TestScopedLeaseTokens: a lease's token shows only to write and admin
// credentials.
func TestScopedLeaseTokens(t *testing.T) {
	srv := NewServer(worldConfig(true, nil), newWorld())
	for tok, want := range map[string][]wire.Lease{
		"read":  {{Name: "al/l", Holder: "h1", ExpiresIn: "5s"}, {Name: "bee/l", Holder: "h2", ExpiresIn: "5s"}},
		"ral":   {{Name: "al/l", Holder: "h1", ExpiresIn: "5s"}},
		"wal":   {{Name: "al/l", Holder: "h1", Token: 5, ExpiresIn: "5s"}},
		"write": {{Name: "al/l", Holder: "h1", Token: 5, ExpiresIn: "5s"}, {Name: "bee/l", Holder: "h2", Token: 6, ExpiresIn: "5s"}},
	} {
		rec := ask(t, srv, "GET", "/v1/leases", "", tok)
		if got := decodeAs[wire.LeaseList](t, rec.Body.Bytes()).Leases; !slices.Equal(got, want) {
			t.Errorf("leases as %s = %+v, want %+v", tok, got, want)
		}
		rec = ask(t, srv, "GET", "/v1/leases/al/l", "", tok)
		if got := decodeAs[wire.Lease](t, rec.Body.Bytes()); got != want[0] {
			t.Errorf("lease al/l as %s = %+v, want %+v", tok, got, want[0])
		}
	}
}

// TestScopedTxStatus: a decided transaction in scope is answered whole, by
// txid and by idempotency key; a pending one without versions.
func TestScopedTxStatus(t *testing.T) {
	srv := NewServer(worldConfig(true, nil), newWorld())
	for _, target := range []string{"/v1/tx/" + txid.ID(101).String(), "/v1/tx?idempotency_key=k1", "/v1/tx/" + txid.ID(108).String()} {
		rec := ask(t, srv, "GET", target, "", "ral")
		res := decodeAs[wire.TxResult](t, rec.Body.Bytes())
		if rec.Code != 200 || res.Status != wire.StatusCommitted || len(res.Versions) != 1 {
			t.Fatalf("GET %s = %d %s", target, rec.Code, rec.Body)
		}
	}
	rec := ask(t, srv, "GET", "/v1/tx/"+pendingID.String(), "", "ral")
	if res := decodeAs[wire.TxResult](t, rec.Body.Bytes()); rec.Code != 200 || res.Status != wire.StatusPending || res.Versions != nil {
		t.Fatalf("pending = %d %s, want pending without versions", rec.Code, rec.Body)
	}
}

// TestAuthOffUnchanged: with auth off every answer is what an admin without
// prefixes gets with auth on, and that is everything: every entry, the
// unreadable and the reserved ones included, every lease with its token.
func TestAuthOffUnchanged(t *testing.T) {
	off := NewServer(worldConfig(false, nil), newWorld())
	on := NewServer(worldConfig(true, nil), newWorld())
	targets := []string{"/v1/log?from=1", "/v1/log?from=1&limit=2", "/v1/log/stream?from=1", "/v1/leases", "/v1/leases/bee/l", "/v1/consumers", "/v1/consumers/bee/g", "/v1/kv/_txlog/audit/x", "/v1/kv/bee/1", "/v1/cluster", "/v1/stats", "/v1/events", "/ui/", "/metrics", "/healthz"}
	for i := 1; i <= 9; i++ {
		targets = append(targets, "/v1/tx/"+txid.ID(100+i).String(), fmt.Sprintf("/v1/tx?idempotency_key=k%d", i))
	}
	for _, target := range targets {
		a, b := ask(t, off, "GET", target, "", ""), ask(t, on, "GET", target, "", "admin")
		if a.Code != b.Code || a.Body.String() != b.Body.String() {
			t.Errorf("GET %s: auth off %d %s, admin %d %s", target, a.Code, a.Body, b.Code, b.Body)
		}
	}
	page := decodeAs[wire.LogPage](t, ask(t, off, "GET", "/v1/log?from=1", "", "").Body.Bytes())
	samePage(t, "auth off", page, []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9}, 10)
	ls := decodeAs[wire.LeaseList](t, ask(t, off, "GET", "/v1/leases", "", "").Body.Bytes())
	if len(ls.Leases) != 2 || ls.Leases[1].Token != 6 {
		t.Fatalf("auth off leases: %+v", ls)
	}
	var audits []wire.AuditRecord
	cfg := worldConfig(false, nil)
	cfg.Audit = func(r wire.AuditRecord) { audits = append(audits, r) }
	if rec := ask(t, NewServer(cfg, newWorld()), "DELETE", "/v1/cluster/nodes/n3", "", ""); rec.Code != 200 || len(audits) != 0 {
		t.Fatalf("auth off remove: %d %s, audits %v", rec.Code, rec.Body, audits)
	}
	// A Server that knows no name of its own checks no Host (tests and
	// embedders); node always sets AdvertiseHost.
	if rec := ask(t, NewServer(Config{}, newWorld()), "GET", "/healthz", "", "", "Host", "x"); rec.Code != 200 {
		t.Fatalf("no AdvertiseHost: %d %s", rec.Code, rec.Body)
	}
}

// TestScopedReusedKey: a scoped credential that reuses an idempotency key
// learns that it is taken, not which transaction (maybe outside its scope)
// holds it; an unscoped one gets the txid as before.
func TestScopedReusedKey(t *testing.T) {
	other := txid.ID(0xbee)
	w := newWorld()
	b := &w.memLog.fakeBackend
	b.SubmitFunc = func(_ context.Context, tx wire.TxRequest, _ wire.SubmitOptions) (wire.TxResult, error) {
		return wire.TxResult{}, &wire.KeyReusedError{Key: tx.IdempotencyKey, TxID: other}
	}
	b.SubmitBatchFunc = func(_ context.Context, txs []wire.TxRequest, _ wire.SubmitOptions) ([]wire.TxResult, error) {
		return []wire.TxResult{{Status: wire.StatusUnknown, Error: wire.NewErrorBody(&wire.KeyReusedError{Key: "taken", TxID: other})}}, nil
	}
	srv := NewServer(worldConfig(true, nil), w)
	for tok, showTxID := range map[string]bool{"wal": false, "write": true} {
		rec := ask(t, srv, "POST", "/v1/tx", `{"idempotency_key":"taken","ops":[{"op":"put","key":"al/x","value":1}]}`, tok)
		e := errorOf(t, rec)
		if rec.Code != 422 || e.Code != wire.CodeIdempotencyKeyReused || (e.TxID == other) != showTxID || strings.Contains(e.Message, other.String()) != showTxID {
			t.Fatalf("reused key as %s = %d %s; want the txid shown: %v", tok, rec.Code, rec.Body, showTxID)
		}
		rec = ask(t, srv, "POST", "/v1/tx/batch", `{"txs":[{"idempotency_key":"taken","ops":[{"op":"put","key":"al/x","value":1}]}]}`, tok)
		if rec.Code != 200 || strings.Contains(rec.Body.String(), other.String()) != showTxID || !strings.Contains(rec.Body.String(), wire.CodeIdempotencyKeyReused) {
			t.Fatalf("batch reused key as %s = %d %s; want the txid shown: %v", tok, rec.Code, rec.Body, showTxID)
		}
	}
}
