package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestRawClientFraming sends requests through a rawClient to a server that
// checks each request as net/http parsed it, and answers in turn with a
// Content-Length, chunked, and with Connection: close. Every answer must come
// back whole, and the client must dial again after each close.
func TestRawClientFraming(t *testing.T) {
	var conns, n atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.URL.RequestURI() != "/v1/tx?ack=quorum&timeout=1s" ||
			r.Header.Get("Content-Type") != "application/json" || r.ContentLength != int64(len(body)) || string(body) != `{"i":"x"}` {
			http.Error(w, "bad request: "+r.Method+" "+r.URL.RequestURI()+" "+string(body), http.StatusBadRequest)
			return
		}
		switch n.Add(1) % 3 {
		case 0:
			w.Write([]byte(`{"status":"committed"}`))
		case 1:
			w.Write([]byte(`{"status":`))
			w.(http.Flusher).Flush() // chunked from here on
			w.Write([]byte(`"committed"}`))
		case 2:
			w.Header().Set("Connection", "close")
			w.WriteHeader(http.StatusAccepted)
			w.Write([]byte(`{"status":"pending"}`))
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c, err := newRawClient([]string{srv.URL + "/v1/tx?ack=quorum&timeout=1s"}, 5*time.Second, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	var resp bytes.Buffer
	const requests = 9
	for i := range requests {
		status, err := c.exchange(t.Context(), 0, []byte(`{"i":"x"}`), &resp)
		want, wantBody := http.StatusOK, `{"status":"committed"}`
		if (i+1)%3 == 2 {
			want, wantBody = http.StatusAccepted, `{"status":"pending"}`
		}
		if err != nil || status != want || resp.String() != wantBody {
			t.Fatalf("request %d = %d %q, %v; want %d %s", i, status, resp.String(), err, want, wantBody)
		}
	}
	// Answers 2, 5 and 8 close their connection: requests 3, 6 and 9 dial again.
	if got := conns.Load(); got != 1+requests/3 {
		t.Fatalf("%d connections for %d requests with every third answer closing; want %d", got, requests, 1+requests/3)
	}
}

// TestRawClientFailures checks that a broken connection fails one exchange and
// the next one dials again; that a server that does not answer costs the
// timeout; and that the end of the run's context ends an exchange at once.
func TestRawClientFailures(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Query().Get("hang") != "" {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	defer close(release)
	c, err := newRawClient([]string{srv.URL + "/v1/tx", srv.URL + "/v1/tx?hang=1"}, 300*time.Millisecond, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	var resp bytes.Buffer
	ok := func() {
		t.Helper()
		if status, err := c.exchange(t.Context(), 0, []byte(`{}`), &resp); err != nil || status != http.StatusOK {
			t.Fatalf("exchange = %d, %v; want 200", status, err)
		}
	}
	ok()
	srv.CloseClientConnections()
	time.Sleep(10 * time.Millisecond) // let the close arrive
	if _, err := c.exchange(t.Context(), 0, []byte(`{}`), &resp); err == nil {
		t.Fatal("exchange on a connection the server closed = nil error")
	} else if k := transportKind(err); k != "conn_closed" && k != "conn_reset" {
		t.Fatalf("transportKind(%v) = %s, want conn_closed or conn_reset", err, k)
	}
	ok()

	start := time.Now()
	_, err = c.exchange(t.Context(), 1, []byte(`{}`), &resp)
	if k := transportKind(err); k != "client_timeout" {
		t.Fatalf("exchange with a server that does not answer = %v (%s), want client_timeout", err, k)
	}
	if d := time.Since(start); d < 250*time.Millisecond || d > 5*time.Second {
		t.Fatalf("the timeout of 300ms took %v", d)
	}

	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	c.timeout = time.Minute
	start = time.Now()
	_, err = c.exchange(ctx, 1, []byte(`{}`), &resp)
	if !errors.Is(err, context.Canceled) || time.Since(start) > 10*time.Second {
		t.Fatalf("exchange whose context ended = %v after %v, want context.Canceled at once", err, time.Since(start))
	}
}

// TestBenchHTTPClientFlag checks --http-client's and --local-security's
// values.
func TestBenchHTTPClientFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--http-client", "curl"}, `--http-client "curl": want raw or net/http`},
		{[]string{"--local", "--local-security", "ssl"}, `--local-security "ssl": want one of off, token, tls, mtls, mtls+token`},
		{[]string{"--local-security", "tls"}, "--local-security and --local-peer-tls need --local"},
		{[]string{"--local", "--token", "x"}, "--local makes its own credentials"},
	} {
		r := runCLI(t, testCtx(t), nil, append([]string{"bench"}, tc.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("bench %v: exit %d, stderr %q; want 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}
