package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/txlog/txlog/api/wire"
)

// TestHTTPMetrics: requests are counted by route pattern and status code,
// never by raw path, through the router and through FastHandler (the fast
// path's way in); GET /metrics serves Config.MetricsHandler.
func TestHTTPMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	b := &fakeBackend{
		GetFunc: func(ctx context.Context, key string, opts wire.ReadOptions) (wire.KV, error) {
			if key == "missing" {
				return wire.KV{}, wire.ErrNotFound
			}
			return wire.KV{Key: key, Version: 1}, nil
		},
		SubmitFunc: func(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error) {
			return wire.TxResult{TxID: testID, Status: wire.StatusCommitted}, nil
		},
	}
	s := NewServer(Config{Metrics: reg, MetricsHandler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{})}, b)
	do := func(method, target, body string, h http.Handler) int {
		req := httptest.NewRequest(method, target, strings.NewReader(body))
		rec := httptest.NewRecorder()
		s.Serve(rec, req, h)
		return rec.Code
	}
	do("GET", "/v1/kv/a", "", s.router)
	do("GET", "/v1/kv/b%2Fc", "", s.router)
	do("GET", "/v1/kv/missing", "", s.router)
	do("GET", "/nope/x", "", s.router)
	do("POST", "/v1/tx", `{"ops":[{"op":"put","key":"k","value":1}]}`, s.router)
	do("POST", "/v1/tx", `{"ops":[{"op":"put","key":"k","value":1}]}`, s.FastHandler("/v1/tx"))
	do("POST", "/v1/tx", `{"ops":[`, s.FastHandler("/v1/tx"))

	for _, tt := range []struct {
		route, code string
		want        float64
	}{
		{"/v1/kv/{key:.+}", "200", 2},
		{"/v1/kv/{key:.+}", "404", 1},
		{"unmatched", "404", 1},
		{"/v1/tx", "200", 2},
		{"/v1/tx", "400", 1},
	} {
		c, err := s.met.requests.GetMetricWithLabelValues(tt.route, tt.code)
		if err != nil {
			t.Fatal(err)
		}
		if got := testutil.ToFloat64(c); got != tt.want {
			t.Errorf("txlog_http_requests_total{route=%q,code=%q} = %v, want %v", tt.route, tt.code, got, tt.want)
		}
	}
	if n := testutil.CollectAndCount(s.met.requests); n != 5 {
		t.Errorf("txlog_http_requests_total has %d series, want 5 (no raw paths)", n)
	}
	if code := do("GET", "/metrics", "", s.router); code != http.StatusOK {
		t.Fatalf("GET /metrics = %d, want 200", code)
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if !strings.Contains(rec.Body.String(), `txlog_http_request_duration_seconds_count{route="/v1/tx"} 3`) {
		t.Errorf("GET /metrics: no duration count of 3 for /v1/tx in\n%.2000s", rec.Body.String())
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("GET /metrics: Content-Type %q, want Prometheus's text/plain", ct)
	}
	// Without Config.Metrics nothing is counted and /metrics is not a route.
	plain := NewServer(Config{}, b)
	rec = httptest.NewRecorder()
	plain.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if plain.met != nil || rec.Code != http.StatusNotFound {
		t.Errorf("without metrics: met %v, GET /metrics = %d; want nil, 404", plain.met, rec.Code)
	}
}
