package api

import (
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/auth"
)

// countedAuth is a reloadableAuth that counts its generations, as
// *auth.File does, and its Authenticate calls.
type countedAuth struct {
	reloadableAuth
	gen   atomic.Uint64
	calls atomic.Int64
}

func (a *countedAuth) Authenticate(r *http.Request) (*auth.Principal, error) {
	a.calls.Add(1)
	return a.reloadableAuth.Authenticate(r)
}

func (a *countedAuth) Generation() uint64 { return a.gen.Load() }

// set changes tok's credential, then the generation, in *auth.File's order.
func (a *countedAuth) set(tok string, p *auth.Principal) {
	a.reloadableAuth.set(tok, p)
	a.gen.Add(1)
}

// TestTxStreamCredentialCached: with an Authenticator that counts its
// generations, a stream's requests authenticate once per generation, and a
// credential removed, lowered or narrowed by a reload still ends the stream
// at its next request.
func TestTxStreamCredentialCached(t *testing.T) {
	for _, tc := range credentialChanges {
		t.Run(tc.name, func(t *testing.T) {
			ca := &countedAuth{reloadableAuth: reloadableAuth{m: fakeAuth{"tok": {Name: "w", Role: auth.RoleWrite}}}}
			b := newStreamBackend()
			ts, _ := startStreamServer(t, Config{Auth: ca}, b)
			c := dialStream(t, ts, http.Header{"Authorization": {"Bearer tok"}})
			upgrade := ca.calls.Load()
			for id := uint64(1); id <= 5; id++ {
				c.send(wire.EncodeTxStreamRequest(id, "", txBody("k")))
				if a := c.mustRead(); a.status != 200 {
					t.Fatalf("answer %d = %d %s", id, a.status, a.body)
				}
			}
			if got := ca.calls.Load() - upgrade; got != 1 {
				t.Fatalf("5 requests of one generation authenticated %d times, want 1", got)
			}
			// A reload that keeps the credential: checked again, and holds.
			ca.set("tok", &auth.Principal{Name: "w", Role: auth.RoleWrite})
			c.send(wire.EncodeTxStreamRequest(6, "", txBody("k")))
			if a := c.mustRead(); a.status != 200 {
				t.Fatalf("answer after a reload = %d %s", a.status, a.body)
			}
			if got := ca.calls.Load() - upgrade; got != 2 {
				t.Fatalf("after a reload: %d authentications, want 2", got)
			}
			ca.set("tok", tc.now)
			c.mustEndAfterChange(tc, 7, b)
		})
	}
}
