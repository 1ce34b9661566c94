package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/ui"
)

// TestNotServed: on a node whose Backend has no leases or consumer groups,
// their read and write routes answer the table's 404 saying what the node
// does not serve, not "no route" on a route that exists.
func TestNotServed(t *testing.T) {
	srv := NewServer(Config{}, &fakeBackend{})
	for _, tc := range []struct{ method, path, want string }{
		{"GET", "/v1/leases", "leases are not served by this node"},
		{"GET", "/v1/leases/l1", "leases are not served by this node"},
		{"PUT", "/v1/leases/l1", "leases are not served by this node"},
		{"DELETE", "/v1/leases/l1", "leases are not served by this node"},
		{"GET", "/v1/consumers", "consumer groups are not served by this node"},
		{"GET", "/v1/consumers/g1", "consumer groups are not served by this node"},
	} {
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, httptest.NewRequest(tc.method, tc.path, strings.NewReader(`{}`)))
		var got struct{ Error wire.ErrorBody }
		if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Code != http.StatusNotFound ||
			got.Error.Code != wire.CodeNotFound || got.Error.Message != tc.want {
			t.Errorf("%s %s = %d %s, want 404 not_found %q", tc.method, tc.path, w.Code, w.Body, tc.want)
		}
	}
}

// TestPageNotFound: a path under /ui/ that names no file of the page
// answers the JSON 404 of the table naming the path, not net/http's plain
// text; the page itself is still served.
func TestPageNotFound(t *testing.T) {
	d := ui.NewHandler(ui.Config{ID: "n1", Stats: ui.NewStats(time.Unix(0, 0)), Events: &ui.Events{}})
	srv := NewServer(Config{Dashboard: d}, &fakeBackend{})
	for _, path := range []string{"/ui/nope", "/ui/nope/deeper.js", "/ui/index.html/x"} {
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		var got struct{ Error wire.ErrorBody }
		want := "no route GET " + path
		if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Code != http.StatusNotFound ||
			got.Error.Code != wire.CodeNotFound || got.Error.Message != want || w.Header().Get("Content-Type") != "application/json" {
			t.Errorf("GET %s = %d %q (%s), want a JSON 404 %q", path, w.Code, w.Body, w.Header().Get("Content-Type"), want)
		}
	}
	for _, path := range []string{"/ui/", "/ui/index.html"} {
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		if w.Code != http.StatusOK && w.Code != http.StatusMovedPermanently {
			t.Errorf("GET %s = %d, want the page", path, w.Code)
		}
	}
}
