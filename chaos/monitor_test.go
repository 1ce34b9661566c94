package chaos

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/launcher"
)

// memNodeServer serves node id of s as the api does, as after a fault that
// killed n1: n2 leads, and n2 and n3 are a majority without n1.
func memNodeServer(t *testing.T, s *memStore, id string) http.Handler {
	t.Helper()
	down := filepath.Join(t.TempDir(), "down")
	if err := os.WriteFile(down, []byte("n1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return api.NewServer(api.Config{}, &memNode{id: id, s: s, down: down})
}

// noIDServer is a process that is no txlog node but answers every GET with 200
// and an empty JSON object, /readyz included.
var noIDServer = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte("{}"))
})

// takeOver serves foreign for the first n requests and node after them, as at a
// port that another process held until the node got it back.
func takeOver(foreign, node http.Handler, n int64) http.Handler {
	var seen atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if seen.Add(1) <= n {
			foreign.ServeHTTP(w, r)
			return
		}
		node.ServeHTTP(w, r)
	})
}

// serveNodes serves handlers[id] for each node and returns the monitor's map of
// node ID to URL.
func serveNodes(t *testing.T, handlers map[string]http.Handler) map[string]string {
	t.Helper()
	urls := map[string]string{}
	for id, h := range handlers {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		urls[id] = srv.URL
	}
	return urls
}

// TestMonitorWaitHealthyChecksNodeID: after n1 was killed, a process at n1's
// URL that answers /readyz with 200 but /v1/cluster as another node, or as no
// node, does not make the cluster healthy (n2 and n3 agree on n2 meanwhile),
// and the error names the node and what it answered; once n1 itself answers
// there again, waitHealthy passes.
func TestMonitorWaitHealthyChecksNodeID(t *testing.T) {
	s := newMemStore()
	for _, tc := range []struct {
		name    string
		atN1    http.Handler // what serves the URL the monitor has for n1
		wantGot *string      // the ID the wrong answer gave; nil when waitHealthy passes
	}{
		{"every node answers as itself", memNodeServer(t, s, "n1"), nil},
		{"n2 answers at the URL of n1", memNodeServer(t, s, "n2"), new("n2")},
		{"a server with no node ID at the URL of n1", noIDServer, new("")},
		{"a server with no node ID, then n1", takeOver(noIDServer, memNodeServer(t, s, "n1"), 4), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMonitor(serveNodes(t, map[string]http.Handler{
				"n1": tc.atN1,
				"n2": memNodeServer(t, s, "n2"),
				"n3": memNodeServer(t, s, "n3"),
			}), Credentials{})
			ctx := testCtx(t, 2*time.Second)
			err := m.waitHealthy(ctx)
			if tc.wantGot == nil {
				if err != nil {
					t.Fatalf("waitHealthy() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, errNotHealthy) {
				t.Fatalf("waitHealthy() = %v, want errNotHealthy", err)
			}
			wn, ok := errors.AsType[*launcher.WrongNodeError](err)
			if !ok || wn.Want != "n1" || wn.Got != *tc.wantGot {
				t.Fatalf("waitHealthy() = %v, want a wrongNodeError n1 answered as %q", err, *tc.wantGot)
			}
			if want := `n1: answered as "` + *tc.wantGot + `"`; !strings.Contains(err.Error(), want) {
				t.Errorf("waitHealthy() = %v, want it to say %s", err, want)
			}
		})
	}
}

// TestMonitorLeavesOutWrongNode: views, and so waitLeader, waitSettled and the
// leader timeline, leave out a node whose URL answers as another node, and
// readLog does not read the log behind that URL.
func TestMonitorLeavesOutWrongNode(t *testing.T) {
	s := newMemStore()
	m := newMonitor(serveNodes(t, map[string]http.Handler{
		"n1": memNodeServer(t, s, "n2"),
		"n2": memNodeServer(t, s, "n2"),
		"n3": memNodeServer(t, s, "n3"),
	}), Credentials{})
	ctx := testCtx(t, 5*time.Second)
	views, err := m.views(ctx, requestTimeout)
	if _, ok := views["n1"]; ok || len(views) != 2 {
		t.Errorf("views() has %d nodes, n1 among them %v; want n2 and n3", len(views), ok)
	}
	if wn, ok := errors.AsType[*launcher.WrongNodeError](err); !ok || wn.Want != "n1" || wn.Got != "n2" {
		t.Errorf("views() error = %v, want n1 answered as n2", err)
	}
	if _, err := m.readLog(ctx, "n1", 10); !isWrongNode(err) {
		t.Errorf("readLog(n1) = %v, want a wrongNodeError", err)
	}
	if _, err := m.readLog(ctx, "n2", 10); err != nil {
		t.Errorf("readLog(n2) = %v, want nil", err)
	}
}

func isWrongNode(err error) bool {
	_, ok := errors.AsType[*launcher.WrongNodeError](err)
	return ok
}
