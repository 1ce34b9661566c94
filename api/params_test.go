package api

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/txlog/txlog/api/wire"
)

// slowQuery parses raw the long way, as parseRawQuery did before its plain
// path: url.ParseQuery, then the checks of names and repeats.
func slowQuery(raw string, allowed []string) (map[string]string, string) {
	v, err := url.ParseQuery(raw)
	if err != nil {
		return nil, "bad"
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range v {
			if !yield(n) {
				return
			}
		}
	})
	for _, n := range names {
		if !slices.Contains(allowed, n) {
			return nil, "unknown " + n
		}
		if len(v[n]) > 1 {
			return nil, "repeated " + n
		}
	}
	out := map[string]string{}
	for n, vs := range v {
		out[n] = vs[0]
	}
	return out, ""
}

// checkQuery compares parseRawQuery with slowQuery on raw.
func checkQuery(t *testing.T, raw string, allowed []string) {
	t.Helper()
	want, wantErr := slowQuery(raw, allowed)
	q, err := parseRawQuery(raw, allowed...)
	msg := ""
	if err != nil {
		var e *wire.Error
		if !errors.As(err, &e) || e.Code != wire.CodeInvalidParam {
			t.Fatalf("%q %v: %v, want an invalid_parameter error", raw, allowed, err)
		}
		msg = e.Message
	}
	switch {
	case wantErr != "" && err == nil:
		t.Fatalf("%q %v: no error, want %s", raw, allowed, wantErr)
	case wantErr == "" && err != nil:
		t.Fatalf("%q %v: %v", raw, allowed, err)
	case wantErr == "bad":
		if !strings.HasPrefix(msg, "query ") {
			t.Fatalf("%q %v: %v, want a malformed query", raw, allowed, err)
		}
		return
	case wantErr != "":
		name := strings.SplitN(wantErr, " ", 2)[1]
		if !strings.Contains(msg, fmt.Sprintf("parameter %q", name)) {
			t.Fatalf("%q %v: %v, want %s", raw, allowed, err, wantErr)
		}
		return
	}
	if len(q) != len(want) {
		t.Fatalf("%q %v: %v, want %v", raw, allowed, q, want)
	}
	for n, w := range want {
		if got, ok := q.get(n); !ok || got != w {
			t.Fatalf("%q %v: %s=%q (%v), want %q", raw, allowed, n, got, ok, w)
		}
	}
}

var queryAllowed = [][]string{nil, {"timeout", "ack"}, {"wait"}, {"", "a"}}

func TestParseRawQuery(t *testing.T) {
	for _, raw := range queryCorpus {
		for _, allowed := range queryAllowed {
			checkQuery(t, raw, allowed)
		}
	}
	q, err := parseRawQuery("ack=quorum&timeout=1s", "timeout", "ack")
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := q.get("timeout"); v != "1s" {
		t.Fatalf("timeout=%q", v)
	}
	if _, err := parseRawQuery("ack=all&ack=quorum", "timeout", "ack"); err == nil || !strings.HasSuffix(err.Error(), `parameter "ack" given 2 times; give it once`) {
		t.Fatalf("a repeated parameter: %v", err)
	}
	if _, err := parseRawQuery("timout=1s&zz=1", "timeout", "ack"); err == nil || !strings.Contains(err.Error(), `unknown parameter "timout"; this route takes: timeout, ack`) {
		t.Fatalf("a misspelt parameter: %v", err)
	}
}

// The query of every write the load generator and the client send costs one
// allocation: the parameters' slice.
func TestParseRawQueryAllocs(t *testing.T) {
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := parseRawQuery("ack=quorum&timeout=1s", "timeout", "ack"); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 {
		t.Fatalf("%.1f allocations per query, want at most 1", allocs)
	}
}

var queryCorpus = []string{
	"", "&", "&&", "=", "a", "a=", "=a", "a=1", "a=1&a=2", "a=1&&a=1",
	"ack=quorum&timeout=1s", "timeout=1s&ack=all&", "&ack=accepted", "ack=x=y",
	"ack=a%20b", "ack=a+b", "ack=%zz", "a;b=1", "ack=1;", "timeout=1s&timeout=2s",
	"timout=1s", "wait=1s&b=2&a=1", "ack&timeout", "ack=&timeout=", "%61ck=1",
	"a=1&a=1&a=1&a=1&a=1&a=1&a=1&a=1", "a=1&" + strings.Repeat("&", 20),
}

// FuzzParseRawQuery checks that the plain path and the long way give the same
// query and the same error, for each list of allowed names.
func FuzzParseRawQuery(f *testing.F) {
	for _, raw := range queryCorpus {
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		for _, allowed := range queryAllowed {
			checkQuery(t, raw, allowed)
		}
	})
}
