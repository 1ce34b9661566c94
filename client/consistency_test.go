package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/txid"
)

// TestReadConsistency: each read takes a consistency as Get does, sends it
// as the consistency parameter, and sends none without one (the node's
// default, linearizable).
func TestReadConsistency(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.URL.Query().Get("consistency"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"error":{"code":"not_found","message":"nothing here"}}` + "\n"))
	}))
	t.Cleanup(srv.Close)
	c := testHTTPClient(srv.URL)
	stale := wire.ReadOptions{Consistency: wire.ConsistencyStale}
	for _, tc := range []struct {
		name string
		read func(ctx context.Context, opts ...wire.ReadOptions) error
	}{
		{"Tx", func(ctx context.Context, o ...wire.ReadOptions) error {
			_, err := c.Tx(ctx, txid.ID(1), 0, o...)
			return err
		}},
		{"TxByIdempotencyKey", func(ctx context.Context, o ...wire.ReadOptions) error {
			_, err := c.TxByIdempotencyKey(ctx, "k", 0, o...)
			return err
		}},
		{"Consumer", func(ctx context.Context, o ...wire.ReadOptions) error {
			_, err := c.Consumer(ctx, "g", o...)
			return err
		}},
		{"Consumers", func(ctx context.Context, o ...wire.ReadOptions) error { _, err := c.Consumers(ctx, o...); return err }},
		{"Leases", func(ctx context.Context, o ...wire.ReadOptions) error { _, err := c.Leases(ctx, o...); return err }},
		{"LeaseWith", func(ctx context.Context, o ...wire.ReadOptions) error {
			opts := wire.ReadOptions{}
			if len(o) > 0 {
				opts = o[0]
			}
			_, err := c.LeaseWith(ctx, "l", 0, 0, opts)
			return err
		}},
		{"Cluster", func(ctx context.Context, o ...wire.ReadOptions) error { _, err := c.Cluster(ctx, o...); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			mu.Lock()
			got = nil
			mu.Unlock()
			tc.read(ctx)
			tc.read(ctx, stale)
			tc.read(ctx, wire.ReadOptions{Consistency: wire.ConsistencyLeader})
			mu.Lock()
			defer mu.Unlock()
			want := []string{"", wire.ConsistencyStale, wire.ConsistencyLeader}
			if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
				t.Fatalf("consistency sent = %q, want %q", got, want)
			}
		})
	}
}

// TestGiveUpNamesTheAnswer: a read that gives up while one node answers
// no_leader and another does not answer at all reports the node's answer
// (ErrNoLeader), whichever endpoint it tried last, not the refused
// connection.
func TestGiveUpNamesTheAnswer(t *testing.T) {
	noLeader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"error":{"code":"no_leader","message":"no leader reachable"}}` + "\n"))
	}))
	t.Cleanup(noLeader.Close)
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close() // connections to it are refused
	for _, eps := range [][]string{{noLeader.URL, dead.URL}, {dead.URL, noLeader.URL}} {
		c := testHTTPClient(eps...)
		ctx, cancel := context.WithTimeout(t.Context(), 700*time.Millisecond)
		_, err := c.Leases(ctx)
		cancel()
		if !errors.Is(err, wire.ErrNoLeader) {
			t.Errorf("Leases via %v = %v, want ErrNoLeader (a node's answer)", eps, err)
		}
	}
}
