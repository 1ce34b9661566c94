package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/launcher"
)

func TestParseBench(t *testing.T) {
	c := &cli{stdout: io.Discard, stderr: io.Discard, lookupEnv: func(string) (string, bool) { return "", false }}
	tests := []struct {
		name    string
		args    []string
		check   func(t *testing.T, b benchConfig)
		wantErr string
	}{
		{"defaults", nil, func(t *testing.T, b benchConfig) {
			if want := strings.Split(defaultTargets, ","); !slices.Equal(b.targets, want) {
				t.Errorf("targets = %q, want %q", b.targets, want)
			}
			if b.clients != 16 || b.duration != 10*time.Second || b.valueSize != 256 || b.opsPerTx != 1 ||
				b.ack != wire.AckQuorum || b.batch != 1 || b.keys != benchDefaultKeys || b.timeout != wire.DefaultTimeout || b.local {
				t.Errorf("config = %+v, want the defaults", b)
			}
		}, ""},
		{"every flag", []string{
			"--targets", "127.0.0.1:9001, http://127.0.0.1:9002/", "--clients", "3", "--duration", "2s", "--warmup", "1s",
			"--value-size", "10", "--ops-per-tx", "4", "--ack", "all", "--batch", "50", "--keys", "7", "--timeout", "1s",
			"--progress", "0", "--json",
		}, func(t *testing.T, b benchConfig) {
			want := benchConfig{
				targets: []string{"http://127.0.0.1:9001", "http://127.0.0.1:9002"}, clients: 3, duration: 2 * time.Second,
				warmup: time.Second, valueSize: 10, opsPerTx: 4, ack: wire.AckAll, batch: 50, keys: 7, timeout: time.Second, json: true,
			}
			if !slices.Equal(b.targets, want.targets) {
				t.Errorf("targets = %q, want %q", b.targets, want.targets)
			}
			b.targets, want.targets = nil, nil
			if b.txlogdArgs != nil {
				t.Errorf("txlogdArgs = %q, want none", b.txlogdArgs)
			}
			b.txlogdArgs = nil
			if b.clients != want.clients || b.duration != want.duration || b.warmup != want.warmup || b.valueSize != want.valueSize ||
				b.opsPerTx != want.opsPerTx || b.ack != want.ack || b.batch != want.batch || b.keys != want.keys ||
				b.timeout != want.timeout || b.progress != 0 || !b.json {
				t.Errorf("config = %+v, want %+v", b, want)
			}
		}, ""},
		{"n instead of duration", []string{"--n", "100", "--duration", "0s"}, func(t *testing.T, b benchConfig) {
			if b.n != 100 {
				t.Errorf("n = %d, want 100", b.n)
			}
		}, ""},
		{"local with txlogd flags", []string{"--local", "--txlogd", "/x/txlogd", "--", "--redis-addr", "127.0.0.1:1"}, func(t *testing.T, b benchConfig) {
			if !b.local || b.txlogd != "/x/txlogd" || !slices.Equal(b.txlogdArgs, []string{"--redis-addr", "127.0.0.1:1"}) {
				t.Errorf("config = %+v, want local with txlogd flags", b)
			}
		}, ""},
		{"no clients", []string{"--clients", "0"}, nil, "--clients 0"},
		{"no duration", []string{"--duration", "0s"}, nil, "--duration 0s"},
		{"negative n", []string{"--n", "-1"}, nil, "--n -1"},
		{"tiny value", []string{"--value-size", "1"}, nil, "--value-size 1"},
		{"no ops", []string{"--ops-per-tx", "0"}, nil, "--ops-per-tx 0"},
		{"negative batch", []string{"--batch", "-2"}, nil, "--batch -2"},
		{"no keys", []string{"--keys", "0"}, nil, "--keys 0"},
		{"bad ack", []string{"--ack", "most"}, nil, `--ack "most"`},
		{"no timeout", []string{"--timeout", "0s"}, nil, "--timeout 0s"},
		{"two problems", []string{"--clients", "0", "--keys", "0"}, nil, "--clients 0: want at least 1; --keys 0"},
		{"bad target", []string{"--targets", "ftp://x"}, nil, "--targets"},
		{"empty targets", []string{"--targets", " , "}, nil, "--targets: no URLs"},
		{"arguments", []string{"x"}, nil, "bench takes no arguments"},
		{"txlogd flags without local", []string{"--", "--redis-addr", "x"}, nil, "need --local"},
		{"unknown flag", []string{"--nope"}, nil, "not defined"},
		{"stream client", []string{"--client", "stream"}, func(t *testing.T, b benchConfig) {
			if b.client != benchClientStream {
				t.Errorf("client = %q, want stream", b.client)
			}
		}, ""},
		{"bad client", []string{"--client", "carrier-pigeon"}, nil, `--client "carrier-pigeon"`},
		{"stream client with batches", []string{"--client", "stream", "--batch", "10"}, nil, "--client stream writes single transactions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := c.parseBench(tt.args)
			if tt.wantErr != "" {
				if _, ok := errors.AsType[*usageError](err); !ok || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseBench(%q) = %v, want a usage error with %q", tt.args, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseBench(%q) = %v", tt.args, err)
			}
			tt.check(t, b)
		})
	}
}

func TestWorkloadBody(t *testing.T) {
	tests := []struct {
		name                         string
		batch, opsPerTx, value, keys int
	}{
		{"single put", 1, 1, 256, 100_000},
		{"three ops", 1, 3, 2, 10},
		{"batch", 5, 2, 40, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorkload(benchConfig{batch: tt.batch, opsPerTx: tt.opsPerTx, valueSize: tt.value, keys: tt.keys}, "run", 3)
			seen := map[string]bool{}
			for range 3 {
				body := w.body()
				txs := []wire.TxRequest{{}}
				if tt.batch > 1 {
					var br wire.BatchRequest
					decodeStrictBytes(t, body, &br)
					txs = br.Txs
				} else {
					decodeStrictBytes(t, body, &txs[0])
				}
				if len(txs) != tt.batch {
					t.Fatalf("%d transactions, want %d", len(txs), tt.batch)
				}
				for _, tx := range txs {
					if tx.IdempotencyKey == "" || seen[tx.IdempotencyKey] {
						t.Fatalf("idempotency key %q is empty or repeated", tx.IdempotencyKey)
					}
					seen[tx.IdempotencyKey] = true
					if len(tx.Ops) != tt.opsPerTx {
						t.Fatalf("%d ops, want %d", len(tx.Ops), tt.opsPerTx)
					}
					for _, op := range tx.Ops {
						if op.Op != wire.OpPut || len(op.Value) != tt.value || !strings.HasPrefix(op.Key, "bench/") || len(op.Key) != len("bench/00000000") {
							t.Fatalf("op = %s %q %d-byte value, want a put of bench/NNNNNNNN with %d bytes", op.Op, op.Key, len(op.Value), tt.value)
						}
						if tt.keys == 1 && op.Key != "bench/00000000" {
							t.Fatalf("key %q outside a key space of 1", op.Key)
						}
					}
				}
			}
		})
	}
}

// decodeStrictBytes decodes b into v as the server would: one value, no
// unknown fields.
func decodeStrictBytes(t *testing.T, b []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	if dec.More() {
		t.Fatalf("trailing data in %s", b)
	}
}

func TestBatchOutcome(t *testing.T) {
	tests := []struct {
		name string
		body string
		n    int
		want outcome
	}{
		{"all committed", `{"results":[{"status":"committed"},{"status":"committed"}]}`, 2, outcome{committed: 2}},
		{"mixed", `{"results":[{"status":"committed"},{"status":"rejected"},{"status":"pending"}]}`, 3, outcome{committed: 1, rejected: 1, pending: 1}},
		{"item error", `{"results":[{"status":"committed"},{"status":"unknown","error":{"code":"timeout","message":"x"}}]}`, 2,
			outcome{committed: 1, itemErrors: map[string]int64{"batch_item_timeout": 1}}},
		{"too few results", `{"results":[{"status":"committed"}]}`, 2, outcome{err: "bad_answer"}},
		{"not JSON", `nope`, 1, outcome{err: "bad_answer"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := batchOutcome([]byte(tt.body), tt.n)
			if got.committed != tt.want.committed || got.pending != tt.want.pending || got.rejected != tt.want.rejected ||
				got.err != tt.want.err || len(got.itemErrors) != len(tt.want.itemErrors) {
				t.Fatalf("batchOutcome() = %+v, want %+v", got, tt.want)
			}
			for k, n := range tt.want.itemErrors {
				if got.itemErrors[k] != n {
					t.Fatalf("itemErrors = %v, want %v", got.itemErrors, tt.want.itemErrors)
				}
			}
		})
	}
}

func TestErrorKind(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   string
	}{
		{"error body", 503, `{"error":{"code":"no_leader","message":"x"}}`, "no_leader"},
		{"unknown outcome", 503, `{"txid":"0AP81R7TQ0802","status":"unknown","error":{"code":"unknown_outcome","message":"x"}}`, "unknown_outcome"},
		{"no body", 502, ``, "http_502"},
		{"other JSON", 500, `{"x":1}`, "http_500"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errorKind(tt.status, []byte(tt.body)); got != tt.want {
				t.Fatalf("errorKind(%d, %s) = %q, want %q", tt.status, tt.body, got, tt.want)
			}
		})
	}
}

func TestSummarizeLatency(t *testing.T) {
	ms := time.Millisecond
	var samples []reqSample
	for i := 1; i <= 100; i++ {
		samples = append(samples, reqSample{lat: time.Duration(i) * ms, txs: 1})
	}
	got := summarizeLatency(samples, func(reqSample) int64 { return 1 })
	want := latencySummary{P50: 50, P90: 90, P99: 99, Max: 100, Mean: 50.5}
	if got != want {
		t.Fatalf("summarizeLatency(1..100ms) = %+v, want %+v", got, want)
	}
	// Weighted: one fast request with 9 transactions, one slow with 1.
	two := []reqSample{{lat: ms, txs: 9}, {lat: 10 * ms, txs: 1}}
	got = summarizeLatency(two, func(s reqSample) int64 { return int64(s.txs) })
	if got.P50 != 1 || got.P90 != 1 || got.P99 != 10 || got.Max != 10 {
		t.Fatalf("weighted summary = %+v, want p50 1, p90 1, p99 10, max 10", got)
	}
	if got := summarizeLatency(nil, func(reqSample) int64 { return 1 }); got != (latencySummary{}) {
		t.Fatalf("summary of nothing = %+v, want zero", got)
	}
}

// TestBenchAgainstFake runs bench against an api.Server whose backend answers
// from a script, and checks what the summary counts.
func TestBenchAgainstFake(t *testing.T) {
	var calls atomic.Int64
	b := &fakeBackend{SubmitFunc: func(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error) {
		switch calls.Add(1) % 4 {
		case 1:
			return wire.TxResult{}, wire.ErrNoLeader
		case 2:
			return wire.TxResult{TxID: 1, Status: wire.StatusRejected, Conflict: &wire.Conflict{Key: "k"}}, nil
		}
		if opts.Ack != wire.AckAll {
			return wire.TxResult{}, errors.New("ack not passed on")
		}
		return wire.TxResult{TxID: 1, Status: wire.StatusCommitted}, nil
	}}
	url := serve(t, b)
	for _, hc := range []string{benchHTTPRaw, benchHTTPStd} {
		t.Run(hc, func(t *testing.T) {
			r := runCLI(t, testCtx(t), nil, "bench", "--targets", url+","+url, "--clients", "2", "--n", "40",
				"--ack", "all", "--json", "--progress", "0", "--http-client", hc)
			// Requests failed (no_leader): the summary is printed and bench exits 1.
			if r.code != exitFailed || !strings.Contains(r.stderr, "no_leader") {
				t.Fatalf("exit %d; stderr:\n%s\nwant 1 and the failures", r.code, r.stderr)
			}
			var res benchResult
			if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
				t.Fatalf("decode %s: %v", r.stdout, err)
			}
			// Failed requests claim transactions too, so about a quarter of the 40 fail.
			if res.Txs+res.Errors["no_leader"] != 40 || res.Rejected == 0 || res.Committed == 0 || res.Errors["no_leader"] == 0 {
				t.Fatalf("summary = %+v, want 40 transactions: committed, rejected and no_leader errors", res)
			}
			if res.Committed+res.Rejected != res.Txs || res.Requests != res.Txs || res.Latency.P50 <= 0 {
				t.Fatalf("summary = %+v: counts or latency do not add up", res)
			}
		})
	}
}

// TestBenchOverTLS runs bench with both HTTP clients against a node that
// wants mutual TLS and a token: every request carries the token over TLS.
func TestBenchOverTLS(t *testing.T) {
	f := newTLSFiles(t)
	var good, bad atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.TLS == nil || r.Header.Get("Authorization") != "Bearer good" {
			bad.Add(1)
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":{"code":"unauthenticated","message":"x"}}`))
			return
		}
		good.Add(1)
		w.Write([]byte(`{"txid":"0AP81P6ZW0800","status":"committed"}`))
	}))
	srv.TLS = f.server
	srv.StartTLS()
	defer srv.Close()
	for _, hc := range []string{benchHTTPRaw, benchHTTPStd} {
		for _, tc := range []struct {
			token   string
			wantErr string
		}{{"good", ""}, {"wrong", "unauthenticated"}} {
			t.Run(hc+"/"+tc.token, func(t *testing.T) {
				good.Store(0)
				bad.Store(0)
				r := runCLI(t, testCtx(t), map[string]string{tokenEnv: tc.token}, "bench", "--targets", strings.TrimPrefix(srv.URL, "https://"),
					"--cacert", f.ca, "--cert", f.cert, "--key", f.key, "--clients", "2", "--n", "20", "--json", "--progress", "0", "--http-client", hc)
				if want := map[bool]int{true: exitOK, false: exitFailed}[tc.wantErr == ""]; r.code != want {
					t.Fatalf("exit %d, want %d; stderr:\n%s", r.code, want, r.stderr)
				}
				var res benchResult
				if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
					t.Fatalf("decode %s: %v", r.stdout, err)
				}
				if tc.wantErr == "" && (res.Committed != 20 || bad.Load() != 0) {
					t.Fatalf("summary = %+v, %d refused; want 20 committed, none refused", res, bad.Load())
				}
				if tc.wantErr != "" && (res.Errors[tc.wantErr] != 20 || good.Load() != 0) {
					t.Fatalf("summary = %+v; want 20 %s errors", res, tc.wantErr)
				}
			})
		}
	}
}

// BenchmarkBenchClient measures the load generator's own cost per request,
// against a server that answers at once: the CPU it takes from the nodes
// it drives on the same machine. The server's cost is in it too.
func BenchmarkBenchClient(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Write([]byte(`{"txid":"0AP81P6ZW0800","status":"committed"}`))
	}))
	defer srv.Close()
	cfg := benchConfig{targets: []string{srv.URL}, clients: 1, valueSize: 256, opsPerTx: 1, ack: wire.AckQuorum, batch: 1, keys: 1000, timeout: time.Second}
	urls := []string{srv.URL + "/v1/tx?ack=quorum&timeout=1s"}
	for _, hc := range []string{benchHTTPRaw, benchHTTPStd} {
		b.Run("http-client="+strings.ReplaceAll(hc, "/", ""), func(b *testing.B) {
			r := &benchRun{cfg: cfg, urls: urls}
			var rc *rawClient
			if hc == benchHTTPStd {
				tr := &http.Transport{}
				defer tr.CloseIdleConnections()
				r.hc = &http.Client{Transport: tr}
			} else {
				var err error
				if rc, err = newRawClient(urls, 3*time.Second, nil, ""); err != nil {
					b.Fatal(err)
				}
				defer rc.close()
			}
			w := newWorkload(cfg, "b", 0)
			var resp bytes.Buffer
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if o := r.send(ctx, rc, 0, w.body(), &resp); o.err != "" {
					b.Fatal(o.err)
				}
			}
		})
	}
}

// TestBenchAgainstCluster runs short benches against a real three-node
// cluster: single transactions, batches, ack=accepted, and --local.
func TestBenchAgainstCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts txlogd clusters")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	bin, err := launcher.BuildBinaries(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cl, err := launcher.StartCluster(ctx, launcher.ClusterConfig{Bin: bin, Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("StartCluster() = %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logTails(cl))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cl.Close(ctx)
	})
	if _, err := cl.Leader(ctx); err != nil {
		t.Fatalf("Leader() = %v", err)
	}
	if err := cl.WaitReady(ctx); err != nil {
		t.Fatalf("WaitReady() = %v", err)
	}
	targets := strings.Join(cl.HTTPAddrs(), ",")

	tests := []struct {
		name   string
		args   []string
		status string // of every transaction
	}{
		{"single", []string{"--duration", "1s", "--clients", "4"}, wire.StatusCommitted},
		{"batch", []string{"--n", "200", "--batch", "50", "--ops-per-tx", "2", "--keys", "10"}, wire.StatusCommitted},
		{"accepted", []string{"--n", "30", "--ack", "accepted"}, wire.StatusPending},
		{"stream", []string{"--client", "stream", "--duration", "1s", "--clients", "8"}, wire.StatusCommitted},
		// --local measures the nodes' CPU in ticks of 10 ms: enough
		// transactions that the window holds some.
		{"local", []string{"--local", "--txlogd", bin, "--n", "500"}, wire.StatusCommitted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"bench", "--json", "--progress", "0", "--targets", targets}, tt.args...)
			r := runCLI(t, ctx, nil, args...)
			if r.code != 0 {
				t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
			}
			var res benchResult
			if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
				t.Fatalf("decode %s: %v", r.stdout, err)
			}
			if len(res.Errors) > 0 || res.Txs == 0 || res.TxPerSec <= 0 || res.Latency.P99 <= 0 {
				t.Fatalf("summary = %+v, want transactions and no errors", res)
			}
			got := map[string]int64{wire.StatusCommitted: res.Committed, wire.StatusPending: res.Pending, wire.StatusRejected: res.Rejected}
			if got[tt.status] != res.Txs {
				t.Fatalf("summary = %+v, want every transaction %s", res, tt.status)
			}
			if slices.Contains(tt.args, "--n") && res.Txs < 20 {
				t.Fatalf("%d transactions, want all of --n", res.Txs)
			}
			if slices.Contains(tt.args, "--local") != (res.NodesCPU > 0) {
				t.Fatalf("nodes_cpu_cores = %v: want it with --local only", res.NodesCPU)
			}
			if slices.Contains(tt.args, "--local") != (res.NodesSwitchesPerTx > 0) {
				t.Fatalf("nodes_ctx_switches_per_tx = %v: want it with --local only", res.NodesSwitchesPerTx)
			}
			// /proc/stat counts in ticks of 10 ms: a window of a few ticks may
			// have none, and then no shares.
			if s, i := res.MachineStealPct, res.MachineIdlePct; (s == nil) != (i == nil) || (s == nil && res.Seconds >= 0.5) ||
				(s != nil && (*s < 0 || *i < 0 || *s+*i > 100)) {
				t.Fatalf("machine_steal_pct %v, machine_idle_pct %v after %.2fs: want both, in [0, 100]", s, i, res.Seconds)
			}
		})
	}
}

func TestFormatBar(t *testing.T) {
	for _, tt := range []struct {
		frac   float64
		warmup bool
		want   string
	}{
		{0, true, "[..............................]   0%    0.5s      1200 tx/s      0 failed (warmup)"},
		{0.5, false, "[###############...............]  50%    0.5s      1200 tx/s      0 failed"},
		{1, false, "[##############################] 100%    0.5s      1200 tx/s      0 failed"},
	} {
		if got := formatBar(tt.frac, 500*time.Millisecond, 1200, 0, tt.warmup); got != tt.want {
			t.Errorf("formatBar(%v) =\n%q, want\n%q", tt.frac, got, tt.want)
		}
	}
}

// TestReportBar: the bar is redrawn in place on one line, which ends when the
// run does, and its last state counts every transaction.
func TestReportBar(t *testing.T) {
	start := time.Now()
	r := &benchRun{cfg: benchConfig{duration: 200 * time.Millisecond, warmup: 50 * time.Millisecond}}
	r.start, r.measured, r.stopAt = start, start.Add(50*time.Millisecond), start.Add(250*time.Millisecond)
	var out bytes.Buffer
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() { defer close(finished); r.reportBar(&out, done, 10*time.Millisecond) }()
	for range 5 {
		time.Sleep(20 * time.Millisecond)
		r.doneTxs.Add(100)
	}
	r.failed.Add(2)
	close(done)
	<-finished
	s := out.String()
	if !strings.HasSuffix(s, "\n") || strings.Count(s, "\n") != 1 {
		t.Fatalf("output %q: want one line, redrawn with \\r and ended once", s)
	}
	draws := strings.Split(strings.TrimSuffix(s, "\n"), "\r")[1:]
	if len(draws) < 3 {
		t.Fatalf("%d draws in %q, want several", len(draws), s)
	}
	for i := 1; i < len(draws); i++ {
		if utf8.RuneCountInString(draws[i]) < utf8.RuneCountInString(strings.TrimRight(draws[i-1], " ")) {
			t.Fatalf("draw %q does not cover the one before, %q", draws[i], draws[i-1])
		}
	}
	if !strings.Contains(draws[0], "(warmup)") {
		t.Errorf("first draw %q: want it marked as warm-up", draws[0])
	}
	if last := draws[len(draws)-1]; !strings.Contains(last, "2 failed") || strings.Contains(last, "(warmup)") {
		t.Errorf("last draw %q: want 2 failed requests, after the warm-up", last)
	}
}

func TestProgressFraction(t *testing.T) {
	start := time.Now()
	r := &benchRun{cfg: benchConfig{duration: 9 * time.Second, warmup: time.Second}}
	r.start, r.measured, r.stopAt = start, start.Add(time.Second), start.Add(10*time.Second)
	for _, tt := range []struct {
		at   time.Duration
		want float64
	}{{0, 0}, {5 * time.Second, 0.5}, {10 * time.Second, 1}, {20 * time.Second, 1}} {
		if got := r.progressFraction(start.Add(tt.at)); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("progressFraction(+%v) = %v, want %v", tt.at, got, tt.want)
		}
	}
	n := &benchRun{cfg: benchConfig{n: 200, batch: 1}}
	n.claimed.Store(50)
	if got := n.progressFraction(time.Now()); got != 0.25 {
		t.Errorf("--n 200 with 50 claimed: %v, want 0.25", got)
	}
	n.claimed.Store(201) // the claims of the clients that stop
	if got := n.progressFraction(time.Now()); got != 1 {
		t.Errorf("--n 200 with 201 claimed: %v, want 1", got)
	}
}

// TestBenchLocalSecurity runs bench --local on secured clusters with both
// HTTP clients: tokens over plain HTTP, and mutual TLS with a token and TLS
// between the nodes; every transaction commits.
func TestBenchLocalSecurity(t *testing.T) {
	if testing.Short() {
		t.Skip("starts txlogd clusters")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	bin, err := launcher.BuildBinaries(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"token raw", []string{"--local-security", "token"}},
		{"mtls+token peer tls raw", []string{"--local-security", "mtls+token", "--local-peer-tls"}},
		{"mtls net/http", []string{"--local-security", "mtls", "--http-client", "net/http"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"bench", "--json", "--progress", "0", "--local", "--txlogd", bin, "--local-dir", t.TempDir(), "--n", "100", "--clients", "2"}, tc.args...)
			r := runCLI(t, ctx, nil, args...)
			if r.code != 0 {
				t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
			}
			var res benchResult
			if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
				t.Fatalf("decode %s: %v", r.stdout, err)
			}
			if len(res.Errors) > 0 || res.Committed != res.Txs || res.Txs < 100 {
				t.Fatalf("summary = %+v, want 100 committed transactions and no errors", res)
			}
		})
	}
}

// TestWorkloadTx checks that --client stream's transactions are those of
// the HTTP bodies: --ops-per-tx puts of bench/ keys, each with a new
// idempotency key of the client's prefix.
func TestWorkloadTx(t *testing.T) {
	w := newWorkload(benchConfig{valueSize: 8, opsPerTx: 3, keys: 5, batch: 1}, "run", 2)
	a, b := w.tx(), w.tx()
	if len(a.Ops) != 3 || a.Ops[0].Op != wire.OpPut || !strings.HasPrefix(a.Ops[0].Key, "bench/0000000") || len(a.Ops[0].Value) != 8 {
		t.Fatalf("tx() = %+v, want 3 puts of bench/ keys with 8-byte values", a)
	}
	if a.IdempotencyKey != "bench-run-2-0" || b.IdempotencyKey != "bench-run-2-1" {
		t.Fatalf("idempotency keys %q, %q; want bench-run-2-0 and bench-run-2-1", a.IdempotencyKey, b.IdempotencyKey)
	}
}
