package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/txid"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader in two goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type result struct {
	stdout, stderr string
	code           int
}

// runCLI runs txlog with args and env as its whole environment.
func runCLI(t *testing.T, ctx context.Context, env map[string]string, args ...string) result {
	t.Helper()
	var stdout, stderr syncBuffer
	c := &cli{stdout: &stdout, stderr: &stderr, lookupEnv: func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}}
	err := c.run(ctx, args)
	code := report(err, &stderr)
	return result{stdout.String(), stderr.String(), code}
}

// serve runs an api.Server over b and returns its base URL.
func serve(t *testing.T, b api.Backend) string {
	t.Helper()
	srv := httptest.NewServer(api.NewServer(api.Config{}, b))
	t.Cleanup(srv.Close)
	return srv.URL
}

// deadURL returns the URL of a server that is gone.
func deadURL(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(nil)
	srv.Close()
	return srv.URL
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// jsonString decodes raw as a JSON string.
func jsonString(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("%s is not a JSON string: %v", raw, err)
	}
	return s
}

// compact returns raw without insignificant space.
func compact(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatalf("compact %s: %v", raw, err)
	}
	return b.String()
}

func TestUsage(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string // in stdout
		wantErr  string // in stderr
	}{
		{"no command", nil, 2, "", "usage: txlog COMMAND"},
		{"unknown command", []string{"bogus"}, 2, "", `unknown command "bogus"`},
		{"help", []string{"help"}, 0, "Commands:", ""},
		{"command help", []string{"submit", "-h"}, 0, "usage: txlog submit", ""},
		{"unknown flag", []string{"submit", "--nope", "k", "v"}, 2, "", "flag provided but not defined: -nope"},
		{"submit without key", []string{"submit"}, 2, "", "no KEY given"},
		{"submit without value", []string{"submit", "k"}, 2, "", `no VALUE given for key "k"`},
		{"submit extra args", []string{"submit", "k", "v", "w"}, 2, "", "too many arguments"},
		{"submit bad ack", []string{"submit", "--ack", "some", "k", "v"}, 2, "", `--ack "some"`},
		{"submit bad version", []string{"submit", "--if-version", "x", "k", "v"}, 2, "", "want a version number"},
		{"submit tx with key", []string{"submit", "--tx", `{"ops":[]}`, "k"}, 2, "", "--tx takes the whole transaction"},
		{"submit bad tx", []string{"submit", "--tx", `{"ops":`}, 2, "", "--tx:"},
		{"submit tx unknown field", []string{"submit", "--tx", `{"opz":[]}`}, 2, "", "unknown field"},
		{"submit delete with value", []string{"submit", "--delete", "k", "v"}, 2, "", "--delete takes no VALUE"},
		{"submit negative timeout", []string{"submit", "--timeout", "-1s", "k", "v"}, 2, "", "--timeout"},
		{"get without key", []string{"get"}, 2, "", "get takes one KEY"},
		{"get two keys", []string{"get", "a", "b"}, 2, "", "get takes one KEY"},
		{"get bad consistency", []string{"get", "--consistency", "weird", "k"}, 2, "", `--consistency "weird"`},
		{"get prefix with key", []string{"get", "--prefix", "a", "k"}, 2, "", "get --prefix takes no KEY"},
		{"get limit without prefix", []string{"get", "--limit", "3", "k"}, 2, "", "go with --prefix"},
		{"get keys-only without prefix", []string{"get", "--keys-only", "k"}, 2, "", "go with --prefix"},
		{"get negative limit", []string{"get", "--prefix", "a", "--limit", "-1"}, 2, "", "--limit -1"},
		{"get keys-only value-only", []string{"get", "--prefix", "a", "--keys-only", "--print-value-only"}, 2, "", "exclude each other"},
		{"get bad output", []string{"get", "--prefix", "a", "-o", "yaml"}, 2, "", `-o "yaml"`},
		{"bad targets", []string{"get", "--targets", "ftp://x", "k"}, 2, "", "--targets"},
		{"empty targets", []string{"get", "--targets", ",", "k"}, 2, "", "--targets: no URLs"},
		{"log zero limit", []string{"log", "--limit", "0"}, 2, "", "--limit 0"},
		{"log from zero", []string{"log", "--from", "0"}, 2, "", "--from 0"},
		{"log args", []string{"log", "x"}, 2, "", "log takes no arguments"},
		{"status args", []string{"status", "x"}, 2, "", "status takes no arguments"},
		{"local args", []string{"local", "x"}, 2, "", "txlogd flags go after --"},
		{"local no nodes", []string{"local", "--nodes", "0"}, 2, "", "--nodes 0"},
		{"local overlapping ports", []string{"local", "--http-base-port", "7102"}, 2, "", "overlap"},
		{"local bad port", []string{"local", "--raft-base-port", "70000"}, 2, "", "RaftBasePort 70000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, testCtx(t), nil, tt.args...)
			if r.code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stderr:\n%s", r.code, tt.wantCode, r.stderr)
			}
			if !strings.Contains(r.stdout, tt.wantOut) {
				t.Errorf("stdout:\n%s\nwant it to contain %q", r.stdout, tt.wantOut)
			}
			if !strings.Contains(r.stderr, tt.wantErr) {
				t.Errorf("stderr:\n%s\nwant it to contain %q", r.stderr, tt.wantErr)
			}
		})
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name          string
		args          []string
		wantPos       []string
		wantAfterDash []string
		wantFlag      string
	}{
		{"flags first", []string{"-f", "x", "a", "b"}, []string{"a", "b"}, nil, "x"},
		{"flags between", []string{"a", "--f=x", "b"}, []string{"a", "b"}, nil, "x"},
		{"flags last", []string{"a", "b", "-f", "x"}, []string{"a", "b"}, nil, "x"},
		{"dash", []string{"a", "--", "-f", "y"}, []string{"a"}, []string{"-f", "y"}, ""},
		{"dash first", []string{"--", "a"}, nil, []string{"a"}, ""},
		{"none", nil, nil, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := (&cli{stdout: io.Discard, stderr: io.Discard}).command("test", "")
			f := cmd.String("f", "", "")
			pos, after, err := cmd.parseSplit(tt.args)
			if err != nil {
				t.Fatalf("parseSplit() error = %v", err)
			}
			if !slices.Equal(pos, tt.wantPos) || !slices.Equal(after, tt.wantAfterDash) || *f != tt.wantFlag {
				t.Fatalf("parseSplit(%q) = %q, %q, -f %q; want %q, %q, -f %q", tt.args, pos, after, *f, tt.wantPos, tt.wantAfterDash, tt.wantFlag)
			}
		})
	}
}

func TestSubmitArgsRequest(t *testing.T) {
	v3 := uint64(3)
	tests := []struct {
		name string
		args submitArgs
		want string // the TxRequest as JSON
	}{
		{"string value", submitArgs{pos: []string{"k", "hello"}}, `{"ops":[{"op":"put","key":"k","value":"hello"}]}`},
		{"number value", submitArgs{pos: []string{"k", "42"}}, `{"ops":[{"op":"put","key":"k","value":42}]}`},
		{"object value", submitArgs{pos: []string{"k", ` {"a":[1,true]} `}}, `{"ops":[{"op":"put","key":"k","value":{"a":[1,true]}}]}`},
		{"quoted string", submitArgs{pos: []string{"k", `"x y"`}}, `{"ops":[{"op":"put","key":"k","value":"x y"}]}`},
		{"empty value", submitArgs{pos: []string{"k", ""}}, `{"ops":[{"op":"put","key":"k","value":""}]}`},
		{"broken json is a string", submitArgs{pos: []string{"k", `{"a":`}}, `{"ops":[{"op":"put","key":"k","value":"{\"a\":"}]}`},
		{"key flag", submitArgs{key: "k", pos: []string{"null"}}, `{"ops":[{"op":"put","key":"k","value":null}]}`},
		{"delete", submitArgs{del: true, pos: []string{"k"}}, `{"ops":[{"op":"delete","key":"k"}]}`},
		{"if version", submitArgs{ifVersion: &v3, idempotencyKey: "i1", pos: []string{"k", "1"}},
			`{"idempotency_key":"i1","ops":[{"op":"put","key":"k","value":1,"if_version":3}]}`},
		{"tx", submitArgs{tx: `{"ops":[{"op":"delete","key":"a"},{"op":"put","key":"b","value":2}]}`, idempotencyKey: "i2"},
			`{"idempotency_key":"i2","ops":[{"op":"delete","key":"a"},{"op":"put","key":"b","value":2}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tx, err := tt.args.request()
			if err != nil {
				t.Fatalf("request() error = %v", err)
			}
			got, _ := json.Marshal(tx)
			if string(got) != tt.want {
				t.Fatalf("request() = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestSubmit(t *testing.T) {
	ctx := testCtx(t)
	var gotTx wire.TxRequest
	var gotOpts wire.SubmitOptions
	url := serve(t, &fakeBackend{SubmitFunc: func(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error) {
		gotTx, gotOpts = tx, opts
		return wire.TxResult{TxID: 12345, Status: wire.StatusCommitted, Index: 7, IdempotencyKey: tx.IdempotencyKey}, nil
	}})
	// Flags may follow the arguments; the dead target first shows failover.
	r := runCLI(t, ctx, nil, "submit", "--targets", deadURL(t)+","+url, "greeting", "<hello>", "--ack", "all", "--timeout", "2s", "--if-version", "0")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if len(gotTx.Ops) != 1 || gotTx.Ops[0].Key != "greeting" || jsonString(t, gotTx.Ops[0].Value) != "<hello>" ||
		gotTx.Ops[0].IfVersion == nil || *gotTx.Ops[0].IfVersion != 0 {
		t.Fatalf("server got %+v", gotTx)
	}
	if gotTx.IdempotencyKey == "" {
		t.Error("server got no idempotency key; the client should make one")
	}
	// --timeout bounds the whole call: the server's timeout fits inside it.
	if gotOpts.Ack != wire.AckAll || gotOpts.Timeout > 2*time.Second || gotOpts.Timeout < time.Second {
		t.Errorf("server got options %+v, want ack all, a timeout within --timeout 2s", gotOpts)
	}
	var res wire.TxResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("stdout is not a TxResult: %v\n%s", err, r.stdout)
	}
	if res.Status != wire.StatusCommitted || res.Index != 7 {
		t.Fatalf("printed %+v", res)
	}
}

// TestSubmitExitStatus: the exit status tells the result: rejected 3,
// pending 4, unknown outcome 5; the result is printed for each.
func TestSubmitExitStatus(t *testing.T) {
	tests := []struct {
		name     string
		submit   func() (wire.TxResult, error)
		args     []string
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{"rejected", func() (wire.TxResult, error) {
			return wire.TxResult{TxID: 1, Status: wire.StatusRejected, Conflict: &wire.Conflict{Key: "k", Expected: 2, Actual: 3}}, nil
		}, []string{"--if-version", "2"}, exitRejected, `"status": "rejected"`, `key "k": expected 2, found 3`},
		{"pending", func() (wire.TxResult, error) {
			return wire.TxResult{TxID: 1, Status: wire.StatusPending}, nil
		}, []string{"--ack", "accepted"}, exitPending, `"status": "pending"`, "pending"},
		{"unknown outcome", func() (wire.TxResult, error) {
			return wire.TxResult{}, wire.ErrUnknownOutcome
		}, []string{"--timeout", "1s"}, exitUnknown, `"status": "unknown"`, "outcome unknown"},
		{"committed", func() (wire.TxResult, error) {
			return wire.TxResult{TxID: 1, Status: wire.StatusCommitted, Index: 3}, nil
		}, nil, exitOK, `"status": "committed"`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := serve(t, &fakeBackend{SubmitFunc: func(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error) {
				return tt.submit()
			}})
			args := append([]string{"submit", "k", "v"}, tt.args...)
			r := runCLI(t, testCtx(t), map[string]string{targetsEnv: url}, args...)
			if r.code != tt.wantCode || !strings.Contains(r.stdout, tt.wantOut) || !strings.Contains(r.stderr, tt.wantErr) {
				t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s\nwant exit %d, %q and %q", r.code, r.stdout, r.stderr, tt.wantCode, tt.wantOut, tt.wantErr)
			}
			if strings.Count(r.stderr, "\n") > 1 {
				t.Errorf("stderr %q: want at most one line", r.stderr)
			}
		})
	}
}

func TestSubmitServerRefuses(t *testing.T) {
	url := serve(t, &fakeBackend{})
	// An empty key passes the CLI and is refused by the server's validation.
	r := runCLI(t, testCtx(t), map[string]string{targetsEnv: url}, "submit", "--tx", `{"ops":[{"op":"put","key":"","value":1}]}`)
	if r.code != 1 || !strings.Contains(r.stderr, "txlog: submit:") {
		t.Fatalf("exit %d, stderr:\n%s\nwant exit 1 and the server's error", r.code, r.stderr)
	}
}

func TestGet(t *testing.T) {
	ctx := testCtx(t)
	var gotOpts wire.ReadOptions
	url := serve(t, &fakeBackend{GetFunc: func(ctx context.Context, key string, opts wire.ReadOptions) (wire.KV, error) {
		gotOpts = opts
		if key != "a/b c" {
			return wire.KV{}, wire.ErrNotFound
		}
		return wire.KV{Key: key, Value: json.RawMessage(`{"x":1}`), Version: 2, Index: 9}, nil
	}})
	env := map[string]string{targetsEnv: deadURL(t) + "," + url}

	r := runCLI(t, ctx, env, "get", "--consistency", "stale", "a/b c")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	var kv wire.KV
	if err := json.Unmarshal([]byte(r.stdout), &kv); err != nil || kv.Version != 2 || compact(t, kv.Value) != `{"x":1}` {
		t.Fatalf("stdout %s: %+v, %v", r.stdout, kv, err)
	}
	if gotOpts.Consistency != wire.ConsistencyStale {
		t.Errorf("consistency %q, want stale", gotOpts.Consistency)
	}

	r = runCLI(t, ctx, env, "get", "missing")
	if r.code != 1 || !strings.Contains(r.stderr, `key "missing" not found`) || strings.Count(r.stderr, "missing") != 1 {
		t.Fatalf("exit %d, stderr:\n%s\nwant exit 1, the node's 404 said once", r.code, r.stderr)
	}
}

// TestGetPrefix pages through a fake node's keys: every key once, in order,
// in each output form, and --limit stops early.
func TestGetPrefix(t *testing.T) {
	ctx := testCtx(t)
	var keys []string
	for i := range 2500 {
		keys = append(keys, fmt.Sprintf("p/%04d", i))
	}
	pages := 0
	url := serve(t, &fakeBackend{RangeFunc: func(_ context.Context, req wire.RangeRequest, _ wire.ReadOptions) (wire.KVPage, error) {
		pages++
		page := wire.KVPage{Index: 1, Next: req.After}
		for _, k := range keys {
			if req.After != "" && k <= req.After || !strings.HasPrefix(k, req.Spans[0].Start) {
				continue
			}
			if len(page.KVs) == req.Limit {
				page.More = true
				break
			}
			page.KVs = append(page.KVs, wire.KV{Key: k, Value: json.RawMessage(`"` + k + `"`), Version: 1, Index: 2})
			page.Next = k
		}
		return page, nil
	}})
	env := map[string]string{targetsEnv: url}
	r := runCLI(t, ctx, env, "get", "--prefix", "p/")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != len(keys) || pages != 3 || lines[2499] != `{"key":"p/2499","value":"p/2499","version":1,"index":2}` {
		t.Fatalf("exit %d, %d lines in %d pages, last %q; stderr %s", r.code, len(lines), pages, lines[len(lines)-1], r.stderr)
	}
	r = runCLI(t, ctx, env, "get", "--prefix", "p/", "--keys-only", "--limit", "2", "-o", "table")
	if want := "KEY     VERSION  INDEX\np/0000  1        2\np/0001  1        2\n"; r.code != 0 || r.stdout != want {
		t.Fatalf("table = exit %d %q, want %q", r.code, r.stdout, want)
	}
	r = runCLI(t, ctx, env, "get", "--prefix", "p/1", "--print-value-only", "--limit", "1")
	if r.code != 0 || r.stdout != "\"p/1000\"\n" {
		t.Fatalf("value only = exit %d %q", r.code, r.stdout)
	}
	r = runCLI(t, ctx, env, "get", "--prefix", "q/")
	if r.code != 0 || r.stdout != "" {
		t.Fatalf("empty prefix = exit %d %q, want 0 and nothing", r.code, r.stdout)
	}
}

func clusterStatus(id, state, leader string, members ...wire.Member) func(context.Context) (wire.ClusterStatus, error) {
	return func(context.Context) (wire.ClusterStatus, error) {
		return wire.ClusterStatus{ID: id, State: state, LeaderID: leader, Term: 4, CommitIndex: 10, AppliedIndex: 9, Members: members}, nil
	}
}

func TestStatus(t *testing.T) {
	ctx := testCtx(t)
	n3 := httptest.NewServer(api.NewServer(api.Config{}, &fakeBackend{ClusterFunc: clusterStatus("n3", "follower", "n1")}))
	t.Cleanup(n3.Close)
	members := []wire.Member{
		{ID: "n1", RaftAddr: "127.0.0.1:7101", Suffrage: "voter", Leader: true},
		{ID: "n2", RaftAddr: "127.0.0.1:7102", Suffrage: "voter", LastContact: "12ms"},
		{ID: "n3", RaftAddr: "127.0.0.1:7103", HTTPAddr: strings.TrimPrefix(n3.URL, "http://"), Suffrage: "voter"},
	}
	n1 := serve(t, &fakeBackend{ClusterFunc: clusterStatus("n1", "leader", "n1", members...)})
	n2 := serve(t, &fakeBackend{ClusterFunc: clusterStatus("n2", "follower", "n1", members...)})
	dead := deadURL(t)

	r := runCLI(t, ctx, nil, "status", "--targets", strings.Join([]string{dead, n2, n1}, ","))
	if r.code != 1 || !strings.Contains(r.stderr, "unreachable: "+dead) || strings.Contains(r.stderr, "no leader") {
		t.Fatalf("exit %d; stderr:\n%s\nwant exit 1 naming the unreachable target", r.code, r.stderr)
	}
	lines := strings.Split(r.stdout, "\n")
	for i, want := range []string{"NODE", "n1  ", "n2  ", "n3  ", "?  "} {
		if i >= len(lines) || !strings.HasPrefix(lines[i], want) {
			t.Fatalf("line %d of:\n%s\nwant it to start with %q", i, r.stdout, want)
		}
	}
	for _, want := range []string{"unreachable", "MEMBERS (as n1, leader, sees them)", "12ms", n3.URL} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout:\n%s\nwant it to contain %q", r.stdout, want)
		}
	}

	r = runCLI(t, ctx, nil, "status", "--json", "--targets", n1)
	if r.code != 0 {
		t.Fatalf("status of a healthy cluster: exit %d; stderr:\n%s", r.code, r.stderr)
	}
	var views []nodeView
	if err := json.Unmarshal([]byte(r.stdout), &views); err != nil || len(views) != 2 || views[0].Status.ID != "n1" {
		t.Fatalf("--json printed %s (%v), want n1 and the discovered n3", r.stdout, err)
	}

	// A cluster without a leader.
	lone := serve(t, &fakeBackend{ClusterFunc: clusterStatus("n1", "candidate", "")})
	if r = runCLI(t, ctx, nil, "status", "--targets", lone); r.code != 1 || !strings.Contains(r.stderr, "no leader known") {
		t.Fatalf("status without a leader: exit %d, stderr:\n%s", r.code, r.stderr)
	}

	r = runCLI(t, ctx, nil, "status", "--targets", dead)
	if r.code != 1 || !strings.Contains(r.stderr, "no node answered") {
		t.Fatalf("exit %d, stderr:\n%s\nwant exit 1 when no node answers", r.code, r.stderr)
	}
}

// logBackend serves entries 1..n, at most limit at a time.
func logBackend(n *int, mu *sync.Mutex) *fakeBackend {
	return &fakeBackend{LogFunc: func(ctx context.Context, from uint64, limit int) (wire.LogPage, error) {
		mu.Lock()
		defer mu.Unlock()
		page := wire.LogPage{Next: from}
		for i := from; i <= uint64(*n) && len(page.Entries) < limit; i++ {
			page.Entries = append(page.Entries, wire.LogEntry{Index: i, Term: 1, TxID: txid.ID(1000 + i), Status: wire.StatusCommitted,
				Ops: []wire.Op{{Op: "put", Key: "k", Value: json.RawMessage("1")}}})
			page.Next = i + 1
		}
		return page, nil
	}}
}

func TestLog(t *testing.T) {
	ctx := testCtx(t)
	var mu sync.Mutex
	n := 5
	url := serve(t, logBackend(&n, &mu))

	r := runCLI(t, ctx, map[string]string{targetsEnv: url}, "log", "--from", "2", "--limit", "2")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"index":2`) || !strings.Contains(lines[1], `"index":3`) {
		t.Fatalf("stdout:\n%s\nwant entries 2 and 3, one per line", r.stdout)
	}
}

// followBackend is a logBackend whose node tells the stream of entries applied.
type followBackend struct {
	*fakeBackend
	mu      sync.Mutex
	changed chan struct{}
}

func (b *followBackend) FirstIndex() uint64 { return 1 }

func (b *followBackend) Applied() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.changed
}

func (b *followBackend) apply() {
	b.mu.Lock()
	defer b.mu.Unlock()
	close(b.changed)
	b.changed = make(chan struct{})
}

func TestLogFollow(t *testing.T) {
	ctx := testCtx(t)
	var mu sync.Mutex
	n := 3
	b := &followBackend{fakeBackend: logBackend(&n, &mu), changed: make(chan struct{})}
	url := serve(t, b)

	followCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var stdout, stderr syncBuffer
	c := &cli{stdout: &stdout, stderr: &stderr, lookupEnv: func(string) (string, bool) { return "", false }}
	done := make(chan error, 1)
	go func() { done <- c.run(followCtx, []string{"log", "--follow", "--limit", "2", "--targets", url}) }()

	waitFor := func(lines int) {
		t.Helper()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for strings.Count(stdout.String(), "\n") < lines {
			select {
			case <-ctx.Done():
				t.Fatalf("stdout:\n%s\nwant %d lines", stdout.String(), lines)
			case <-tick.C:
			}
		}
	}
	waitFor(3)
	mu.Lock()
	n = 4 // one more entry commits
	mu.Unlock()
	b.apply()
	waitFor(4)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("log --follow after Ctrl-C = %v, want nil", err)
	}
	if got := strings.Count(stdout.String(), "\n"); got != 4 {
		t.Fatalf("stdout:\n%s\nwant 4 entries, each once", stdout.String())
	}
}

func TestParseValueKeepsHTML(t *testing.T) {
	if got := string(parseValue("a<b>&c")); got != `"a<b>&c"` {
		t.Fatalf("parseValue() = %s, want the characters as typed", got)
	}
}
