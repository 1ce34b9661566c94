package systemtest

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
)

// txsConn is a client stream (GET /v1/tx/stream) to a node of a secCluster,
// spoken by hand over TLS.
type txsConn struct {
	t    *testing.T
	conn net.Conn
	br   *bufio.Reader
	resp *http.Response
}

// dialTxStream asks node i for a client stream with the Authorization header
// auth ("" none), over TLS with the stranger's client certificate (the token
// decides).
func (sc *secCluster) dialTxStream(t *testing.T, i int, auth string) *txsConn {
	t.Helper()
	tr := sc.client(t, "").Transport.(*http.Transport)
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", sc.addrs[i], tr.TLSClientConfig.Clone())
	if err != nil {
		t.Fatalf("dial node %d: %v", i+1, err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(time.Minute))
	var b strings.Builder
	fmt.Fprintf(&b, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: %s\r\n", wire.TxStreamPath, sc.addrs[i], wire.TxStreamProtocol)
	if auth != "" {
		b.WriteString("Authorization: " + auth + "\r\n")
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(conn, b.String()); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("read the upgrade's answer from node %d: %v", i+1, err)
	}
	return &txsConn{t: t, conn: conn, br: br, resp: resp}
}

// roundTrip sends the requests with ids 1.. for bodies at once and returns
// the answers by id.
func (c *txsConn) roundTrip(first uint64, bodies ...string) map[uint64]txsAnswer {
	c.t.Helper()
	var out []byte
	for i, b := range bodies {
		out = wire.AppendTxStreamRequest(out, first+uint64(i), "timeout=10s", []byte(b))
	}
	if _, err := c.conn.Write(out); err != nil {
		c.t.Fatalf("write: %v", err)
	}
	got := map[uint64]txsAnswer{}
	for len(got) < len(bodies) {
		a := c.read()
		if _, dup := got[a.id]; dup || a.id < first || a.id >= first+uint64(len(bodies)) {
			c.t.Fatalf("answer %d: not one of %d..%d, or twice", a.id, first, first+uint64(len(bodies))-1)
		}
		got[a.id] = a
	}
	return got
}

// txsAnswer is one answer of a client stream.
type txsAnswer struct {
	id     uint64
	status int
	code   string // the error's code
	body   []byte
}

func (c *txsConn) read() txsAnswer {
	c.t.Helper()
	msg, err := wire.ReadStreamMessage(c.br, 1<<24)
	if err != nil {
		c.t.Fatalf("read an answer: %v", err)
	}
	id, status, body, err := wire.DecodeTxStreamAnswer(msg)
	if err != nil {
		c.t.Fatal(err)
	}
	var e struct {
		Error wire.ErrorBody `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	return txsAnswer{id: id, status: status, code: e.Error.Code, body: body}
}

// TestTxStream: client streams over TLS with tokens on a real cluster: to a
// follower (which forwards) and to the leader, many requests each, all
// committed once; a wrong token is refused 401, a read token 403, and a
// scoped token gets 403 for a key outside its scope while the stream goes on;
// a token removed from the auth file gets a goaway 401 at its next request.
func TestTxStream(t *testing.T) {
	sc := startSecureCluster(t, 3)
	leader := sc.leader(t)
	follower := (leader + 1) % 3
	bearer := func(name string) string { return "Bearer " + sc.tokens[name] }

	for _, tc := range []struct {
		name string
		node int
	}{{"leader", leader}, {"follower", follower}} {
		t.Run(tc.name, func(t *testing.T) {
			c := sc.dialTxStream(t, tc.node, bearer(credWriter))
			if c.resp.StatusCode != http.StatusSwitchingProtocols {
				t.Fatalf("upgrade = %d", c.resp.StatusCode)
			}
			if got := c.resp.Header.Get(wire.HeaderLeader); got != sc.addrs[leader] {
				t.Errorf("%s = %q, want the leader's %q", wire.HeaderLeader, got, sc.addrs[leader])
			}
			var bodies []string
			for i := range 50 {
				bodies = append(bodies, putBody(fmt.Sprintf("txs-%s-%d", tc.name, i), fmt.Sprintf("txs/%s/%d", tc.name, i)))
			}
			txids := map[string]bool{}
			for id, a := range c.roundTrip(1, bodies...) {
				var res wire.TxResult
				if a.status != http.StatusOK || json.Unmarshal(a.body, &res) != nil || res.Status != wire.StatusCommitted || txids[res.TxID.String()] {
					t.Fatalf("answer %d = %d %s, want 200 committed, a txid of its own", id, a.status, a.body)
				}
				txids[res.TxID.String()] = true
			}
			// The same idempotency key again: the same transaction, not a second one.
			again := c.roundTrip(100, bodies[0])[100]
			var res wire.TxResult
			if again.status != http.StatusOK || json.Unmarshal(again.body, &res) != nil || !txids[res.TxID.String()] {
				t.Fatalf("a retry = %d %s, want the first one's txid", again.status, again.body)
			}
		})
	}

	t.Run("refused", func(t *testing.T) {
		for _, tc := range []struct {
			name, auth string
			want       int
			code       string
		}{
			{"wrong token", "Bearer not-a-token", http.StatusUnauthorized, wire.CodeUnauthenticated},
			{"no credential", "", http.StatusUnauthorized, wire.CodeUnauthenticated},
			{"read token", bearer(credReader), http.StatusForbidden, wire.CodeForbidden},
			{"basic credentials", "Basic " + basicOf(sc.tokens[credWriter]), http.StatusUnauthorized, wire.CodeUnauthenticated},
		} {
			c := sc.dialTxStream(t, follower, tc.auth)
			body, _ := io.ReadAll(io.LimitReader(c.resp.Body, 4096))
			var e struct {
				Error wire.ErrorBody `json:"error"`
			}
			if json.Unmarshal(body, &e) != nil || c.resp.StatusCode != tc.want || e.Error.Code != tc.code {
				t.Errorf("%s: upgrade = %d %s, want %d %s", tc.name, c.resp.StatusCode, body, tc.want, tc.code)
			}
		}
	})

	t.Run("scoped", func(t *testing.T) {
		c := sc.dialTxStream(t, follower, bearer(credAWriter))
		if c.resp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("upgrade = %d", c.resp.StatusCode)
		}
		got := c.roundTrip(1, putBody("", "b/outside"), putBody("", "a/inside"))
		if a := got[1]; a.status != http.StatusForbidden || a.code != wire.CodeForbidden {
			t.Fatalf("a key outside the scope = %d %s, want 403 forbidden", a.status, a.body)
		}
		if a := got[2]; a.status != http.StatusOK {
			t.Fatalf("a key inside the scope = %d %s, want 200", a.status, a.body)
		}
		// The stream stayed.
		if a := c.roundTrip(3, putBody("", "a/again"))[3]; a.status != http.StatusOK {
			t.Fatalf("after a refusal = %d %s, want 200", a.status, a.body)
		}
	})

	t.Run("token removed", func(t *testing.T) {
		c := sc.dialTxStream(t, follower, bearer(credWriter2))
		if a := c.roundTrip(1, putBody("", "txs/removed/0"))[1]; a.status != http.StatusOK {
			t.Fatalf("before the removal = %d %s", a.status, a.body)
		}
		delete(sc.authLines, credWriter2)
		sc.writeAuthFile(t)
		id := uint64(2)
		waitTLS(t, 30*time.Second, "a goaway 401 once the token is gone", func() bool {
			if _, err := c.conn.Write(wire.EncodeTxStreamRequest(id, "", []byte(putBody("", fmt.Sprintf("txs/removed/%d", id))))); err != nil {
				t.Fatalf("write: %v", err)
			}
			a := c.read()
			id++
			switch {
			case a.id == wire.PingID && a.status == http.StatusUnauthorized && a.code == wire.CodeUnauthenticated:
				return true
			case a.status == http.StatusOK:
				time.Sleep(50 * time.Millisecond) // the node re-reads the file on its own schedule
				return false
			}
			t.Fatalf("answer = %d %d %s", a.id, a.status, a.body)
			return false
		})
		if _, err := wire.ReadStreamMessage(c.br, 1<<20); err == nil {
			t.Fatal("the connection stayed open after the goaway")
		}
	})

	// Last: a node that shuts down with a stream open ends it with a goaway
	// 503 and exits in time (the stream's connection is not net/http's).
	t.Run("shutdown", func(t *testing.T) {
		c := sc.dialTxStream(t, follower, bearer(credWriter))
		if a := c.roundTrip(1, putBody("", "txs/shutdown"))[1]; a.status != http.StatusOK {
			t.Fatalf("before the shutdown = %d %s", a.status, a.body)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		stopped := make(chan error, 1)
		go func() { stopped <- sc.c.Nodes()[follower].Stop(ctx) }()
		if a := c.read(); a.id != wire.PingID || a.status != http.StatusServiceUnavailable || a.code != wire.CodeShuttingDown {
			t.Fatalf("at the shutdown: %d %d %s, want a goaway 503 shutting_down", a.id, a.status, a.body)
		}
		if err := <-stopped; err != nil {
			t.Fatalf("Stop() = %v", err)
		}
	})
}

// basicOf is the Basic credentials of a token sent as the password.
func basicOf(token string) string {
	return base64.StdEncoding.EncodeToString([]byte("user:" + token))
}
