package docexec

import (
	"strings"
	"testing"
)

const committed = `{"txid":"0AP81P6ZW0800","status":"committed","index":7,"term":2,"versions":{"acct/alice":1},"durability":"quorum"}`

// TestCompare: the checker passes an answer that differs from the doc's only
// in the values matched by shape, and fails, naming the field, on a wrong
// value, a missing field, an extra field, a wrong shape, an array of another
// length and a value of another type.
func TestCompare(t *testing.T) {
	for _, tt := range []struct {
		name, want, got string
		mismatch        string // "" if they match; else the start of the first mismatch
	}{
		{"same", committed, committed, ""},
		{"shapes", committed, `{"txid":"0AP9ZZZZZZ801","status":"committed","index":12,"term":3,"versions":{"acct/alice":1},"durability":"quorum"}`, ""},
		{"wrong value", committed, strings.Replace(committed, `"acct/alice":1`, `"acct/alice":2`, 1), `.versions.acct/alice: want 1, got 2`},
		{"wrong status value", committed, strings.Replace(committed, "committed", "rejected", 1), `.status: want "committed", got "rejected"`},
		{"missing field", committed, strings.Replace(committed, `,"durability":"quorum"`, "", 1), `.durability: want "quorum", got no such field`},
		{"extra field", committed, strings.TrimSuffix(committed, `}`) + `,"duplicate":true}`, `.duplicate: want no such field (the doc does not show it), got true`},
		{"bad txid", committed, strings.Replace(committed, "0AP81P6ZW0800", "0AP81P6ZW08UU", 1), `.txid: want a txid, got "0AP81P6ZW08UU"`},
		{"index not a number", committed, strings.Replace(committed, `"index":7`, `"index":"7"`, 1), `.index: want a non-negative integer, got "7"`},
		{"doc index not a number", strings.Replace(committed, `"index":7`, `"index":-1`, 1), committed, `.index: want -1, got 7`},
		{"empty txid exactly", `{"txid":""}`, `{"txid":"0AP81P6ZW0800"}`, `.txid: want "", got "0AP81P6ZW0800"`},
		{"time", `{"at":"2026-12-02T12:40:45Z"}`, `{"at":"2026-12-03T15:01:02.123456789Z"}`, ""},
		{"bad time", `{"at":"2026-12-02T12:40:45Z"}`, `{"at":"yesterday"}`, `.at: want an RFC 3339 time`},
		{"short array", `{"held_by":["wal","redis"]}`, `{"held_by":["wal"]}`, `.held_by: want 2 elements, got 1`},
		{"array element", `{"m":[{"id":"n1"},{"id":"n2"}]}`, `{"m":[{"id":"n1"},{"id":"n3"}]}`, `.m[1].id: want "n2", got "n3"`},
		{"object for string", `{"value":"x"}`, `{"value":{"x":1}}`, `.value: want "x", got {"x":1}`},
		{"elided message", `{"message":"txid … at index …"}`, `{"message":"txid 0AP81P6ZW0800 at index 7"}`, ""},
		{"elided message wrong", `{"message":"txid … at index …"}`, `{"message":"txid 0AP81P6ZW0800 at term 7"}`, `.message: want "txid … at index …"`},
		{"not json", committed, `404 page not found`, `(body): want one JSON value`},
		{"null for value", `{"value":null}`, `{"value":0}`, `.value: want null, got 0`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ms, _ := Compare([]byte(tt.want), []byte(tt.got))
			if tt.mismatch == "" {
				if len(ms) != 0 {
					t.Fatalf("Compare = %v, want no mismatch", ms)
				}
				return
			}
			if len(ms) == 0 || !strings.HasPrefix(ms[0].String(), tt.mismatch) {
				t.Fatalf("Compare = %v, want first %q", ms, tt.mismatch)
			}
		})
	}
}

// TestCompareBindings: a txid matched by shape is bound to the real one, and
// Substitute puts the real one in a later request.
func TestCompareBindings(t *testing.T) {
	_, bs := Compare([]byte(`{"txid":"0AP81P6ZW0800","token":8123,"index":7}`), []byte(`{"txid":"0AQ0000000801","token":17,"index":9}`))
	if len(bs) != 3 {
		t.Fatalf("bindings %v, want the txid's, the token's and the index's", bs)
	}
	bs = append(bs, Binding{Field: "index", Doc: "9", Got: "12"}) // never applied to a value put in
	got := Substitute(`/v1/tx/0AP81P6ZW0800 {"holder":"h","token":8123} ?token=8123&from=7 {"index":7,"next":7,"token":81234,"expected":8123}`, bs)
	if want := `/v1/tx/0AQ0000000801 {"holder":"h","token":17} ?token=17&from=9 {"index":9,"next":7,"token":81234,"expected":17}`; got != want {
		t.Fatalf("Substitute = %s, want %s", got, want)
	}
}

// TestRewrite: the ports of txlog local become the real ones; others stay.
func TestRewrite(t *testing.T) {
	to := map[int]string{8081: "127.0.0.1:40001", 7102: "127.0.0.1:40012"}
	got := Rewrite(`localhost:8081/v1/x 127.0.0.1:8081 127.0.0.1:7102 127.0.0.1:8084 example.com:8081`, to)
	if want := `127.0.0.1:40001/v1/x 127.0.0.1:40001 127.0.0.1:40012 127.0.0.1:8084 example.com:8081`; got != want {
		t.Fatalf("Rewrite = %s\nwant %s", got, want)
	}
}

const goodDoc = "text\n\n```sh\ncurl -s -X POST 'localhost:8082/v1/tx?timeout=2s' \\\n  -H 'Idempotency-Key: k' \\\n  -d '{\"ops\":[]}'\n```\n\n<!-- openapi: POST /v1/tx 409 -->\n```json\n{\"status\":\"rejected\"}\n```\n\n<!-- exec: skip: needs a token -->\n```sh\ncurl -s -H \"Authorization: Bearer $TOKEN\" localhost:8082/v1/backup -o f\n```\n\n```sh\ncurl -s localhost:8083/healthz\n```\n"

// TestParse reads a doc with an example and its answer, a skipped example
// and one without an answer.
func TestParse(t *testing.T) {
	exs, err := Parse("d.md", []byte(goodDoc))
	if err != nil {
		t.Fatal(err)
	}
	if len(exs) != 3 {
		t.Fatalf("%d examples, want 3: %+v", len(exs), exs)
	}
	e := exs[0]
	if e.Line != 4 || e.Method != "POST" || e.Host != "localhost:8082" || e.Target != "/v1/tx?timeout=2s" ||
		e.Header.Get("Idempotency-Key") != "k" || e.Body != `{"ops":[]}` || e.Answer == nil ||
		e.Answer.Status != 409 || e.Answer.Line != 10 || strings.TrimSpace(string(e.Answer.Body)) != `{"status":"rejected"}` {
		t.Fatalf("first example %+v (answer %+v)", e, e.Answer)
	}
	if exs[1].Skip != "needs a token" || exs[1].Answer != nil || exs[1].Output != "f" || exs[0].Output != "" {
		t.Fatalf("second example %+v, want skipped", exs[1])
	}
	if exs[2].Skip != "" || exs[2].Answer != nil || exs[2].Target != "/healthz" {
		t.Fatalf("third example %+v", exs[2])
	}
}

// TestParseBad: a doc the parser cannot read as the convention says fails,
// naming the line.
func TestParseBad(t *testing.T) {
	for _, tt := range []struct{ name, md, want string }{
		{"answer without status", "```sh\ncurl -s localhost:8081/healthz\n```\n```json\n{}\n```\n", "d.md:4: the answer of d.md:2: GET /healthz has no <!-- openapi"},
		{"answer of another method", "```sh\ncurl -s localhost:8081/v1/kv/k\n```\n<!-- openapi: POST /v1/kv/{key} 200 -->\n```json\n{}\n```\n", "is tagged POST /v1/kv/{key}"},
		{"answer of another path", "```sh\ncurl -s localhost:8081/v1/kv/k\n```\n<!-- openapi: GET /v1/log 200 -->\n```json\n{}\n```\n", "is tagged GET /v1/log"},
		{"unknown directive", "<!-- exec: setup: no leader -->\n```sh\ncurl -s localhost:8081/healthz\n```\n", "d.md:1: exec directive not understood"},
		{"dangling skip", "text\n<!-- exec: skip: why -->\n", "d.md:2: exec: skip with no curl block"},
		{"bad curl", "```sh\ncurl -s --fail localhost:8081/healthz\n```\n", `d.md:2: curl word "--fail" not understood`},
		{"two commands", "```sh\ncurl -s localhost:8081/healthz | jq .\n```\n", `curl word "|" not understood`},
		{"comment before curl", "```sh\n# read it\ncurl -s localhost:8081/healthz\n```\n", "not a curl command"},
		{"no url", "```sh\ncurl -s -X POST\n```\n", "without a URL"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("d.md", []byte(tt.md))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse = %v, want an error with %q", err, tt.want)
			}
		})
	}
}

// FuzzCompare: Compare and Parse take any bytes, an answer from the network
// or a doc, without a panic; a body compared with itself matches.
func FuzzCompare(f *testing.F) {
	f.Add([]byte(committed), []byte(committed))
	f.Add([]byte(`{"a":[1,{"b":"x…y"}]}`), []byte(`{"a":[1,{"b":"xzy"}],"c":null}`))
	f.Add([]byte(goodDoc), []byte(`not json`))
	f.Fuzz(func(t *testing.T, want, got []byte) {
		Compare(want, got)
		if _, err := decode(got); err == nil {
			if ms, _ := Compare(got, got); len(ms) > 0 {
				t.Fatalf("Compare(x, x) = %v for %q", ms, got)
			}
		}
		Parse("f.md", want)
		Substitute(string(got), []Binding{{Field: "txid", Doc: `"` + string(want) + `"`, Got: `"x"`}, {Field: "index", Doc: "7", Got: "9"}})
	})
}

// TestNamesFourth: an example that names the fourth node's ports, in its
// body or answer, gets one started; the others do not.
func TestNamesFourth(t *testing.T) {
	for _, tt := range []struct {
		e    Example
		want bool
	}{
		{Example{Host: "localhost:8081", Target: "/v1/cluster/join", Body: `{"id":"n4","raft_addr":"127.0.0.1:7104","http_addr":"127.0.0.1:8084"}`}, true},
		{Example{Host: "localhost:8084", Target: "/healthz"}, true},
		{Example{Host: "localhost:8081", Target: "/v1/cluster", Answer: &Answer{Body: []byte(`{"http_addr":"127.0.0.1:8084"}`)}}, true},
		{Example{Host: "localhost:8081", Target: "/v1/cluster", Body: `{"raft_addr":"127.0.0.1:7103","n":8084}`}, false},
		{Example{Host: "localhost:8083", Target: "/v1/kv/k"}, false},
	} {
		if got := NamesFourth(tt.e); got != tt.want {
			t.Errorf("NamesFourth(%+v) = %v, want %v", tt.e, got, tt.want)
		}
	}
}
