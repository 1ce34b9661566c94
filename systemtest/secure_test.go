package systemtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
)

// TestSecuredRoles runs a 3-node cluster with client mutual TLS and an auth
// file, and tries every route family (writes, reads, the stream and the long
// poll, leases, consumers, membership) with each credential: the right role
// works; no credential (a certificate the file does not name), an unknown
// token, a role too low get 401 or 403 and change nothing. A fourth node
// joins with an admin token in --join-token-file. The admin actions leave
// audit records that an admin reads and a reader does not see.
func TestSecuredRoles(t *testing.T) {
	sc := startSecureCluster(t, 3)
	admin, writer, reader := sc.tok(credAdmin), sc.tok(credWriter), sc.tok(credReader)
	readerCert := cred{cert: cnReaderCert}
	stranger := cred{} // a certificate of the cluster's CA that no line names
	unknown := cred{token: "txlog_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}

	// Something to read.
	res := sc.submit(t, 0, writer, putBody("roles-seed", "r/k", "r/k2"))
	sc.submit(t, 0, writer, putBody("", "a/k")) // for the scoped reader's stream
	lease := sc.do(t, 1, writer, req{method: http.MethodPut, path: "/v1/leases/r/lease", body: `{"holder":"h1","ttl":"1m"}`})
	if lease.status != http.StatusOK {
		t.Fatalf("PUT lease as writer: %s", lease)
	}
	if a := sc.do(t, 2, writer, req{method: http.MethodPost, path: "/v1/consumers/r/group/offset", body: `{"offset":1}`}); a.status != http.StatusOK {
		t.Fatalf("commit offset as writer: %s", a)
	}

	type route struct {
		name string
		r    req
		role string // the least role that may
	}
	routes := []route{
		{"kv", req{method: http.MethodGet, path: "/v1/kv/r/k"}, "read"},
		{"log page", req{method: http.MethodGet, path: "/v1/log?from=1&limit=10"}, "read"},
		{"log long poll", req{method: http.MethodGet, path: fmt.Sprintf("/v1/log?from=%d&wait=1s", res.Index)}, "read"},
		{"log stream", req{method: http.MethodGet, path: "/v1/log/stream?from=1", stream: true}, "read"},
		{"tx by txid", req{method: http.MethodGet, path: "/v1/tx/" + res.TxID.String()}, "read"},
		{"tx by idempotency key", req{method: http.MethodGet, path: "/v1/tx?idempotency_key=roles-seed"}, "read"},
		{"leases", req{method: http.MethodGet, path: "/v1/leases"}, "read"},
		{"lease", req{method: http.MethodGet, path: "/v1/leases/r/lease"}, "read"},
		{"consumers", req{method: http.MethodGet, path: "/v1/consumers"}, "read"},
		{"consumer", req{method: http.MethodGet, path: "/v1/consumers/r/group"}, "read"},
		{"cluster", req{method: http.MethodGet, path: "/v1/cluster"}, "read"},
		{"stats", req{method: http.MethodGet, path: "/v1/stats"}, "read"},
		{"events", req{method: http.MethodGet, path: "/v1/events"}, "read"},
		{"metrics", req{method: http.MethodGet, path: "/metrics"}, "read"},
		{"tx", req{method: http.MethodPost, path: "/v1/tx", body: putBody("", "r/w")}, "write"},
		{"batch", req{method: http.MethodPost, path: "/v1/tx/batch", body: `{"txs":[` + putBody("", "r/b1") + `,` + putBody("", "r/b2") + `]}`}, "write"},
		{"lease acquire", req{method: http.MethodPut, path: "/v1/leases/r/lease2", body: `{"holder":"h2","ttl":"1m"}`}, "write"},
		{"lease release", req{method: http.MethodDelete, path: "/v1/leases/r/lease2?holder=h2&token=1"}, "write"},
		{"offset commit", req{method: http.MethodPost, path: "/v1/consumers/r/group2/offset", body: `{"offset":1}`}, "write"},
		{"join", req{method: http.MethodPost, path: "/v1/cluster/join", body: `{"id":"x9","raft_addr":"127.0.0.1:1"}`}, "admin"},
		{"remove", req{method: http.MethodDelete, path: "/v1/cluster/nodes/x9"}, "admin"},
		{"transfer leadership", req{method: http.MethodPost, path: "/v1/cluster/transfer-leadership", body: `{}`}, "admin"},
	}
	rank := map[string]int{"read": 1, "write": 2, "admin": 3}
	holders := []struct {
		name string
		c    cred
		role string
	}{
		{"reader", reader, "read"}, {"reader certificate", readerCert, "read"},
		{"writer", writer, "write"}, {"admin", admin, "admin"},
	}
	t.Run("refused without a credential or with an unknown token", func(t *testing.T) {
		for _, rt := range routes {
			for _, c := range []struct {
				name string
				c    cred
			}{{"a certificate the file does not name", stranger}, {"an unknown token", unknown},
				{"an unknown token over a named certificate", cred{cert: cnReaderCert, token: unknown.token}}} {
				a := sc.do(t, 1, c.c, rt.r)
				if a.status != http.StatusUnauthorized || a.code != wire.CodeUnauthenticated {
					t.Errorf("%s (%s %s) with %s: %s, want 401 unauthenticated", rt.name, rt.r.method, rt.r.path, c.name, a)
				}
			}
		}
	})
	t.Run("a role too low is forbidden", func(t *testing.T) {
		for _, rt := range routes {
			for _, h := range holders {
				if rank[h.role] >= rank[rt.role] {
					continue
				}
				a := sc.do(t, 2, h.c, rt.r)
				if a.status != http.StatusForbidden || a.code != wire.CodeForbidden {
					t.Errorf("%s (%s %s) as %s: %s, want 403 forbidden", rt.name, rt.r.method, rt.r.path, h.name, a)
				}
			}
		}
		// Nothing the refused writes asked for was done.
		for _, p := range []string{"/v1/kv/r/w", "/v1/kv/r/b1", "/v1/leases/r/lease2", "/v1/consumers/r/group2"} {
			if a := sc.do(t, 0, admin, req{method: http.MethodGet, path: p}); a.status != http.StatusNotFound {
				t.Errorf("GET %s after refused writes: %s, want 404", p, a)
			}
		}
	})
	t.Run("the right role works", func(t *testing.T) {
		for _, rt := range routes {
			if rt.role == "admin" {
				continue // below, with a real member
			}
			for _, h := range holders {
				if rank[h.role] < rank[rt.role] || rt.role == "write" && h.name != "writer" {
					continue // each write once, by the writer
				}
				a := sc.do(t, 0, h.c, rt.r)
				if rt.name == "lease acquire" && a.status == http.StatusOK {
					var l struct{ Token uint64 }
					json.Unmarshal(a.body, &l)
					for i := range routes {
						if routes[i].name == "lease release" {
							routes[i].r.path = fmt.Sprintf("/v1/leases/r/lease2?holder=h2&token=%d", l.Token)
						}
					}
				}
				if a.status != http.StatusOK {
					t.Errorf("%s (%s %s) as %s: %s, want 200", rt.name, rt.r.method, rt.r.path, h.name, a)
				}
				if rt.r.stream && !bytes.Contains(a.body, []byte(res.TxID.String())) {
					t.Errorf("stream as %s: %q, want the seed's entry", h.name, a.body)
				}
			}
		}
	})

	t.Run("membership", func(t *testing.T) {
		// A write token in --join-token-file is not enough: its POST
		// /v1/cluster/join is 403 (the node retries and logs it).
		leader := sc.leader(t)
		via := (leader + 1) % 3 // a follower: the join is forwarded
		weakFile := filepath.Join(t.TempDir(), "join-token")
		replaceFile(t, weakFile, []byte(sc.tokens[credWriter]+"\n"))
		p5, _ := sc.startJoiner(t, "n5", via, weakFile)
		waitTLS(t, 20*time.Second, "n5's join refused", func() bool {
			tail := p5.LogTail(20)
			return strings.Contains(tail, "join failed") && strings.Contains(tail, "needs role admin")
		})
		p5.Kill()

		tokenFile := filepath.Join(t.TempDir(), "join-token")
		replaceFile(t, tokenFile, []byte(sc.tokens[credAdmin]+"\n"))
		p4, addr4 := sc.startJoiner(t, "n4", via, tokenFile)
		sc.addrs = append(sc.addrs, addr4)
		defer func() { sc.addrs = sc.addrs[:3] }()
		waitTLS(t, 45*time.Second, "n4 a voter", func() bool {
			a, err := sc.try(t, 3, admin, req{method: http.MethodGet, path: "/v1/cluster"})
			if err != nil || a.status != http.StatusOK {
				return false
			}
			var st wire.ClusterStatus
			json.Unmarshal(a.body, &st)
			return slices.ContainsFunc(st.Members, func(m wire.Member) bool { return m.ID == "n4" && m.Suffrage == "voter" })
		})
		sc.waitReady(t, 3)
		// n4 serves the same auth file.
		if a := sc.do(t, 3, reader, req{method: http.MethodGet, path: "/v1/kv/r/k?consistency=stale"}); a.status != http.StatusOK {
			t.Fatalf("read on n4 as reader: %s", a)
		}
		if a := sc.do(t, 3, reader, req{method: http.MethodPost, path: "/v1/tx", body: putBody("", "r/n4")}); a.status != http.StatusForbidden {
			t.Fatalf("write on n4 as reader: %s, want 403", a)
		}

		// Transfer leadership: a writer is refused, the admin moves it.
		leader = sc.leader(t)
		target := sc.c.Nodes()[(leader+1)%3].ID()
		body := fmt.Sprintf(`{"id":%q}`, target)
		if a := sc.do(t, 0, writer, req{method: http.MethodPost, path: "/v1/cluster/transfer-leadership", body: body}); a.status != http.StatusForbidden {
			t.Fatalf("transfer-leadership as writer: %s, want 403", a)
		}
		if a := sc.do(t, leader, admin, req{method: http.MethodPost, path: "/v1/cluster/transfer-leadership", body: body}); a.status != http.StatusOK {
			t.Fatalf("transfer-leadership as admin: %s", a)
		}
		waitTLS(t, 20*time.Second, "leader "+target, func() bool { return sc.c.Nodes()[sc.leader(t)].ID() == target })

		// Remove n4: a writer is refused, the admin removes it, it exits.
		if a := sc.do(t, 0, writer, req{method: http.MethodDelete, path: "/v1/cluster/nodes/n4"}); a.status != http.StatusForbidden {
			t.Fatalf("DELETE n4 as writer: %s, want 403", a)
		}
		if a := sc.do(t, 0, reader, req{method: http.MethodDelete, path: "/v1/cluster/nodes/n4"}); a.status != http.StatusForbidden {
			t.Fatalf("DELETE n4 as reader: %s, want 403", a)
		}
		if a := sc.do(t, 1, admin, req{method: http.MethodDelete, path: "/v1/cluster/nodes/n4"}); a.status != http.StatusOK {
			t.Fatalf("DELETE n4 as admin: %s", a)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := p4.Wait(ctx); err != nil {
			t.Fatalf("removed n4 did not exit cleanly: %v", err)
		}
	})

	t.Run("audit records", func(t *testing.T) {
		want := []string{"POST /v1/cluster/join", "POST /v1/cluster/transfer-leadership", "DELETE /v1/cluster/nodes/n4"}
		var recs []wire.AuditRecord
		var page answer
		waitTLS(t, 20*time.Second, "audit records of "+strings.Join(want, ", "), func() bool {
			page = sc.do(t, 0, admin, req{method: http.MethodGet, path: "/v1/log?from=1&limit=1000"})
			recs = auditRecords(t, page.body)
			for _, w := range want {
				if !slices.ContainsFunc(recs, func(r wire.AuditRecord) bool { return r.Action == w && r.Status == http.StatusOK }) {
					return false
				}
			}
			return true
		})
		for _, r := range recs {
			t.Logf("audit: %+v", r)
			if r.Who != credAdmin || r.Role != "admin" {
				t.Errorf("audit record %+v: want only the admin's (refused requests are not recorded)", r)
			}
		}
		// By key too.
		var key string
		for _, e := range logEntries(t, page.body) {
			for _, op := range e.Ops {
				if strings.HasPrefix(op.Key, "_txlog/audit/") {
					key = op.Key
				}
			}
		}
		if a := sc.do(t, 0, admin, req{method: http.MethodGet, path: "/v1/kv/" + key}); a.status != http.StatusOK {
			t.Fatalf("GET %s as admin: %s", key, a)
		}
		// A reader sees none of them.
		for _, c := range []cred{reader, readerCert, writer, sc.tok(credAReader)} {
			if a := sc.do(t, 0, c, req{method: http.MethodGet, path: "/v1/kv/" + key}); a.status == http.StatusOK {
				t.Errorf("GET %s as a non-admin: %s, want refused", key, a)
			}
			a := sc.do(t, 0, c, req{method: http.MethodGet, path: "/v1/log?from=1&limit=1000"})
			if a.status != http.StatusOK || bytes.Contains(a.body, []byte("_txlog/")) {
				t.Errorf("log as a non-admin: %s, want 200 without _txlog/ entries", a)
			}
			s := sc.do(t, 0, c, req{method: http.MethodGet, path: "/v1/log/stream?from=1", stream: true})
			if bytes.Contains(s.body, []byte("_txlog/")) {
				t.Errorf("stream as a non-admin shows _txlog/: %q", s.body)
			}
		}
	})
}

// logEntries decodes a GET /v1/log answer.
func logEntries(t *testing.T, body []byte) []wire.LogEntry {
	t.Helper()
	var page wire.LogPage
	if err := json.Unmarshal(body, &page); err != nil {
		t.Fatalf("log page %q: %v", body, err)
	}
	return page.Entries
}

// auditRecords returns the audit records in a GET /v1/log answer.
func auditRecords(t *testing.T, body []byte) []wire.AuditRecord {
	t.Helper()
	var recs []wire.AuditRecord
	for _, e := range logEntries(t, body) {
		for _, op := range e.Ops {
			if !strings.HasPrefix(op.Key, "_txlog/audit/") {
				continue
			}
			var r wire.AuditRecord
			if err := json.Unmarshal(op.Value, &r); err != nil {
				t.Fatalf("audit record %s: %q: %v", op.Key, op.Value, err)
			}
			recs = append(recs, r)
		}
	}
	return recs
}

var _ = url.QueryEscape
var _ sync.Mutex
var _ atomic.Int64
