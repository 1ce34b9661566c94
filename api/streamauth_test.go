package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/auth"
	"github.com/txlog/txlog/txid"
)

// swapAuth is a fakeAuth whose credentials a test changes, as a re-read
// auth file does.
type swapAuth struct {
	mu sync.Mutex
	m  fakeAuth
}

func (s *swapAuth) Authenticate(r *http.Request) (*auth.Principal, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m.Authenticate(r)
}

func (s *swapAuth) set(tok string, p *auth.Principal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p == nil {
		delete(s.m, tok)
	} else {
		s.m[tok] = p
	}
}

// TestLogStreamCredentialGone: a stream whose token is removed, or whose
// key prefixes change, ends before its next page (or at its next heartbeat
// when idle), and its reconnect is refused; a stream whose credential holds
// goes on.
func TestLogStreamCredentialGone(t *testing.T) {
	m := newMemLog()
	m.append(1, "acct/a")
	sa := &swapAuth{m: fakeAuth{}}
	for _, tok := range []string{"gone", "narrowed", "kept", "idle"} {
		sa.set(tok, &auth.Principal{Name: tok, Role: auth.RoleRead, Via: "token"})
	}
	cfg := testConfig
	cfg.Auth = sa
	cfg.logHeartbeat = 20 * time.Millisecond
	srv := httptest.NewServer(NewServer(cfg, m))
	t.Cleanup(srv.Close) // after the streams' own cleanups end them
	bearer := func(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }
	streams := map[string]*sseLines{}
	for _, tok := range []string{"gone", "narrowed", "kept", "idle"} {
		resp, l := openStream(t, srv, "/v1/log/stream?from=1", bearer(tok))
		if resp.StatusCode != 200 {
			t.Fatalf("stream as %s: %d", tok, resp.StatusCode)
		}
		l.next() // the opening comment
		l.next()
		l.event(1, "acct/a")
		streams[tok] = l
	}
	sa.set("gone", nil)
	sa.set("narrowed", &auth.Principal{Name: "narrowed", Role: auth.RoleRead, Prefixes: []string{"other/"}, Via: "token"})
	m.append(2, "acct/b")
	streams["kept"].event(2, "acct/b")
	streams["idle"].event(2, "acct/b")
	// Nothing more is written: the idle stream ends at a heartbeat.
	sa.set("idle", nil)
	for _, tok := range []string{"gone", "narrowed", "idle"} {
		deadline := time.After(5 * time.Second)
		for open := true; open; {
			select {
			case s, ok := <-streams[tok].ch:
				if strings.HasPrefix(s, "id:") || strings.HasPrefix(s, "data:") {
					t.Fatalf("stream as %s after its credential changed: %q", tok, s)
				}
				open = ok
			case <-deadline:
				t.Fatalf("stream as %s still open 5s after its credential changed", tok)
			}
		}
	}
	if resp, _ := openStream(t, srv, "/v1/log/stream?from=1", bearer("gone")); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("reconnect of a removed token: %d, want 401", resp.StatusCode)
	}
}

// TestWaitingReadCredentialGone: a long poll of the log and a waiting tx
// lookup whose token is removed while they wait answer 401, not what they
// waited for; one whose token holds answers it.
func TestWaitingReadCredentialGone(t *testing.T) {
	m := newMemLog()
	m.append(1, "acct/a")
	release := make(chan struct{})
	m.TxFunc = func(ctx context.Context, id txid.ID, wait time.Duration) (wire.TxResult, error) {
		select {
		case <-release:
			return wire.TxResult{TxID: id, Status: wire.StatusPending}, nil
		case <-ctx.Done():
			return wire.TxResult{}, ctx.Err()
		}
	}
	sa := &swapAuth{m: fakeAuth{}}
	for _, tok := range []string{"gone", "kept"} {
		sa.set(tok, &auth.Principal{Name: tok, Role: auth.RoleRead, Via: "token"})
	}
	cfg := testConfig
	cfg.Auth = sa
	s := NewServer(cfg, m)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	type result struct {
		target, tok string
		status      int
	}
	results := make(chan result, 4)
	var started sync.WaitGroup
	for _, target := range []string{"/v1/log?from=2&wait=30s", "/v1/tx/" + txid.ID(7).String() + "?wait=30s"} {
		for _, tok := range []string{"gone", "kept"} {
			started.Add(1)
			go func() {
				req, _ := http.NewRequest("GET", srv.URL+target, nil)
				req.Header.Set("Authorization", "Bearer "+tok)
				started.Done()
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					results <- result{target, tok, 0}
					return
				}
				resp.Body.Close()
				results <- result{target, tok, resp.StatusCode}
			}()
		}
	}
	started.Wait()
	// The reads are waiting once each took a slot; then the token goes.
	deadline := time.Now().Add(5 * time.Second)
	for s.streams.inUse() < 4 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	sa.set("gone", nil)
	m.append(2, "acct/b")
	close(release)
	for range 4 {
		r := <-results
		want := http.StatusOK
		if r.tok == "gone" {
			want = http.StatusUnauthorized
		}
		if r.status != want {
			t.Errorf("GET %s as %s: %d, want %d", r.target, r.tok, r.status, want)
		}
	}
}
