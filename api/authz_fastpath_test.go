package api_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/api/apitest"
	"github.com/txlog/txlog/api/fastpath"
	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/auth"
)

// tokenAuth knows two bearer tokens: "w" (write) and "r" (read).
type tokenAuth struct{}

func (tokenAuth) Authenticate(r *http.Request) (*auth.Principal, error) {
	switch r.Header.Get("Authorization") {
	case "Bearer w":
		return &auth.Principal{Name: "writer", Role: auth.RoleWrite, Prefixes: []string{"al/"}, Via: "token"}, nil
	case "Bearer r":
		return &auth.Principal{Name: "reader", Role: auth.RoleRead, Via: "token"}, nil
	}
	return nil, fmt.Errorf("%w: no known token", auth.ErrUnauthenticated)
}

// TestAuthOnTheFastPath: the requests api/fastpath answers itself (plain
// POST /v1/tx and /v1/tx/batch) pass the same Host, Origin, credential, role
// and scope checks as net/http's, and a refused one commits nothing.
func TestAuthOnTheFastPath(t *testing.T) {
	var commits atomic.Int64
	b := &apitest.Backend{
		SubmitFunc: func(context.Context, wire.TxRequest, wire.SubmitOptions) (wire.TxResult, error) {
			commits.Add(1)
			return wire.TxResult{TxID: 1, Status: wire.StatusCommitted, Index: 1}, nil
		},
		SubmitBatchFunc: func(_ context.Context, txs []wire.TxRequest, _ wire.SubmitOptions) ([]wire.TxResult, error) {
			commits.Add(int64(len(txs)))
			return make([]wire.TxResult, len(txs)), nil
		},
	}
	s := api.NewServer(api.Config{Auth: tokenAuth{}, AdvertiseHost: "node1.example"}, b)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fl := fastpath.NewFastListener(s, ln, fastpath.FastConfig{})
	srv := &http.Server{Handler: s}
	go srv.Serve(fl)
	t.Cleanup(func() { srv.Close(); fl.CloseAll() })

	const tx = `{"ops":[{"op":"put","key":"al/x","value":1}]}`
	tests := []struct {
		name, path, host, headers, body string
		status                          int
		commits                         int64
	}{
		{"no credential", "/v1/tx", "127.0.0.1", "", tx, 401, 0},
		{"unknown token", "/v1/tx", "127.0.0.1", "Authorization: Bearer nope\r\n", tx, 401, 0},
		{"read token", "/v1/tx", "127.0.0.1", "Authorization: Bearer r\r\n", tx, 403, 0},
		{"write token", "/v1/tx", "127.0.0.1", "Authorization: Bearer w\r\n", tx, 200, 1},
		{"out of scope", "/v1/tx", "127.0.0.1", "Authorization: Bearer w\r\n", `{"ops":[{"op":"put","key":"bee/x","value":1}]}`, 403, 0},
		{"cross-site text/plain", "/v1/tx", "127.0.0.1", "Authorization: Bearer w\r\nContent-Type: text/plain\r\nOrigin: https://evil.example\r\n", tx, 403, 0},
		{"rebound host", "/v1/tx", "evil.example", "Authorization: Bearer w\r\n", tx, 403, 0},
		{"advertised host", "/v1/tx", "node1.example:8080", "Authorization: Bearer w\r\n", tx, 200, 1},
		{"batch without credential", "/v1/tx/batch", "127.0.0.1", "", `{"txs":[` + tx + `]}`, 401, 0},
		{"batch out of scope", "/v1/tx/batch", "127.0.0.1", "Authorization: Bearer w\r\n", `{"txs":[` + tx + `,{"ops":[{"op":"delete","key":"bee/x"}]}]}`, 403, 0},
		{"batch in scope", "/v1/tx/batch", "127.0.0.1", "Authorization: Bearer w\r\n", `{"txs":[` + tx + `]}`, 200, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, served := commits.Load(), fl.Served()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\n%sContent-Length: %d\r\n\r\n%s", tt.path, tt.host, tt.headers, len(tt.body), tt.body)
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.status || commits.Load()-before != tt.commits {
				t.Fatalf("= %d, %d commits; want %d, %d", resp.StatusCode, commits.Load()-before, tt.status, tt.commits)
			}
			if tt.status == 401 && !strings.Contains(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Fatalf("401 without a Bearer challenge: %v", resp.Header)
			}
			if fl.Served() != served+1 {
				t.Fatalf("the fast path served %d requests, want 1", fl.Served()-served)
			}
		})
	}
}
