package systemtest

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// get sends GET url and returns the status and body ("" status 0 and the
// error's text when it got no answer).
func get(ctx context.Context, t *testing.T, url string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestDebugAddr starts a single-node txlogd with --debug-addr 127.0.0.1:0 and
// checks that the bound address is in <data-dir>/debug.addr, that pprof's
// index and a heap profile answer 200 there, and that the API listener answers
// 404 for /debug/pprof/. A SIGTERM stops the node with its debug listener.
// Then the same data dir without the flag: debug.addr is gone and nothing
// else listens there.
func TestDebugAddr(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	raft := freeAddr(t)
	args := []string{"--raft-addr=" + raft, "--cluster=n1=" + raft}
	p := newNode(t, dir, "n1", append(args, "--debug-addr=127.0.0.1:0")...)
	base := startNode(ctx, t, p)
	addrFile := filepath.Join(dir, "n1", "debug.addr")
	var debugAddr string
	waitUntil(ctx, t, "debug.addr", func() bool {
		b, err := os.ReadFile(addrFile)
		debugAddr = strings.TrimSpace(string(b))
		return err == nil && debugAddr != ""
	})
	if _, _, err := net.SplitHostPort(debugAddr); err != nil {
		t.Fatalf("debug.addr holds %q: %v", debugAddr, err)
	}
	if "http://"+debugAddr == base {
		t.Fatalf("debug listener on the API's address %s", base)
	}

	if code, body := get(ctx, t, "http://"+debugAddr+"/debug/pprof/"); code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Fatalf("GET /debug/pprof/ on the debug listener = %d %.200q, want 200 and the index", code, body)
	}
	if code, body := get(ctx, t, "http://"+debugAddr+"/debug/pprof/heap?debug=1"); code != http.StatusOK || !strings.Contains(body, "heap profile:") {
		t.Fatalf("GET /debug/pprof/heap?debug=1 = %d %.200q, want 200 and a heap profile", code, body)
	}
	if code, body := get(ctx, t, base+"/debug/pprof/"); code != http.StatusNotFound {
		t.Fatalf("GET /debug/pprof/ on the API listener = %d %.200q, want 404", code, body)
	}
	waitReady(ctx, t, base) // the API beside it serves

	if err := p.Stop(ctx); err != nil {
		t.Fatalf("SIGTERM: %v\n%s", err, p.LogTail(20))
	}
	if code, body := get(ctx, t, "http://"+debugAddr+"/debug/pprof/"); code != 0 {
		t.Fatalf("the stopped node's debug listener answered %d %.200q", code, body)
	}

	// The same node without --debug-addr: no debug.addr, also not the old one.
	// Its run removes that before it writes http.addr, which startNode waits
	// for: the old run's goes first.
	if err := os.Remove(filepath.Join(dir, "n1", "http.addr")); err != nil {
		t.Fatal(err)
	}
	q := newNode(t, dir, "n1", args...)
	startNode(ctx, t, q)
	if _, err := os.Stat(addrFile); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("without --debug-addr: stat debug.addr = %v, want it absent", err)
	}
	if err := q.Stop(ctx); err != nil {
		t.Fatalf("SIGTERM: %v\n%s", err, q.LogTail(20))
	}
	// A fresh node without the flag never writes one.
	r := newNode(t, dir, "n2", "--raft-addr="+raft, "--cluster=n2="+raft)
	startNode(ctx, t, r)
	if _, err := os.Stat(filepath.Join(dir, "n2", "debug.addr")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("without --debug-addr: stat debug.addr = %v, want it absent", err)
	}
}

// TestDebugAddrTaken: a --debug-addr that another process holds stops txlogd
// at start, with an error that names the flag's address.
func TestDebugAddrTaken(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	raft := freeAddr(t)
	p := newNode(t, t.TempDir(), "n1", "--raft-addr="+raft, "--cluster=n1="+raft, "--debug-addr="+l.Addr().String())
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(ctx); err == nil {
		t.Fatal("txlogd started with its --debug-addr taken; want it refused")
	}
	if tail, want := p.LogTail(5), "listen debug "+l.Addr().String(); !strings.Contains(tail, want) {
		t.Fatalf("the refusal does not say %q:\n%s", want, tail)
	}
}
