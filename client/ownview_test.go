package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestClusterFromOlderNode: a node from before read consistency refuses
// ?consistency=stale with 400 invalid_parameter; ClusterFrom asks it again
// without the parameter and gets its view. A node that refuses the plain
// request too is an error.
func TestClusterFromOlderNode(t *testing.T) {
	for _, tc := range []struct {
		name        string
		refuseAll   bool
		wantErr     bool
		wantQueries int
	}{
		{"older node", false, false, 2},
		{"refuses every request", true, true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			queries := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				queries++
				w.Header().Set("Content-Type", "application/json")
				if r.URL.Query().Has("consistency") || tc.refuseAll {
					w.WriteHeader(http.StatusBadRequest)
					w.Write([]byte(`{"error":{"code":"invalid_parameter","message":"consistency: unknown query parameter, want one of: none"}}`))
					return
				}
				w.Write([]byte(`{"id":"n1","state":"Follower","leader_id":"n2","leader_http_addr":"127.0.0.1:1","term":3,"members":[]}`))
			}))
			defer srv.Close()
			c := NewClient(ClientConfig{Endpoints: []string{srv.URL}})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			st, err := c.ClusterFrom(ctx, srv.URL)
			if tc.wantErr != (err != nil) {
				t.Fatalf("ClusterFrom = %+v, %v; want error %v", st, err, tc.wantErr)
			}
			if !tc.wantErr && (st.ID != "n1" || st.LeaderID != "n2") {
				t.Fatalf("ClusterFrom = %+v, want n1's view naming n2", st)
			}
			if queries != tc.wantQueries {
				t.Fatalf("%d requests, want %d", queries, tc.wantQueries)
			}
		})
	}
}
