package notify

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// memStore is an in-memory Pending and Done.
type memStore struct {
	mu    sync.Mutex
	items map[uint64]Item
	done  chan uint64
}

func (m *memStore) pending(max int) ([]Item, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Item
	for i := uint64(1); i <= 10 && len(out) < max; i++ {
		if it, ok := m.items[i]; ok {
			out = append(out, it)
		}
	}
	return out, nil
}

func (m *memStore) finish(_ context.Context, idx []uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, i := range idx {
		if _, ok := m.items[i]; ok {
			delete(m.items, i)
			m.done <- i
		}
	}
	return nil
}

// TestDeliverer: a receiver that fails twice then answers 200 gets each body
// signed and with its delivery id; a url the list refuses and one past the
// horizon are dropped; each ends in Done exactly once.
func TestDeliverer(t *testing.T) {
	secret := []byte("s")
	var mu sync.Mutex
	calls := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		id := r.Header.Get(HeaderDelivery)
		if !Verify(secret, body, r.Header.Get(HeaderSignature)) {
			t.Errorf("delivery %s: bad signature", id)
		}
		mu.Lock()
		calls[id]++
		n := calls[id]
		mu.Unlock()
		if id == "always-500" || n < 3 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
	}))
	defer srv.Close()
	allow, err := ParseAllowList("127.0.0.1:*")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	m := &memStore{done: make(chan uint64, 10), items: map[uint64]Item{
		1: {Index: 1, ID: "a", URL: srv.URL + "/a", Body: []byte(`{"n":1}`), Decided: now},
		2: {Index: 2, ID: "b", URL: srv.URL + "/b", Body: []byte(`{"n":2}`), Decided: now},
		3: {Index: 3, ID: "refused", URL: "http://localhost:1/", Body: []byte(`{}`), Decided: now},
		4: {Index: 4, ID: "always-500", URL: srv.URL, Body: []byte(`{}`), Decided: now.Add(-time.Hour)},
	}}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() {
		ran <- Run(ctx, Config{Pending: m.pending, Done: m.finish, Secret: secret, Allow: allow,
			MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, Horizon: time.Minute, Poll: time.Millisecond})
	}()
	got := map[uint64]bool{}
	for len(got) < 4 {
		select {
		case i := <-m.done:
			if got[i] {
				t.Fatalf("index %d done twice", i)
			}
			got[i] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("done %v after 10s; want 1-4", got)
		}
	}
	cancel()
	if err := <-ran; err != context.Canceled {
		t.Fatalf("Run() = %v; want context.Canceled", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls["a"] != 3 || calls["b"] != 3 || calls["refused"] != 0 || calls["always-500"] != 1 {
		t.Fatalf("calls = %v; want a and b 3, refused 0, always-500 1", calls)
	}
}
