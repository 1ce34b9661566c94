package api

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
)

// TestServeRead checks the read helper's shape on its own: a refused query
// or argument reaches no backend, the wait extends the deadline, a backend
// error goes through the code table and a result is 200 JSON.
func TestServeRead(t *testing.T) {
	cfg := Config{DefaultTimeout: time.Second}.withDefaults()
	a := &answers{cfg: cfg, log: cfg.Logger, streams: &streamSlots{max: 1}}
	const wait = 30 * time.Second
	type out struct {
		N int `json:"n"`
	}
	run := func(target string, argErr, callErr error) (*httptest.ResponseRecorder, bool) {
		called := false
		rec := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, target, nil)
		serveRead(a, rec, r, []string{"x"}, func(_ *http.Request, q query) (string, time.Duration, error) {
			v, _ := q.get("x")
			return v, wait, argErr
		}, func(ctx context.Context, x string, _ wire.ReadOptions) (out, error) {
			called = true
			if x != "7" {
				t.Errorf("call got %q, want 7", x)
			}
			dl, ok := ctx.Deadline()
			if left := time.Until(dl); !ok || left < wait || left > wait+a.cfg.DefaultTimeout {
				t.Errorf("deadline in %v (set %v), want wait+DefaultTimeout", left, ok)
			}
			return out{N: 7}, callErr
		})
		return rec, called
	}

	if rec, called := run("/r?x=7", nil, nil); rec.Code != http.StatusOK || rec.Body.String() != "{\"n\":7}\n" || !called {
		t.Errorf("ok read = %d %q (called %v), want 200 {\"n\":7}", rec.Code, rec.Body, called)
	}
	if rec, called := run("/r?x=7&y=1", nil, nil); rec.Code != http.StatusBadRequest || called {
		t.Errorf("unknown parameter = %d (called %v), want 400 and no call", rec.Code, called)
	}
	argErr := &wire.Error{Code: wire.CodeInvalidParam, Message: "x: bad"}
	if rec, called := run("/r?x=7", argErr, nil); rec.Code != http.StatusBadRequest || errorOf(t, rec).Message != "x: bad" || called {
		t.Errorf("bad argument = %d %q (called %v), want 400 x: bad and no call", rec.Code, rec.Body, called)
	}
	if rec, _ := run("/r?x=7", nil, wire.ErrNotFound); rec.Code != http.StatusNotFound || errorOf(t, rec).Code != wire.CodeNotFound {
		t.Errorf("not found = %d %q, want 404 not_found", rec.Code, rec.Body)
	}
	if rec, _ := run("/r?x=7", nil, errors.New("disk on fire")); rec.Code != http.StatusInternalServerError {
		t.Errorf("internal = %d, want 500", rec.Code)
	}
}
