package ui

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestMembers runs GET /v1/stats/members against members that answer, fail,
// or never answer, in a synctest bubble: the answer comes at PeerTimeout at
// the latest, whatever a member does.
func TestMembers(t *testing.T) {
	const timeout = 300 * time.Millisecond
	answer := func(id string) StatsAnswer { return StatsAnswer{ID: id, Interval: "2s"} }
	// never blocks until release is closed, ignoring its context: the
	// handler must not wait for it.
	type peerFunc = func(ctx context.Context, id string, release <-chan struct{}) (StatsAnswer, error)
	never := func(ctx context.Context, id string, release <-chan struct{}) (StatsAnswer, error) {
		<-release
		return answer(id), nil
	}
	polite := func(ctx context.Context, id string, release <-chan struct{}) (StatsAnswer, error) {
		<-ctx.Done()
		return StatsAnswer{}, ctx.Err()
	}
	tests := []struct {
		name    string
		members func(context.Context) ([]string, error)
		peers   map[string]peerFunc // nil: no Config.PeerStats
		want    map[string]string   // id → "ok" or a substring of its error
		wantErr string              // a substring of the answer's Error
		took    time.Duration       // the answer's time in the bubble
	}{
		{
			name:    "all answer",
			members: func(context.Context) ([]string, error) { return []string{"n3", "n1", "n2"}, nil },
			peers: map[string]peerFunc{
				"n2": func(context.Context, string, <-chan struct{}) (StatsAnswer, error) { return answer("n2"), nil },
				"n3": func(context.Context, string, <-chan struct{}) (StatsAnswer, error) { return answer("n3"), nil },
			},
			want: map[string]string{"n1": "ok", "n2": "ok", "n3": "ok"},
		},
		{
			name:    "one refuses, one never answers",
			members: func(context.Context) ([]string, error) { return []string{"n1", "n2", "n3"}, nil },
			peers: map[string]peerFunc{
				"n2": func(context.Context, string, <-chan struct{}) (StatsAnswer, error) {
					return StatsAnswer{}, errors.New("peer 127.0.0.1:1: connection refused")
				},
				"n3": never,
			},
			want: map[string]string{"n1": "ok", "n2": "connection refused", "n3": "no answer within 300ms"},
			took: timeout,
		},
		{
			name:    "one gives up at its deadline",
			members: func(context.Context) ([]string, error) { return []string{"n1", "n2"}, nil },
			peers:   map[string]peerFunc{"n2": polite},
			want:    map[string]string{"n1": "ok", "n2": "no answer within 300ms"},
			took:    timeout,
		},
		{
			name:    "membership unreadable",
			members: func(context.Context) ([]string, error) { return nil, errors.New("no raft") },
			peers:   map[string]peerFunc{},
			want:    map[string]string{"n1": "ok"},
			wantErr: "read the members: no raft",
		},
		{
			name:    "membership never read",
			members: func(ctx context.Context) ([]string, error) { <-ctx.Done(); return nil, ctx.Err() },
			peers:   map[string]peerFunc{},
			want:    map[string]string{"n1": "ok"},
			wantErr: "deadline exceeded",
			took:    timeout,
		},
		{
			name:    "no peer stats",
			members: func(context.Context) ([]string, error) { return []string{"n1", "n2"}, nil },
			want:    map[string]string{"n1": "ok", "n2": "no way to reach"},
		},
		{
			name: "no members",
			want: map[string]string{"n1": "ok"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				defer close(release)
				cfg := Config{ID: "n1", Stats: NewStats(time.Now()), Events: &Events{}, Members: tt.members, PeerTimeout: timeout}
				if tt.peers != nil {
					cfg.PeerStats = func(ctx context.Context, id string) (StatsAnswer, error) {
						f, ok := tt.peers[id]
						if !ok {
							t.Errorf("PeerStats(%q): not a peer of this case", id)
							return StatsAnswer{}, errors.New("unknown")
						}
						return f(ctx, id, release)
					}
				}
				h := NewHandler(cfg)
				start := time.Now()
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/v1/stats/members", nil))
				if took := time.Since(start); took != tt.took {
					t.Errorf("answer took %v, want %v", took, tt.took)
				}
				if w.Code != 200 || w.Header().Get("Content-Type") != "application/json" {
					t.Fatalf("GET /v1/stats/members = %d %q, want 200 JSON", w.Code, w.Header().Get("Content-Type"))
				}
				var a MembersAnswer
				if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil {
					t.Fatal(err)
				}
				if (tt.wantErr == "") != (a.Error == "") || !strings.Contains(a.Error, tt.wantErr) {
					t.Errorf("Error = %q, want %q", a.Error, tt.wantErr)
				}
				if len(a.Members) != len(tt.want) {
					t.Fatalf("members = %+v, want %v", a.Members, tt.want)
				}
				prev := ""
				for _, m := range a.Members {
					if m.ID <= prev {
						t.Errorf("members not sorted by ID: %q after %q", m.ID, prev)
					}
					prev = m.ID
					want, ok := tt.want[m.ID]
					switch {
					case !ok:
						t.Errorf("member %q, want none", m.ID)
					case want == "ok" && (m.Stats == nil || m.Stats.ID != m.ID || m.Error != ""):
						t.Errorf("member %s = %+v, want its stats", m.ID, m)
					case want != "ok" && (m.Stats != nil || !strings.Contains(m.Error, want)):
						t.Errorf("member %s = stats %v, error %q; want an error with %q", m.ID, m.Stats, m.Error, want)
					}
				}
			})
		})
	}
}

// TestMembersShared checks that GET /v1/stats/members reads each member's
// stats once for requests that come together or within MembersMaxAge, again
// after it, and that a request that leaves while another computes the answer
// returns at once.
func TestMembersShared(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		calls := map[string]int{}
		slow := make(chan struct{}) // n3 answers when it is closed
		h := NewHandler(Config{
			ID: "n1", Stats: NewStats(time.Now()), Events: &Events{},
			Members: func(context.Context) ([]string, error) { return []string{"n1", "n2", "n3"}, nil },
			PeerStats: func(ctx context.Context, id string) (StatsAnswer, error) {
				mu.Lock()
				calls[id]++
				mu.Unlock()
				if id == "n3" {
					select {
					case <-slow:
					case <-ctx.Done():
						return StatsAnswer{}, ctx.Err()
					}
				}
				return StatsAnswer{ID: id}, nil
			},
		})
		ask := func(ctx context.Context) *httptest.ResponseRecorder {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequestWithContext(ctx, http.MethodGet, "/v1/stats/members", nil))
			return w
		}
		count := func() (int, int) {
			mu.Lock()
			defer mu.Unlock()
			return calls["n2"], calls["n3"]
		}

		// Five at once, and one that leaves while they wait.
		var wg sync.WaitGroup
		answers := make([]*httptest.ResponseRecorder, 5)
		for i := range answers {
			wg.Go(func() { answers[i] = ask(context.Background()) })
		}
		synctest.Wait() // all five wait for n3
		leaver, leave := context.WithCancel(context.Background())
		left := make(chan *httptest.ResponseRecorder)
		go func() { left <- ask(leaver) }()
		synctest.Wait()
		leave()
		if w := <-left; w.Body.Len() != 0 {
			t.Errorf("a request that left got %q, want no answer", w.Body.String())
		}
		close(slow)
		wg.Wait()
		for i, w := range answers {
			var a MembersAnswer
			if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil || len(a.Members) != 3 || a.Members[2].Stats == nil {
				t.Fatalf("answer %d = %q (%v), want n1, n2 and n3 with stats", i, w.Body.String(), err)
			}
		}
		if n2, n3 := count(); n2 != 1 || n3 != 1 {
			t.Fatalf("six requests together read n2 %d and n3 %d times, want once each", n2, n3)
		}

		time.Sleep(MembersMaxAge / 2)
		ask(context.Background())
		if n2, _ := count(); n2 != 1 {
			t.Fatalf("a request within MembersMaxAge read n2 again (%d reads), want the shared answer", n2)
		}
		time.Sleep(MembersMaxAge)
		ask(context.Background())
		if n2, _ := count(); n2 != 2 {
			t.Fatalf("a request after MembersMaxAge: %d reads of n2, want 2", n2)
		}
	})
}

// TestMembersSilence: a member that answered once and then stops answering
// carries when it last answered and for how long it has been silent; one
// that never answered, the time since this node started. A member that
// answers carries neither.
func TestMembersSilence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		up := map[string]bool{"n2": true, "n3": false}
		h := NewHandler(Config{
			ID: "n1", Stats: NewStats(time.Now()), Events: &Events{},
			Members: func(context.Context) ([]string, error) { return []string{"n1", "n2", "n3"}, nil },
			PeerStats: func(ctx context.Context, id string) (StatsAnswer, error) {
				if up[id] {
					return StatsAnswer{ID: id, Node: NodeStatus{AppliedIndex: 42}}, nil
				}
				return StatsAnswer{}, errors.New("connection refused")
			},
		})
		read := func() map[string]MemberStats {
			a, err := h.sharedMembers(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]MemberStats{}
			for _, m := range a.Members {
				out[m.ID] = m
			}
			return out
		}
		first := time.Now()
		got := read()
		if m := got["n2"]; m.Error != "" || m.LastAnswer != nil || m.SilentSeconds != 0 {
			t.Fatalf("n2 answering: %+v, want no error, no last answer, no silence", m)
		}
		if m := got["n2"]; m.Stats == nil || m.Stats.Alerts == nil {
			t.Fatalf("n2's stats without alerts (a node of an older version): %+v, want alerts [] (the schema's array), not null", m.Stats)
		}
		if m := got["n3"]; m.Error == "" || m.LastAnswer != nil {
			t.Fatalf("n3 never answering: %+v, want an error and no last answer", m)
		}
		up["n2"] = false
		time.Sleep(5 * time.Second) // in the bubble: the fake clock
		got = read()
		if m := got["n2"]; m.Error == "" || m.LastAnswer == nil || !m.LastAnswer.Equal(first) || m.SilentSeconds != 5 || m.LastAppliedIndex != 42 {
			t.Fatalf("n2 after 5 s silent: %+v, want an error, last answer %v, silent 5 s, last applied index 42", m, first)
		}
		if m := got["n3"]; m.SilentSeconds != 5 {
			t.Fatalf("n3 never answered: silent %v s, want 5 (since the node started)", m.SilentSeconds)
		}
	})
}
