package ui

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestHandler(t *testing.T) {
	st := NewStats(time.Unix(0, 0))
	st.Observe(time.Millisecond, 3)
	st.Sample(time.Unix(2, 0))
	var es Events
	es.Add(Event{At: time.Unix(10, 0), Kind: EventLeaderChange, Node: "n2", Message: "n2 is the leader in term 3"})
	h := NewHandler(Config{
		ID: "n1", Stats: st, Events: &es,
		Status:      func() NodeStatus { return NodeStatus{State: "follower", Term: 3, CommitIndex: 9, AppliedIndex: 8} },
		ExtraEvents: func() []Event { return []Event{{At: time.Unix(5, 0), Kind: EventAlert, Message: "lag"}} },
	})
	get := func(path string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		w.Header().Set("Content-Type", "application/json") // as api.Server sets it first
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		return w
	}

	t.Run("stats", func(t *testing.T) {
		w := get("/v1/stats")
		if w.Code != 200 || w.Header().Get("Access-Control-Allow-Origin") != "" {
			t.Fatalf("GET /v1/stats = %d, CORS %q; want 200 and no CORS header (the page reads /v1/stats/members)", w.Code, w.Header().Get("Access-Control-Allow-Origin"))
		}
		var a StatsAnswer
		if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil {
			t.Fatal(err)
		}
		if a.ID != "n1" || a.Interval != "2s" || a.Node.AppliedIndex != 8 || len(a.Samples) != 1 || a.Samples[0].WritesPerSec != 1.5 {
			t.Fatalf("GET /v1/stats = %+v", a)
		}
	})
	t.Run("events", func(t *testing.T) {
		w := get("/v1/events")
		if w.Header().Get("Access-Control-Allow-Origin") != "" {
			t.Fatalf("GET /v1/events has CORS header %q, want none", w.Header().Get("Access-Control-Allow-Origin"))
		}
		var a EventsAnswer
		if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil {
			t.Fatal(err)
		}
		if len(a.Events) != 2 || a.Events[0].Kind != EventAlert || a.Events[1].Kind != EventLeaderChange {
			t.Fatalf("GET /v1/events = %+v, want the alert, then the leader change", a.Events)
		}
	})
	t.Run("page", func(t *testing.T) {
		w := get("/ui/")
		if w.Code != 200 || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") || !strings.Contains(w.Body.String(), `id="leader"`) {
			t.Fatalf("GET /ui/ = %d %q, want the page as text/html", w.Code, w.Header().Get("Content-Type"))
		}
	})
	t.Run("missing file", func(t *testing.T) {
		if w := get("/ui/nope.js"); w.Code != 404 {
			t.Fatalf("GET /ui/nope.js = %d, want 404", w.Code)
		}
	})
}

// TestHandlerRedirect: GET / sends a browser to /ui/ with a 302, not a JSON answer.
func TestHandlerRedirect(t *testing.T) {
	h := NewHandler(Config{ID: "n1", Stats: NewStats(time.Unix(0, 0)), Events: &Events{}})
	w := httptest.NewRecorder()
	w.Header().Set("Content-Type", "application/json") // as api.Server sets it first
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
	if w.Code != http.StatusFound || w.Header().Get("Location") != "/ui/" || w.Header().Get("Content-Type") == "application/json" {
		t.Fatalf("GET / = %d, Location %q, Content-Type %q; want 302 to /ui/, not JSON", w.Code, w.Header().Get("Location"), w.Header().Get("Content-Type"))
	}
}

// TestHandlerServes: Serves tells the page's files and routes from any
// other path, so that the API can answer those with its JSON 404.
func TestHandlerServes(t *testing.T) {
	h := NewHandler(Config{ID: "n1", Stats: NewStats(time.Unix(0, 0)), Events: &Events{}})
	for path, want := range map[string]bool{
		"/": true, "/ui/": true, "/ui/index.html": true, "/v1/stats": true, "/v1/events": true, "/v1/stats/members": true,
		"/ui/nope": false, "/ui/nope/x.js": false, "/ui/../etc/passwd": false, "/ui//index.html": false, "/v1/nope": false, "/ui": false,
	} {
		if got := h.Serves(path); got != want {
			t.Errorf("Serves(%q) = %v, want %v", path, got, want)
		}
	}
}
