package api

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/auth"
)

// TestRangeParams: every bad parameter of GET /v1/kv is refused 400
// invalid_parameter naming the parameter, its value and what is wanted,
// before the backend is asked.
func TestRangeParams(t *testing.T) {
	called := false
	b := &fakeBackend{RangeFunc: func(_ context.Context, req wire.RangeRequest, _ wire.ReadOptions) (wire.KVPage, error) {
		called = true
		return wire.KVPage{Next: req.After}, nil
	}}
	for _, tc := range []struct{ query, want string }{
		{"limit=0", `limit="0": want an integer from 1 to 1000`},
		{"limit=-1", `limit="-1": want an integer from 1 to 1000`},
		{"limit=abc", `limit="abc": want an integer from 1 to 1000`},
		{"limit=1001", `limit="1001": want an integer from 1 to 1000`},
		{"limit=99999999999999999999999", `limit="99999999999999999999999"`},
		{"keys_only=maybe", `keys_only="maybe": want one of false, true`},
		{"consistency=eventual", `consistency="eventual": want one of linearizable, leader, stale`},
		{"prefix=" + strings.Repeat("x", 1025), "prefix: 1025 bytes, want at most 1024"},
		{"after=%ff", "after"},
		{"pefix=a", "pefix"},
		{"prefix=a&prefix=b", "prefix"},
	} {
		called = false
		rec := serve(t, Config{}, b, http.MethodGet, "/v1/kv?"+tc.query, "", nil)
		e := errorOf(t, rec)
		if rec.Code != http.StatusBadRequest || !strings.Contains(e.Message, tc.want) || called {
			t.Errorf("?%s = %d %s %q (backend called %v), want 400 naming %q", tc.query, rec.Code, e.Code, e.Message, called, tc.want)
		}
	}
	// Allowed: no prefix (every key), after without prefix, the bounds.
	for _, q := range []string{"", "after=k", "limit=1", "limit=1000", "keys_only=false", "prefix=&after="} {
		if rec := serve(t, Config{}, b, http.MethodGet, "/v1/kv?"+q, "", nil); rec.Code != http.StatusOK {
			t.Errorf("?%s = %d %s, want 200", q, rec.Code, rec.Body)
		}
	}
}

// TestRangeAnswer: the answer's shape, with and without values, and a
// value that is not JSON answered raw.
func TestRangeAnswer(t *testing.T) {
	b := &fakeBackend{RangeFunc: func(_ context.Context, req wire.RangeRequest, _ wire.ReadOptions) (wire.KVPage, error) {
		return wire.KVPage{Index: 7, KVs: []wire.KV{{Key: "a", Value: json.RawMessage(`{"x":1}`), Version: 2, Index: 5}, {Key: "b", Value: json.RawMessage("not json"), Version: 1, Index: 6}}, More: true, Next: "b"}, nil
	}}
	rec := serve(t, Config{}, b, http.MethodGet, "/v1/kv?prefix=", "", nil)
	if want := `{"index":7,"kvs":[{"key":"a","value":{"x":1},"version":2,"index":5},{"key":"b","value":"not json","version":1,"index":6,"raw":"text"}],"more":true,"next":"b"}` + "\n"; rec.Code != 200 || rec.Body.String() != want {
		t.Errorf("answer = %d %s, want %s", rec.Code, rec.Body, want)
	}
	rec = serve(t, Config{}, b, http.MethodGet, "/v1/kv?keys_only=true", "", nil)
	if want := `{"index":7,"kvs":[{"key":"a","version":2,"index":5},{"key":"b","version":1,"index":6}],"more":true,"next":"b"}` + "\n"; rec.Body.String() != want {
		t.Errorf("keys only = %s, want %s", rec.Body, want)
	}
}

// TestRangeSpans: a credential's spans cover exactly the keys it sees; a
// fed bad case (a span list that lets a hidden key through) fails the check.
func TestRangeSpans(t *testing.T) {
	keys := []string{"", "_txlog/a", "_txlog0", "a", "al", "al/", "al/1", "al0", "b/", "b/x", "bee/1", "c", "\xff", "\xff\xff"}
	principals := []*auth.Principal{
		nil,
		{Role: auth.RoleRead},
		{Role: auth.RoleRead, Prefixes: []string{"al/"}},
		{Role: auth.RoleRead, Prefixes: []string{"b", "al/", "b/", "\xff"}},
		{Role: auth.RoleAdmin, Prefixes: []string{"_txlog/", "c"}},
	}
	check := func(p *auth.Principal, prefix string, spans []wire.KeySpan) []string {
		var bad []string
		for _, k := range keys {
			in := false
			for _, s := range spans {
				in = in || (k >= s.Start && (s.End == "" || k < s.End))
			}
			if want := strings.HasPrefix(k, prefix) && p.Sees(k); in != want {
				bad = append(bad, k)
			}
		}
		for i := 1; i < len(spans); i++ {
			if spans[i-1].End == "" || spans[i-1].End > spans[i].Start {
				bad = append(bad, "overlap")
			}
		}
		return bad
	}
	for _, p := range principals {
		for _, prefix := range []string{"", "a", "al/", "b", "_txlog/", "z", "\xff"} {
			if bad := check(p, prefix, rangeSpans(p, prefix)); len(bad) > 0 {
				t.Errorf("rangeSpans(%+v, %q) = %q: wrong for %q", p, prefix, rangeSpans(p, prefix), bad)
			}
		}
	}
	leaky := []wire.KeySpan{wire.PrefixSpan("")}
	if bad := check(principals[2], "", leaky); !slices.Contains(bad, "bee/1") {
		t.Errorf("check passed spans that show bee/1: %q", bad)
	}
}

// TestDecodeRangeRequest: the internal route's body is checked.
func TestDecodeRangeRequest(t *testing.T) {
	for _, body := range []string{
		`{`, `{"limit":0,"spans":[]}`, `{"limit":1001}`, `{"limit":1,"consistency":"x"}`,
		`{"limit":1,"spans":[{"start":"b","end":"a"}]}`,
		`{"limit":1,"spans":[{"start":"a"},{"start":"b"}]}`,
		`{"limit":1,"spans":[{"start":"a","end":"c"},{"start":"b"}]}`,
	} {
		if _, err := decodeRangeRequest([]byte(body)); err == nil {
			t.Errorf("decodeRangeRequest(%s) = nil error", body)
		}
	}
	const want = `invalid_parameter: body field consistency="x": want one of linearizable, leader, stale`
	if _, err := decodeRangeRequest([]byte(`{"limit":1,"consistency":"x"}`)); err == nil || err.Error() != want {
		t.Errorf("decodeRangeRequest(consistency x) = %v, want %s", err, want)
	}
	if _, err := decodeRangeRequest([]byte(`{"limit":5,"spans":[{"start":"a","end":"b"},{"start":"c"}],"after":"a","consistency":"leader"}`)); err != nil {
		t.Errorf("good body: %v", err)
	}
}

// FuzzDecodeRangeRequest: no body crashes the decoder, and an accepted
// one has sorted, non-overlapping spans and a limit in bounds.
func FuzzDecodeRangeRequest(f *testing.F) {
	f.Add([]byte(`{"limit":5,"spans":[{"start":"a","end":"b"},{"start":"c"}],"after":"a"}`))
	f.Add([]byte(`{"limit":1,"spans":[{"start":"a","end":"c"},{"start":"b"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := decodeRangeRequest(b)
		if err != nil {
			return
		}
		if req.Limit < 1 || req.Limit > wire.MaxRangeLimit {
			t.Fatalf("limit %d accepted", req.Limit)
		}
		for i := 1; i < len(req.Spans); i++ {
			if req.Spans[i-1].End == "" || req.Spans[i-1].End > req.Spans[i].Start {
				t.Fatalf("spans %+v accepted", req.Spans)
			}
		}
	})
}
