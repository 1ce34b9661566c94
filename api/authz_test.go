package api

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/txid"
)

// route is one route of the client port, as the role matrix asks it.
type route struct {
	method, target, body string
	need                 string // "open", "read", "write", "admin"
}

// allRoutes is every route of the client port, with the role it needs with
// auth on (docs/api.md, "Authentication and authorization").
var allRoutes = []route{
	{"GET", "/healthz", "", "open"},
	{"GET", "/readyz", "", "open"},
	{"GET", "/metrics", "", "read"},
	{"GET", "/", "", "read"},
	{"GET", "/ui/", "", "read"},
	{"GET", "/ui/app.js", "", "read"},
	{"GET", "/v1/stats", "", "read"},
	{"GET", "/v1/stats/members", "", "read"},
	{"GET", "/v1/events", "", "read"},
	{"POST", "/v1/tx", `{"ops":[{"op":"put","key":"al/x","value":1}]}`, "write"},
	{"POST", "/v1/tx/batch", `{"txs":[{"ops":[{"op":"put","key":"al/x","value":1}]}]}`, "write"},
	{"GET", "/v1/tx?idempotency_key=k1", "", "read"},
	{"GET", wire.TxStreamPath, "", "write"}, // without Upgrade: 400 once the role passes (txstream_test.go opens streams)
	{"GET", "/v1/tx/" + txid101(), "", "read"},
	{"GET", "/v1/kv/al/1", "", "read"},
	{"GET", "/v1/kv?prefix=al/", "", "read"},
	{"GET", "/v1/kv?limit=3", "", "read"},
	{"GET", "/v1/log?from=1", "", "read"},
	{"GET", "/v1/log/stream?from=1", "", "read"},
	{"GET", "/v1/leases", "", "read"},
	{"GET", "/v1/leases/al/l", "", "read"},
	{"PUT", "/v1/leases/al/l", `{"holder":"h","ttl":"5s"}`, "write"},
	{"DELETE", "/v1/leases/al/l?holder=h&token=5", "", "write"},
	{"GET", "/v1/consumers", "", "read"},
	{"GET", "/v1/consumers/al/g", "", "read"},
	{"POST", "/v1/consumers/al/g/offset", `{"offset":2}`, "write"},
	{"GET", "/v1/cluster", "", "read"},
	{"POST", "/v1/cluster/join", `{"id":"n2","raft_addr":"127.0.0.1:1"}`, "admin"},
	{"DELETE", "/v1/cluster/nodes/n3", "", "admin"},
	{"POST", "/v1/cluster/transfer-leadership", `{}`, "admin"},
	{"GET", "/v1/backup", "", "admin"},
	{"GET", "/v1/openapi.json", "", "read"},
	// No route: 404 and 405 only to a known credential.
	{"GET", "/v1/nothing", "", "any"},
	{"PATCH", "/v1/tx", "", "any"},
}

func txid101() string { return txid.ID(101).String() }

var roleRank = map[string]int{"": 0, "open": 0, "any": 1, "read": 1, "write": 2, "admin": 3}

// TestAuthRoleMatrix: every route of the client port, asked with no
// credential, an unknown one and each role: 401 without a known credential
// (but on the open routes), 403 naming the role when the role is too low,
// and the handler's own answer otherwise; the admin routes' answers are
// audited.
func TestAuthRoleMatrix(t *testing.T) {
	for _, rt := range allRoutes {
		for _, tok := range []string{"", "bogus", "read", "write", "admin"} {
			t.Run(rt.method+" "+rt.target+" as "+tok, func(t *testing.T) {
				var audits []wire.AuditRecord
				w := newWorld()
				srv := NewServer(worldConfig(true, &audits), w)
				rec := ask(t, srv, rt.method, rt.target, rt.body, tok)
				have := roleRank[tok]
				if tok == "bogus" {
					have = 0
				}
				switch {
				case rt.need == "open":
					if rec.Code == 401 || rec.Code == 403 {
						t.Fatalf("= %d %s, want it open", rec.Code, rec.Body)
					}
				case have == 0:
					e := errorOf(t, rec)
					if rec.Code != 401 || e.Code != wire.CodeUnauthenticated || e.Message == "" || strings.HasPrefix(e.Message, "unauthenticated") {
						t.Fatalf("= %d %s, want 401 unauthenticated", rec.Code, rec.Body)
					}
					ch := rec.Header().Values("WWW-Authenticate")
					if !slices.Contains(ch, realmBearer) || (rt.method == "GET") != slices.Contains(ch, realmBasic) {
						t.Fatalf("WWW-Authenticate = %q", ch)
					}
					if len(w.written()) > 0 {
						t.Fatalf("backend wrote %v for a stranger", w.written())
					}
				case have < roleRank[rt.need]:
					e := errorOf(t, rec)
					if rec.Code != 403 || e.Code != wire.CodeForbidden || !strings.Contains(e.Message, "needs role "+rt.need) {
						t.Fatalf("= %d %s, want 403 forbidden naming role %s", rec.Code, rec.Body, rt.need)
					}
					if len(w.written()) > 0 {
						t.Fatalf("backend wrote %v for role %s", w.written(), tok)
					}
				default:
					if rec.Code == 401 || rec.Code == 403 || rec.Code >= 500 {
						t.Fatalf("= %d %s, want the handler's answer", rec.Code, rec.Body)
					}
					if rt.need != "any" && rec.Code >= 400 && (rt.target != wire.TxStreamPath || rec.Code != 400) {
						t.Fatalf("= %d %s, want success", rec.Code, rec.Body)
					}
				}
				wantAudit := rt.need == "admin" && have >= 3
				if wantAudit != (len(audits) == 1) || len(audits) > 1 {
					t.Fatalf("audit records %+v, want one: %v", audits, wantAudit)
				}
				if wantAudit {
					a := audits[0]
					act := rt.method + " " + strings.SplitN(rt.target, "?", 2)[0]
					if a.Who != "root" || a.Role != "admin" || a.Via != "token" || a.Action != act || a.From != "192.0.2.7:5555" || a.Status != 200 || time.Since(a.At) > time.Minute || a.Node != "" {
						t.Fatalf("audit record %+v", a)
					}
				}
			})
		}
	}
}

// TestAuthOpenFlags: --metrics-open and --ui-open open /metrics and the
// dashboard's page and files, never its data (/v1/stats,
// /v1/stats/members, /v1/events).
func TestAuthOpenFlags(t *testing.T) {
	cfg := worldConfig(true, nil)
	cfg.MetricsOpen, cfg.UIOpen = true, true
	srv := NewServer(cfg, newWorld())
	for target, want := range map[string]int{"/metrics": 200, "/": 200, "/ui/": 200, "/ui/x.css": 200, "/v1/stats": 401, "/v1/stats/members": 401, "/v1/events": 401, "/v1/cluster": 401} {
		if rec := ask(t, srv, "GET", target, "", ""); rec.Code != want {
			t.Errorf("GET %s without a credential = %d %s, want %d", target, rec.Code, rec.Body, want)
		}
	}
}

// TestAuthFastHandler: the handlers the fast path runs (FastHandler, through
// Serve as api/fastpath calls them) ask for a credential as the router does.
func TestAuthFastHandler(t *testing.T) {
	w := newWorld()
	srv := NewServer(worldConfig(true, nil), w)
	for _, tt := range []struct {
		path, body, token string
		status            int
	}{
		{"/v1/tx", `{"ops":[{"op":"put","key":"al/x","value":1}]}`, "", 401},
		{"/v1/tx", `{"ops":[{"op":"put","key":"al/x","value":1}]}`, "read", 403},
		{"/v1/tx", `{"ops":[{"op":"put","key":"bee/x","value":1}]}`, "wal", 403},
		{"/v1/tx/batch", `{"txs":[{"ops":[{"op":"put","key":"al/x","value":1}]}]}`, "", 401},
		{"/v1/tx/batch", `{"txs":[{"ops":[{"op":"put","key":"bee/x","value":1}]}]}`, "wal", 403},
	} {
		req := httptest.NewRequest("POST", tt.path, strings.NewReader(tt.body))
		req.Host = testHost
		if tt.token != "" {
			req.Header.Set("Authorization", "Bearer "+tt.token)
		}
		rec := httptest.NewRecorder()
		srv.Serve(rec, req, srv.FastHandler(tt.path))
		if rec.Code != tt.status {
			t.Fatalf("fast %s as %q = %d %s, want %d", tt.path, tt.token, rec.Code, rec.Body, tt.status)
		}
	}
	// The Host and Origin checks run on the fast path too.
	req := httptest.NewRequest("POST", "/v1/tx", strings.NewReader(`{"ops":[{"op":"put","key":"al/x","value":1}]}`))
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Authorization", "Bearer write")
	req.Host = testHost
	rec := httptest.NewRecorder()
	srv.Serve(rec, req, srv.FastHandler("/v1/tx"))
	if rec.Code != 403 || len(w.written()) != 0 {
		t.Fatalf("fast cross-site POST = %d %s, wrote %v", rec.Code, rec.Body, w.written())
	}
}

// TestHostAndOrigin: the Host and Origin checks, with auth on and off.
func TestHostAndOrigin(t *testing.T) {
	const body = `{"ops":[{"op":"put","key":"al/x","value":1}]}`
	tests := []struct {
		name           string
		host           string
		origin         string
		method, target string
		tls            bool
		cfg            func(*Config)
		status         int
		msg            string
	}{
		{"cross-site text/plain POST", testHost, "https://evil.example", "POST", "/v1/tx", false, nil, 403, `origin "https://evil.example" not allowed`},
		{"cross-site GET", testHost, "https://evil.example", "GET", "/v1/kv/al/1", false, nil, 403, "origin"},
		{"origin null", testHost, "null", "POST", "/v1/tx", false, nil, 403, "origin"},
		{"own origin", testHost, "http://" + testHost, "POST", "/v1/tx", false, nil, 200, ""},
		{"own origin, other case", testHost, "HTTP://127.0.0.1:7000", "POST", "/v1/tx", false, nil, 200, ""},
		{"own host, other scheme", testHost, "https://" + testHost, "POST", "/v1/tx", false, nil, 403, "origin"},
		{"own origin over TLS", testHost, "https://" + testHost, "POST", "/v1/tx", true, nil, 200, ""},
		{"own host, other port", testHost, "http://127.0.0.1:7001", "POST", "/v1/tx", false, nil, 403, "origin"},
		{"allowed origin", testHost, "https://app.example", "POST", "/v1/tx", false, func(c *Config) { c.AllowedOrigins = []string{"https://app.example"} }, 200, ""},
		{"any origin", testHost, "https://evil.example", "POST", "/v1/tx", false, func(c *Config) { c.AllowedOrigins = []string{"*"} }, 200, ""},
		{"stats from another member's page", testHost, "http://127.0.0.2:7000", "GET", "/v1/stats", false, nil, 403, "origin"},
		{"rebound host", "evil.example", "", "GET", "/v1/kv/al/1", false, nil, 403, `host "evil.example" not allowed`},
		{"rebound host with port", "evil.example:7000", "", "POST", "/v1/tx", false, nil, 403, "host"},
		{"rebound host on healthz", "evil.example:7000", "", "GET", "/healthz", false, nil, 403, "host"},
		{"host IPv4 and port", "127.0.0.1:7000", "", "GET", "/v1/kv/al/1", false, nil, 200, ""},
		{"host IPv6", "[::1]:7000", "", "GET", "/v1/kv/al/1", false, nil, 200, ""},
		{"host localhost", "LocalHost:7000", "", "GET", "/v1/kv/al/1", false, nil, 200, ""},
		{"host advertised", "node1.example:7000", "", "GET", "/v1/kv/al/1", false, nil, 200, ""},
		{"host localhost.evil", "localhost.evil.example", "", "GET", "/v1/kv/al/1", false, nil, 403, "host"},
		{"host allowed", "lb.example", "", "GET", "/v1/kv/al/1", false, func(c *Config) { c.AllowedHosts = []string{"lb.example"} }, 200, ""},
		{"host allowed with its port", "lb.example:8443", "", "GET", "/v1/kv/al/1", false, func(c *Config) { c.AllowedHosts = []string{"lb.example:8443"} }, 200, ""},
		{"host allowed on another port", "lb.example:9999", "", "GET", "/v1/kv/al/1", false, func(c *Config) { c.AllowedHosts = []string{"lb.example:8443"} }, 403, "host"},
		{"any host", "evil.example", "", "GET", "/v1/kv/al/1", false, func(c *Config) { c.AllowedHosts = []string{"*"} }, 200, ""},
		{"empty origin", testHost, "<empty>", "POST", "/v1/tx", false, nil, 403, "origin"},
		{"two origins, the own first", testHost, "<two>", "POST", "/v1/tx", false, nil, 403, "origin"},
		{"origin with a path", testHost, "http://" + testHost + "/x", "POST", "/v1/tx", false, nil, 403, "origin"},
		{"origin a prefix of the own", testHost, "http://127.0.0.1:700", "POST", "/v1/tx", false, nil, 403, "origin"},
		{"allowed origin, other scheme", testHost, "http://app.example", "POST", "/v1/tx", false, func(c *Config) { c.AllowedOrigins = []string{"https://app.example"} }, 403, "origin"},
		{"host an IP-like name", "127.0.0.1.evil.example", "", "GET", "/v1/kv/al/1", false, nil, 403, "host"},
		{"host an octal IP", "0177.0.0.1", "", "GET", "/v1/kv/al/1", false, nil, 403, "host"},
		{"host IPv4-mapped IPv6", "[::ffff:127.0.0.1]:7000", "", "GET", "/v1/kv/al/1", false, nil, 200, ""},
		{"host localhost with a dot", "localhost.:7000", "", "GET", "/v1/kv/al/1", false, nil, 403, "host"},
		{"host advertised, other case", "NODE1.example", "", "GET", "/v1/kv/al/1", false, nil, 200, ""},
		{"host a suffix of the advertised", "evilnode1.example", "", "GET", "/v1/kv/al/1", false, nil, 403, "host"},
	}
	for _, on := range []bool{false, true} {
		for _, tt := range tests {
			t.Run(tt.name+map[bool]string{false: " (auth off)", true: " (auth on)"}[on], func(t *testing.T) {
				w := newWorld()
				cfg := worldConfig(on, nil)
				if tt.cfg != nil {
					tt.cfg(&cfg)
				}
				req := httptest.NewRequest(tt.method, tt.target, strings.NewReader(body))
				req.Host = tt.host
				req.Header.Set("Content-Type", "text/plain")
				switch tt.origin {
				case "":
				case "<empty>":
					req.Header["Origin"] = []string{""}
				case "<two>":
					req.Header["Origin"] = []string{"http://" + testHost, "https://evil.example"}
				default:
					req.Header.Set("Origin", tt.origin)
				}
				if tt.tls {
					req.TLS = &tls.ConnectionState{}
				}
				if on {
					req.Header.Set("Authorization", "Bearer admin")
				}
				rec := httptest.NewRecorder()
				NewServer(cfg, w).ServeHTTP(rec, req)
				if rec.Code != tt.status {
					t.Fatalf("= %d %s, want %d", rec.Code, rec.Body, tt.status)
				}
				if tt.status == 403 {
					if e := errorOf(t, rec); e.Code != wire.CodeForbidden || !strings.Contains(e.Message, tt.msg) {
						t.Fatalf("error %+v, want forbidden with %q", e, tt.msg)
					}
					if len(w.written()) > 0 {
						t.Fatalf("refused, and still wrote %v", w.written())
					}
				}
			})
		}
	}
}

// FuzzHostOrigin: the Host and Origin checks take any header bytes without
// a panic, and let through only a Host that names the node: empty, an IP
// address, localhost or the advertised host (with any port), and only an
// Origin that is the request's own.
func FuzzHostOrigin(f *testing.F) {
	for _, seed := range [][2]string{
		{"127.0.0.1:7000", "http://127.0.0.1:7000"},
		{"[::1]:80", "https://evil.example"},
		{"node1.example", "null"},
		{"localhost.", ""},
		{"evil.example:7000", "http://evil.example:7000"},
		{"[fe80::1%25eth0]:1", "HTTP://[FE80::1%25ETH0]:1"},
	} {
		f.Add(seed[0], seed[1])
	}
	srv := NewServer(Config{AdvertiseHost: "node1.example"}, &fakeBackend{})
	f.Fuzz(func(t *testing.T, host, origin string) {
		if srv.hostAllowed(host) {
			h := host
			if hh, _, err := net.SplitHostPort(host); err == nil {
				h = hh
			}
			h = strings.Trim(h, "[]")
			_, ipErr := netip.ParseAddr(h)
			if host != "" && ipErr != nil && !strings.EqualFold(h, "localhost") && !strings.EqualFold(h, "node1.example") {
				t.Fatalf("host %q allowed", host)
			}
		}
		r := httptest.NewRequest("POST", "/v1/tx", nil)
		r.Host = host
		if srv.originAllowed(r, []string{origin}) && !strings.EqualFold(strings.TrimSuffix(origin, "/"), "http://"+host) {
			t.Fatalf("origin %q allowed for host %q", origin, host)
		}
	})
}

// TestScopedMetrics: GET /metrics answers for every scope at once (its
// txlog_consumer_lag series name every consumer group), so a credential
// with key prefixes is refused it; one without reads it, and so does anyone
// when --metrics-open opens it.
func TestScopedMetrics(t *testing.T) {
	srv := NewServer(worldConfig(true, nil), newWorld())
	for tok, want := range map[string]int{"read": 200, "admin": 200, "ral": 403, "wal": 403, "admal": 403, "wal-bo": 403} {
		rec := ask(t, srv, "GET", "/metrics", "", tok)
		if rec.Code != want {
			t.Errorf("GET /metrics as %s = %d %s, want %d", tok, rec.Code, rec.Body, want)
		}
		if want != 403 {
			continue
		}
		why := fmt.Sprintf("GET /metrics names consumer groups of every key scope; credential %q has key prefixes", testAuth[tok].Name)
		if e := errorOf(t, rec); e.Code != wire.CodeForbidden || e.Message != why {
			t.Errorf("GET /metrics as %s = %s, want forbidden saying %q", tok, rec.Body, why)
		}
	}
	cfg := worldConfig(true, nil)
	cfg.MetricsOpen = true
	if rec := ask(t, NewServer(cfg, newWorld()), "GET", "/metrics", "", "ral"); rec.Code != 200 {
		t.Errorf("GET /metrics open, as a scoped reader = %d %s, want 200", rec.Code, rec.Body)
	}
}
