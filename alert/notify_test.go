package alert

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestWebhookRetriesAndFormats: the receiver fails the first two POSTs; the
// event arrives once, in the format asked for.
func TestWebhookRetriesAndFormats(t *testing.T) {
	for _, f := range []Format{FormatJSON, FormatSlack} {
		t.Run(string(f), func(t *testing.T) {
			got := make(chan []byte, 10)
			calls := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls++
				if calls <= 2 {
					w.WriteHeader(http.StatusServiceUnavailable)
					return
				}
				b, _ := io.ReadAll(r.Body)
				got <- b
			}))
			defer srv.Close()
			m, err := New(Config{Node: "n1", Webhooks: []string{srv.URL}, Format: f, retryBase: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go m.deliver(ctx, srv.URL, m.queues[0])
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			m.Step(Snapshot{Now: now, DiskFreeRatio: 0.01})
			b := <-got
			if f == FormatSlack {
				var s map[string]string
				if err := json.Unmarshal(b, &s); err != nil || len(s) != 1 || s["text"] == "" {
					t.Fatalf("slack body %s: %v", b, err)
				}
				return
			}
			var e map[string]any
			if err := json.Unmarshal(b, &e); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"alert", "status", "severity", "node", "summary", "since", "labels"} {
				if _, ok := e[k]; !ok {
					t.Fatalf("body %s lacks %q", b, k)
				}
			}
			if e["alert"] != DiskLow || e["status"] != Firing {
				t.Fatalf("body %s", b)
			}
		})
	}
}

// TestWebhookGivesUp: a receiver that always fails gets retryMax attempts,
// then the next event is sent (delivery is not stuck on the failed one).
func TestWebhookGivesUp(t *testing.T) {
	attempts := make(chan string, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var e Event
		json.Unmarshal(b, &e)
		attempts <- e.Status
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	m, err := New(Config{Node: "n1", Webhooks: []string{srv.URL}, retryBase: time.Millisecond, retryMax: 3})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.deliver(ctx, srv.URL, m.queues[0])
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m.Step(Snapshot{Now: now, BreakerOpen: true, DiskFreeRatio: -1})
	m.Step(Snapshot{Now: now.Add(time.Second), DiskFreeRatio: -1})
	var got []string
	for range 6 {
		got = append(got, <-attempts)
	}
	want := []string{Firing, Firing, Firing, Resolved, Resolved, Resolved}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("attempts %v, want %v", got, want)
		}
	}
}
