package api

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/txid"
)

// getAnswer answers GET target on srv with its status, Retry-After and error
// code (empty for an answer that is not an error).
func getAnswer(t *testing.T, srv *httptest.Server, target string) (status int, retryAfter, code string) {
	t.Helper()
	resp, err := http.Get(srv.URL + target)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var e struct{ Error wire.ErrorBody }
	json.Unmarshal(body, &e)
	return resp.StatusCode, resp.Header.Get("Retry-After"), e.Error.Code
}

// Streams and waiting reads share MaxStreams slots: one past it is answered
// 503 too_many_streams with a Retry-After at once, reads that do not wait are
// not counted, and a slot comes back when its stream ends.
func TestMaxStreams(t *testing.T) {
	m := newMemLog()
	m.append(1, "a")
	m.TxFunc = func(ctx context.Context, id txid.ID, wait time.Duration) (wire.TxResult, error) {
		<-ctx.Done() // the client gives up
		return wire.TxResult{}, ctx.Err()
	}
	cfg := testConfig
	cfg.MaxStreams = 3
	s := NewServer(cfg, m)
	srv := httptest.NewServer(s)
	defer srv.Close()
	defer s.EndLogStreams() // before Close, which waits for the stream

	// Three slots: a stream, a waiting read of the log, a waiting lookup.
	ctx, cancel := context.WithCancel(context.Background())
	resp, l := openStream(t, srv, "/v1/log/stream?from=1", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("first stream: %d", resp.StatusCode)
	}
	l.next()
	for _, target := range []string{"/v1/log?from=2&wait=30s", "/v1/tx/" + txid.ID(12345).String() + "?wait=30s"} {
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+target, nil)
		go func() {
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.streams.inUse() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d slots taken, want 3", s.streams.inUse())
		}
		time.Sleep(time.Millisecond) // polls a condition
	}

	for _, target := range []string{"/v1/log/stream?from=1", "/v1/log?from=2&wait=1s", "/v1/tx/" + txid.ID(12345).String() + "?wait=1s"} {
		status, retry, code := getAnswer(t, srv, target)
		if status != http.StatusServiceUnavailable || code != wire.CodeTooManyStreams || retry == "" {
			t.Errorf("GET %s past the cap: %d %q Retry-After %q, want 503 %s with a Retry-After", target, status, code, retry, wire.CodeTooManyStreams)
		}
	}
	if status, _, code := getAnswer(t, srv, "/v1/log?from=1"); status != http.StatusOK {
		t.Errorf("a read without wait past the cap: %d %s, want 200", status, code)
	}

	// The waiting reads end: their slots come back.
	cancel()
	deadline = time.Now().Add(10 * time.Second)
	for s.streams.inUse() > 1 {
		if time.Now().After(deadline) {
			t.Fatalf("%d slots taken after the reads ended, want 1", s.streams.inUse())
		}
		time.Sleep(time.Millisecond) // polls a condition
	}
	if status, _, code := getAnswer(t, srv, "/v1/log?from=1&wait=10ms"); status != http.StatusOK {
		t.Errorf("a waiting read with a slot free: %d %s, want 200", status, code)
	}
}

// txlog_http_streams is the number of slots taken.
func TestStreamsGauge(t *testing.T) {
	reg := prometheus.NewRegistry()
	cfg := testConfig
	cfg.Metrics = reg
	s := NewServer(cfg, newMemLog())
	gauge := func() float64 {
		t.Helper()
		n, err := testutil.GatherAndCount(reg, "txlog_http_streams")
		if err != nil || n != 1 {
			t.Fatalf("txlog_http_streams: %d series, %v", n, err)
		}
		mfs, _ := reg.Gather()
		for _, mf := range mfs {
			if mf.GetName() == "txlog_http_streams" {
				return mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		return -1
	}
	if err := s.streams.take(); err != nil {
		t.Fatal(err)
	}
	if got := gauge(); got != 1 {
		t.Errorf("txlog_http_streams = %v with a slot taken, want 1", got)
	}
	s.streams.give()
	if got := gauge(); got != 0 {
		t.Errorf("txlog_http_streams = %v after, want 0", got)
	}
}
