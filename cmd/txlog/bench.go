package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/chaos/procstat"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/launcher"
)

const benchSynopsis = `[flags] [-- TXLOGD-FLAGS...]

Runs a closed-loop load against a cluster: --clients clients, each with one
request in flight at a time, send puts of random keys to the --targets in turn
(client i starts at target i). It shows its progress on stderr, a bar redrawn
in place when stderr is a terminal and otherwise a line every --progress, and
prints a summary at the end (with --json: one JSON object on stdout).

Throughput counts the transactions answered with 200, 202 or 409 within the
measured window (after --warmup); latencies are those of the successful
requests. A failed request counts under its error kind (the API's error code,
or the transport's: conn_refused, client_timeout, ...) and its client pauses
10ms before the next one. Every transaction carries a fresh idempotency key.

With --local, bench first starts a fresh cluster of three txlogd in a new
directory under --local-dir, runs against it and removes it (flags after "--"
go to every txlogd); the summary then also gives the nodes' CPU use.
--local-security secures that cluster's HTTP ports to measure what security
costs: token (an auth file, a bearer token over plain HTTP), tls (https and a
token), mtls (mutual TLS, the client certificate alone authenticates) or
mtls+token; --local-peer-tls adds mutual TLS between the nodes. Against
--targets, --token, --cacert, --cert and --key give the credentials; both
HTTP clients speak https.

The load generator shares the machine's CPUs with the nodes it drives: the
summary gives its own CPU use (client_cpu_cores) so you can tell.`

// Defaults and bounds of txlog bench.
const (
	benchDefaultKeys   = 100_000
	benchErrorPause    = 10 * time.Millisecond // a client's pause after a failed request
	benchTimeoutMargin = 2 * time.Second       // the client waits this much longer than the server may take
	benchLeaderTimeout = time.Minute           // --local: for the first leader
	benchStopTimeout   = 30 * time.Second      // --local: for stopping the nodes
)

// benchConfig is what the command line of bench asks for.
type benchConfig struct {
	targets    []string      // base URLs, without a trailing slash
	clients    int           // concurrent clients, each with one request in flight
	duration   time.Duration // measured window; unused when n > 0
	warmup     time.Duration // unmeasured time before the window
	n          int64         // > 0: stop after this many transactions (after warmup)
	valueSize  int           // bytes of each value as stored: a JSON string, quotes included
	opsPerTx   int           // puts per transaction
	ack        string        // ack level of every request
	batch      int           // transactions per request; 1 is POST /v1/tx
	keys       int           // key space: bench/00000000 .. bench/<keys-1>
	timeout    time.Duration // the server's timeout of each request
	httpClient string        // benchHTTPRaw or benchHTTPStd
	client     string        // benchClientHTTP or benchClientStream
	progress   time.Duration // interval of progress lines; 0: none
	json       bool
	local      bool
	localDir   string   // --local: parent of the cluster's directory
	txlogd     string   // --local: txlogd binary
	txlogdArgs []string // --local: flags for every txlogd
	security   string   // --local: one of benchSecurity
	peerTLS    bool     // --local: mutual TLS between the nodes
	token      string   // bearer token of every request; "" for none
	tls        *tls.Config
}

// benchSecurity are the values of --local-security.
var benchSecurity = []string{"off", "token", "tls", "mtls", "mtls+token"}

// secureConfig is the launcher's setting of --local-security, nil for off.
func (b benchConfig) secureConfig() *launcher.SecureConfig {
	if b.security == "off" && !b.peerTLS {
		return nil
	}
	return &launcher.SecureConfig{
		NoClientTLS: b.security == "off" || b.security == "token",
		MutualTLS:   strings.HasPrefix(b.security, "mtls"),
		NoPeerTLS:   !b.peerTLS,
	}
}

// useSecurity takes the credentials of a --local cluster: its CA and client
// certificate, and its admin token unless the client certificate alone
// authenticates (mtls).
func (b *benchConfig) useSecurity(sec *launcher.Security) {
	if sec == nil {
		return
	}
	if sec.ClientTLS {
		b.tls = sec.TLSConfig()
	}
	if b.security != "mtls" {
		b.token = sec.AdminToken
	}
}

// parseBench parses the command line of bench. Every problem is a *usageError.
func (c *cli) parseBench(args []string) (benchConfig, error) {
	cmd := c.command("bench", benchSynopsis)
	targets := cmd.targets()
	var b benchConfig
	var n int64
	cmd.IntVar(&b.clients, "clients", 16, "concurrent clients, each with one request in flight")
	cmd.DurationVar(&b.duration, "duration", 10*time.Second, "how long to measure (after --warmup)")
	cmd.DurationVar(&b.warmup, "warmup", 0, "how long to run before measuring")
	cmd.Int64Var(&n, "n", 0, "stop after this many transactions (whole batches) instead of after --duration")
	cmd.IntVar(&b.valueSize, "value-size", 256, "bytes of each value as stored: a JSON string, quotes included (at least 2)")
	cmd.IntVar(&b.opsPerTx, "ops-per-tx", 1, "puts per transaction")
	cmd.StringVar(&b.ack, "ack", wire.AckQuorum, "acknowledgement level: quorum, all or accepted")
	cmd.IntVar(&b.batch, "batch", 0, "transactions per POST /v1/tx/batch request; 0 or 1 sends each alone to POST /v1/tx")
	cmd.IntVar(&b.keys, "keys", benchDefaultKeys, "number of distinct keys; few keys make contention")
	cmd.StringVar(&b.httpClient, "http-client", benchHTTPRaw, "how the load generator speaks HTTP: raw (one keep-alive connection per client and target, read and written on the client's goroutine; http:// targets) or net/http (Go's http.Client)")
	cmd.StringVar(&b.client, "client", benchClientHTTP, "http (the load generator's own HTTP requests, --http-client, spread over the targets) or stream (one Go client.Client shared by all clients, writing over its streams to the leader; needs --batch 0 or 1)")
	cmd.DurationVar(&b.progress, "progress", time.Second, "interval of progress lines on stderr (on a terminal: the longest between redraws of the progress bar); 0 turns them off")
	cmd.BoolVar(&b.json, "json", false, "print the summary as one JSON object")
	cmd.BoolVar(&b.local, "local", false, "start a fresh three-node cluster for the run and remove it after")
	cmd.StringVar(&b.localDir, "local-dir", "", "--local: where the cluster's directory goes (default: the system's temporary directory)")
	cmd.StringVar(&b.txlogd, "txlogd", "", "--local: txlogd binary (default: next to txlog, else on PATH, else built)")
	cmd.StringVar(&b.security, "local-security", "off", "--local: off, token (auth file, token over plain HTTP), tls (https and token), mtls (client certificate) or mtls+token")
	cmd.BoolVar(&b.peerTLS, "local-peer-tls", false, "--local: mutual TLS between the nodes")
	pos, extra, err := cmd.parseSplit(args)
	if err != nil {
		return b, err
	}
	if len(pos) > 0 {
		return b, usagef("bench takes no arguments, got %q (txlogd flags go after --)", pos)
	}
	b.n, b.txlogdArgs, b.timeout = n, extra, *cmd.timeout
	if b.batch == 0 {
		b.batch = 1
	}
	if len(extra) > 0 && !b.local {
		return b, usagef("txlogd flags after -- need --local")
	}
	if !b.local {
		if b.targets, err = splitTargets(*targets, cmd.creds.scheme()); err != nil {
			return b, err
		}
		if b.tls, err = cmd.creds.tls(); err != nil {
			return b, err
		}
		b.token = cmd.creds.token
	}
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if b.clients < 1 {
		bad("--clients %d: want at least 1", b.clients)
	}
	if b.n < 0 {
		bad("--n %d: must not be negative", b.n)
	}
	if b.n == 0 && b.duration <= 0 {
		bad("--duration %v: want more than 0", b.duration)
	}
	if b.warmup < 0 {
		bad("--warmup %v: must not be negative", b.warmup)
	}
	if b.valueSize < 2 {
		bad("--value-size %d: want at least 2 (the quotes of the JSON string)", b.valueSize)
	}
	if b.opsPerTx < 1 {
		bad("--ops-per-tx %d: want at least 1", b.opsPerTx)
	}
	if b.batch < 0 {
		bad("--batch %d: must not be negative", b.batch)
	}
	if b.keys < 1 {
		bad("--keys %d: want at least 1", b.keys)
	}
	if !slices.Contains(acks, b.ack) {
		bad("--ack %q: want quorum, all or accepted", b.ack)
	}
	if b.timeout <= 0 {
		bad("--timeout %v: want more than 0", b.timeout)
	}
	if b.progress < 0 {
		bad("--progress %v: must not be negative", b.progress)
	}
	if !slices.Contains(benchSecurity, b.security) {
		bad("--local-security %q: want one of %s", b.security, strings.Join(benchSecurity, ", "))
	}
	if !b.local && (b.security != "off" || b.peerTLS) {
		bad("--local-security and --local-peer-tls need --local")
	}
	if b.local && (cmd.creds.token != "" || cmd.creds.caCert != "" || cmd.creds.cert != "") {
		bad("--local makes its own credentials (--local-security): leave out --token, --cacert and --cert")
	}
	if strings.ContainsAny(b.token, " \t\r\n") {
		bad("--token: contains white space")
	}
	switch b.httpClient {
	case benchHTTPRaw, benchHTTPStd:
	default:
		bad("--http-client %q: want raw or net/http", b.httpClient)
	}
	switch {
	case b.client != benchClientHTTP && b.client != benchClientStream:
		bad("--client %q: want http or stream", b.client)
	case b.client == benchClientStream && b.batch > 1:
		bad("--client stream writes single transactions: leave out --batch")
	}
	if len(errs) > 0 {
		return b, usagef("%s", strings.Join(errs, "; "))
	}
	return b, nil
}

// splitTargets returns the base URLs in the comma-separated list s. A target
// without a scheme gets scheme ("http://" or "https://").
func splitTargets(s, scheme string) ([]string, error) {
	var out []string
	for _, t := range strings.Split(s, ",") {
		t = strings.TrimSpace(t)
		if t == "" {
			continue
		}
		if !strings.Contains(t, "://") {
			t = scheme + t
		}
		if err := (client.ClientConfig{Endpoints: []string{t}}).Validate(); err != nil {
			return nil, usagef("--targets: %v", err)
		}
		out = append(out, strings.TrimRight(t, "/"))
	}
	if len(out) == 0 {
		return nil, usagef("--targets: no URLs")
	}
	return out, nil
}

func (c *cli) bench(ctx context.Context, args []string) error {
	cfg, err := c.parseBench(args)
	if err != nil {
		return err
	}
	var nodePIDs func() []int
	if cfg.local {
		cl, dir, err := c.benchCluster(ctx, cfg)
		if err != nil {
			return err
		}
		defer func() {
			stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), benchStopTimeout+5*time.Second)
			defer cancel()
			if err := cl.Close(stopCtx); err != nil {
				fmt.Fprintf(c.stderr, "txlog bench: stop the cluster: %v\n", err)
			}
			os.RemoveAll(dir)
		}()
		cfg.targets = cl.HTTPAddrs()
		cfg.useSecurity(cl.Security())
		nodePIDs = func() []int {
			var pids []int
			for _, p := range cl.Nodes() {
				pids = append(pids, p.PID())
			}
			return pids
		}
	}
	var progress io.Writer
	if cfg.progress > 0 {
		progress = c.stderr
	}
	res, err := runBench(ctx, cfg, progress, nodePIDs)
	if err != nil {
		return err
	}
	if cfg.json {
		err = printJSON(c.stdout, res)
	} else {
		err = res.print(c.stdout)
	}
	if err != nil {
		return err
	}
	return res.failure()
}

// failure is the error of a run in which requests or transactions failed, or
// none succeeded: bench then exits 1.
func (res *benchResult) failure() error {
	var n int64
	var kinds []string
	for _, k := range slices.Sorted(maps.Keys(res.Errors)) {
		n += res.Errors[k]
		kinds = append(kinds, fmt.Sprintf("%s %d", k, res.Errors[k]))
	}
	switch {
	case n > 0:
		return fmt.Errorf("bench: %d failed (%s), %d transactions succeeded", n, strings.Join(kinds, ", "), res.Txs)
	case res.Txs == 0:
		return errors.New("bench: no transaction succeeded")
	}
	return nil
}

// benchCluster starts a fresh cluster for --local in a new directory and waits
// until it is ready. The caller closes the cluster and removes the directory.
func (c *cli) benchCluster(ctx context.Context, cfg benchConfig) (*launcher.Cluster, string, error) {
	dir, err := os.MkdirTemp(cfg.localDir, "txlog-bench-")
	if err != nil {
		return nil, "", fmt.Errorf("bench: %w", err)
	}
	exeDir := ""
	if exe, err := os.Executable(); err == nil {
		exeDir = filepath.Dir(exe)
	}
	bin, err := findTxlogd(ctx, cfg.txlogd, exeDir, filepath.Join(dir, "bin"), c.stderr)
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	cl, err := launcher.StartCluster(ctx, launcher.ClusterConfig{
		Bin:         bin,
		Dir:         filepath.Join(dir, "cluster"),
		ExtraArgs:   cfg.txlogdArgs,
		StopTimeout: benchStopTimeout,
		Secure:      cfg.secureConfig(),
	})
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", fmt.Errorf("bench: %w", err)
	}
	readyCtx, cancel := context.WithTimeout(ctx, benchLeaderTimeout)
	defer cancel()
	if _, err = cl.Leader(readyCtx); err == nil {
		err = cl.WaitReady(readyCtx)
	}
	if err != nil {
		tails := logTails(cl)
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), benchStopTimeout)
		defer cancel()
		cl.Close(stopCtx)
		os.RemoveAll(dir)
		return nil, "", fmt.Errorf("bench: %w\n%s", err, tails)
	}
	return cl, dir, nil
}

// workload builds the request bodies of one client. It is not safe for
// concurrent use.
type workload struct {
	batch, opsPerTx, keys int
	rng                   *rand.Rand
	keyPrefix             []byte // idempotency key prefix, unique to the run and the client
	seq                   uint64
	value                 []byte // a JSON string
	buf                   []byte // owned by body's result until the next call
}

func newWorkload(cfg benchConfig, run string, client int) *workload {
	value := make([]byte, cfg.valueSize)
	for i := range value {
		value[i] = 'a' + byte((i+client)%26)
	}
	value[0], value[len(value)-1] = '"', '"'
	return &workload{
		batch:     cfg.batch,
		opsPerTx:  cfg.opsPerTx,
		keys:      cfg.keys,
		rng:       rand.New(rand.NewPCG(uint64(client), uint64(time.Now().UnixNano()))),
		keyPrefix: fmt.Appendf(nil, "bench-%s-%d-", run, client),
		value:     value,
	}
}

// body returns the next request body: one transaction, or a batch of them.
// The slice is valid until the next call.
func (w *workload) body() []byte {
	b := w.buf[:0]
	if w.batch > 1 {
		b = append(b, `{"txs":[`...)
	}
	for i := range w.batch {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"idempotency_key":"`...)
		b = append(b, w.keyPrefix...)
		b = strconv.AppendUint(b, w.seq, 10)
		w.seq++
		b = append(b, `","ops":[`...)
		for j := range w.opsPerTx {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"op":"put","key":"`...)
			b = appendKey(b, w.rng.IntN(w.keys))
			b = append(b, `","value":`...)
			b = append(b, w.value...)
			b = append(b, '}')
		}
		b = append(b, "]}"...)
	}
	if w.batch > 1 {
		b = append(b, "]}"...)
	}
	w.buf = b
	return b
}

// appendKey appends the key with number k: bench/ and k in at least 8 digits.
func appendKey(b []byte, k int) []byte {
	b = append(b, "bench/"...)
	var d [20]byte
	s := strconv.AppendInt(d[:0], int64(k), 10)
	for range 8 - len(s) {
		b = append(b, '0')
	}
	return append(b, s...)
}

// reqSample is one successful request: its latency and how many of its
// transactions succeeded.
type reqSample struct {
	lat time.Duration
	txs int32
}

// clientStats is what one client saw in the measured window. Each client owns
// its own; they are merged after the run.
type clientStats struct {
	samples                      []reqSample
	committed, pending, rejected int64
	errors                       map[string]int64
}

// benchRun is one run of the load: its settings and shared counters.
type benchRun struct {
	cfg      benchConfig
	hc       *http.Client   // --http-client=net/http; nil for raw
	gc       *client.Client // --client stream; nil for http
	urls     []string       // one per target: the write URL with its query
	start    time.Time
	measured time.Time // start of the measured window
	stopAt   time.Time // end of the window; zero with --n
	stop     atomic.Bool
	claimed  atomic.Int64 // --n: transactions claimed by the clients
	// Progress counters, warmup included.
	doneTxs, failed atomic.Int64
}

func runBench(ctx context.Context, cfg benchConfig, progress io.Writer, nodePIDs func() []int) (*benchResult, error) {
	path := "/v1/tx"
	if cfg.batch > 1 {
		path = "/v1/tx/batch"
	}
	query := "?ack=" + cfg.ack + "&timeout=" + cfg.timeout.String()
	r := &benchRun{cfg: cfg}
	if cfg.httpClient == benchHTTPStd {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = cfg.clients
		tr.MaxIdleConns = cfg.clients * len(cfg.targets)
		tr.DisableCompression = true
		tr.TLSClientConfig = cfg.tls
		r.hc = &http.Client{Transport: tr}
		defer tr.CloseIdleConnections()
	}
	if cfg.client == benchClientStream {
		r.gc = newBenchStreamClient(cfg)
		defer r.gc.Close()
	}
	for _, t := range cfg.targets {
		r.urls = append(r.urls, t+path+query)
	}
	run := strconv.FormatUint(rand.Uint64()%(1<<40), 36)

	r.start = time.Now()
	r.measured = r.start.Add(cfg.warmup)
	if cfg.n == 0 {
		r.stopAt = r.measured.Add(cfg.duration)
	}
	stats := make([]*clientStats, cfg.clients)
	var wg sync.WaitGroup
	for i := range cfg.clients {
		stats[i] = &clientStats{errors: map[string]int64{}}
		w := newWorkload(cfg, run, i)
		wg.Go(func() { r.client(ctx, i, w, stats[i]) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	var progressDone chan struct{}
	if progress != nil {
		progressDone = make(chan struct{})
		go func() { defer close(progressDone); r.report(progress, done) }()
	}

	// The CPU use of the bench and of the nodes over the measured window.
	var cpu0, cpu1 procstat.Sample
	select {
	case <-time.After(time.Until(r.measured)):
	case <-done:
	}
	cpu0 = procstat.TakeSample(nodePIDs)
	if cfg.n == 0 {
		select {
		case <-time.After(time.Until(r.stopAt)):
		case <-done: // ctx ended
		}
	} else {
		<-done
	}
	end := time.Now()
	cpu1 = procstat.TakeSample(nodePIDs)
	r.stop.Store(true)
	<-done
	if progressDone != nil {
		<-progressDone
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("bench: %w", ctx.Err())
	}
	elapsed := end.Sub(r.measured)
	if cfg.n == 0 {
		elapsed = cfg.duration
	}
	return summarize(cfg, stats, elapsed, cpu0, cpu1), nil
}

// client sends requests until the run stops. It records what ended inside the
// measured window in st.
func (r *benchRun) client(ctx context.Context, i int, w *workload, st *clientStats) {
	var resp bytes.Buffer
	var rc *rawClient
	if r.hc == nil && r.gc == nil {
		var err error
		if rc, err = newRawClient(r.urls, r.cfg.timeout+benchTimeoutMargin, r.cfg.tls, r.cfg.token); err != nil {
			st.errors["request"]++ // parseBench checked the targets
			return
		}
		defer rc.close()
	}
	target := i % len(r.urls)
	for !r.stop.Load() && ctx.Err() == nil {
		started := time.Now()
		inWindow := !started.Before(r.measured)
		if r.cfg.n > 0 && inWindow && r.claimed.Add(int64(r.cfg.batch)) > r.cfg.n {
			return
		}
		var o outcome
		if r.gc != nil {
			o = r.sendStream(ctx, w)
		} else {
			o = r.send(ctx, rc, target, w.body(), &resp)
		}
		target = (target + 1) % len(r.urls)
		ended := time.Now()
		if o.err == "" {
			r.doneTxs.Add(o.committed + o.pending + o.rejected)
		} else {
			r.failed.Add(1)
		}
		if inWindow && (r.stopAt.IsZero() || !ended.After(r.stopAt)) && ctx.Err() == nil {
			st.record(o, ended.Sub(started))
		}
		if o.err != "" {
			select {
			case <-time.After(benchErrorPause):
			case <-ctx.Done():
			}
		}
	}
}

// record adds one request's outcome to st.
func (st *clientStats) record(o outcome, lat time.Duration) {
	for k, n := range o.itemErrors {
		st.errors[k] += n
	}
	if o.err != "" {
		st.errors[o.err]++
		return
	}
	st.committed += o.committed
	st.pending += o.pending
	st.rejected += o.rejected
	st.samples = append(st.samples, reqSample{lat: lat, txs: int32(o.committed + o.pending + o.rejected)})
}

// outcome is the answer to one request: the transactions by status, or the
// error kind of the whole request.
type outcome struct {
	committed, pending, rejected int64
	err                          string           // "" when the request succeeded
	itemErrors                   map[string]int64 // batch: failed transactions by error code
}

// send posts body to target (through rc, or r.hc when rc is nil) and
// classifies the answer. resp is a buffer for the answer's body.
func (r *benchRun) send(ctx context.Context, rc *rawClient, target int, body []byte, resp *bytes.Buffer) outcome {
	var status int
	var err error
	if rc != nil {
		status, err = rc.exchange(ctx, target, body, resp)
	} else {
		status, err = r.exchangeStd(ctx, r.urls[target], body, resp)
	}
	if err != nil {
		return outcome{err: transportKind(err)}
	}
	if r.cfg.batch > 1 {
		if status != http.StatusOK {
			return outcome{err: errorKind(status, resp.Bytes())}
		}
		return batchOutcome(resp.Bytes(), r.cfg.batch)
	}
	switch status {
	case http.StatusOK:
		return outcome{committed: 1}
	case http.StatusAccepted:
		return outcome{pending: 1}
	case http.StatusConflict:
		return outcome{rejected: 1}
	}
	return outcome{err: errorKind(status, resp.Bytes())}
}

// exchangeStd is rawClient.exchange through r.hc.
func (r *benchRun) exchangeStd(ctx context.Context, url string, body []byte, resp *bytes.Buffer) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.timeout+benchTimeoutMargin)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if r.cfg.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.cfg.token)
	}
	res, err := r.hc.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Reset()
	_, err = resp.ReadFrom(res.Body)
	res.Body.Close()
	return res.StatusCode, err
}

// Status fields as they appear in the answer of POST /v1/tx/batch; counting
// them is cheaper than decoding the whole answer.
var (
	committedField = []byte(`"status":"` + wire.StatusCommitted + `"`)
	pendingField   = []byte(`"status":"` + wire.StatusPending + `"`)
	rejectedField  = []byte(`"status":"` + wire.StatusRejected + `"`)
)

// batchOutcome counts the results of a batch answer with status 200 and n
// transactions; it decodes the answer only when some of them failed.
func batchOutcome(body []byte, n int) outcome {
	o := outcome{
		committed: int64(bytes.Count(body, committedField)),
		pending:   int64(bytes.Count(body, pendingField)),
		rejected:  int64(bytes.Count(body, rejectedField)),
	}
	if o.committed+o.pending+o.rejected == int64(n) {
		return o
	}
	var br wire.BatchResponse
	if err := json.Unmarshal(body, &br); err != nil || len(br.Results) != n {
		return outcome{err: "bad_answer"}
	}
	o = outcome{itemErrors: map[string]int64{}}
	for _, res := range br.Results {
		switch {
		case res.Error != nil:
			o.itemErrors["batch_item_"+res.Error.Code]++
		case res.Status == wire.StatusCommitted:
			o.committed++
		case res.Status == wire.StatusPending:
			o.pending++
		case res.Status == wire.StatusRejected:
			o.rejected++
		default:
			o.itemErrors["batch_item_"+res.Status]++
		}
	}
	return o
}

// errorKind names a failed answer by its API error code, else by its status.
func errorKind(status int, body []byte) string {
	var e struct {
		Error *wire.ErrorBody `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error != nil && e.Error.Code != "" {
		return e.Error.Code
	}
	return "http_" + strconv.Itoa(status)
}

// transportKind names a failed exchange.
func transportKind(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "conn_refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "conn_reset"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "client_timeout"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "conn_closed"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return "transport"
}

// report shows the run's progress on w until done is closed: on a terminal, a
// bar redrawn in place; elsewhere (a pipe, a file, a CI log), a line every
// interval.
func (r *benchRun) report(w io.Writer, done <-chan struct{}) {
	if procstat.IsTerminal(w) {
		r.reportBar(w, done, min(r.cfg.progress, barRedraw))
		return
	}
	tick := time.NewTicker(r.cfg.progress)
	defer tick.Stop()
	var last int64
	lastAt := r.start
	for {
		select {
		case <-done:
			return
		case now := <-tick.C:
			txs, failed := r.doneTxs.Load(), r.failed.Load()
			rate := float64(txs-last) / now.Sub(lastAt).Seconds()
			phase := ""
			if now.Before(r.measured) {
				phase = " (warmup)"
			}
			fmt.Fprintf(w, "%6.1fs %10d tx %9.0f tx/s %6d failed requests%s\n",
				now.Sub(r.start).Seconds(), txs, rate, failed, phase)
			last, lastAt = txs, now
		}
	}
}

// barRedraw is the longest time between two redraws of the progress bar, and
// barRateWindow how far back its rate looks.
const (
	barRedraw     = 250 * time.Millisecond
	barRateWindow = time.Second
)

// reportBar redraws the progress bar on one line every interval, and once more
// with the last counts when done is closed, then ends the line.
func (r *benchRun) reportBar(w io.Writer, done <-chan struct{}, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	type point struct {
		at  time.Time
		txs int64
	}
	recent := []point{{r.start, 0}} // the oldest within barRateWindow, or the start
	shown := 0                      // the width of the line on screen
	draw := func(now time.Time) {
		txs := r.doneTxs.Load()
		recent = append(recent, point{now, txs})
		for len(recent) > 2 && now.Sub(recent[1].at) >= barRateWindow {
			recent = recent[1:]
		}
		rate := 0.0
		if d := now.Sub(recent[0].at).Seconds(); d > 0 {
			rate = float64(txs-recent[0].txs) / d
		}
		line := formatBar(r.progressFraction(now), now.Sub(r.start), rate, r.failed.Load(), now.Before(r.measured))
		width := utf8.RuneCountInString(line)
		fmt.Fprintf(w, "\r%s%s", line, strings.Repeat(" ", max(shown-width, 0)))
		shown = width
	}
	for {
		select {
		case <-done:
			draw(time.Now())
			fmt.Fprintln(w)
			return
		case now := <-tick.C:
			draw(now)
		}
	}
}

// progressFraction is how much of the run is behind at now, from 0 to 1: of the
// warm-up and the measured time, or with --n of the transactions to measure
// (0 during the warm-up).
func (r *benchRun) progressFraction(now time.Time) float64 {
	if r.cfg.n > 0 {
		return min(float64(r.claimed.Load())/float64(r.cfg.n), 1)
	}
	total := r.stopAt.Sub(r.start)
	if total <= 0 {
		return 1
	}
	return min(max(float64(now.Sub(r.start))/float64(total), 0), 1)
}

// barWidth is the number of cells in the progress bar.
const barWidth = 30

// formatBar renders one state of the progress bar: how far the run is, the
// time since its start, transactions per second lately, and failed requests.
func formatBar(frac float64, elapsed time.Duration, rate float64, failed int64, warmup bool) string {
	filled := int(frac * barWidth)
	phase := ""
	if warmup {
		phase = " (warmup)"
	}
	return fmt.Sprintf("[%s%s] %3.0f%% %6.1fs %9.0f tx/s %6d failed%s",
		strings.Repeat("#", filled), strings.Repeat(".", barWidth-filled), frac*100, elapsed.Seconds(), rate, failed, phase)
}

// benchResult is the summary of a run, printed as text or JSON. tools/etcdbench
// prints the same JSON fields; keep the two in step.
type benchResult struct {
	System    string   `json:"system"`
	Targets   []string `json:"targets"`
	Clients   int      `json:"clients"`
	ValueSize int      `json:"value_size"`
	OpsPerTx  int      `json:"ops_per_tx"`
	Batch     int      `json:"batch"`
	Ack       string   `json:"ack"`
	Keys      int      `json:"keys"`
	Client    string   `json:"client"`  // --client: http or stream
	Seconds   float64  `json:"seconds"` // the measured window
	// Requests and transactions that succeeded in the window.
	Requests  int64   `json:"requests"`
	Txs       int64   `json:"txs"`
	Committed int64   `json:"committed"`
	Pending   int64   `json:"pending"`
	Rejected  int64   `json:"rejected"`
	ReqPerSec float64 `json:"req_per_sec"`
	TxPerSec  float64 `json:"tx_per_sec"`
	// Latency of the successful requests, and for batches of their
	// transactions (each has its request's latency; weighted by count).
	Latency   latencySummary  `json:"latency_ms"`
	TxLatency *latencySummary `json:"tx_latency_ms,omitempty"`
	// Errors counts failed requests by kind, and failed transactions inside
	// successful batch answers as batch_item_<code>.
	Errors map[string]int64 `json:"errors"`
	// The CPU use over the window; the nodes' with --local only.
	procstat.Usage
}

// latencySummary gives latencies in milliseconds.
type latencySummary struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

func summarize(cfg benchConfig, stats []*clientStats, elapsed time.Duration, cpu0, cpu1 procstat.Sample) *benchResult {
	res := &benchResult{
		System: "txlog", Client: cfg.client, Targets: cfg.targets, Clients: cfg.clients, ValueSize: cfg.valueSize,
		OpsPerTx: cfg.opsPerTx, Batch: cfg.batch, Ack: cfg.ack, Keys: cfg.keys,
		Seconds: elapsed.Seconds(), Errors: map[string]int64{},
	}
	var samples []reqSample
	for _, st := range stats {
		samples = append(samples, st.samples...)
		res.Committed += st.committed
		res.Pending += st.pending
		res.Rejected += st.rejected
		for k, n := range st.errors {
			res.Errors[k] += n
		}
	}
	res.Requests = int64(len(samples))
	res.Txs = res.Committed + res.Pending + res.Rejected
	if s := elapsed.Seconds(); s > 0 {
		res.ReqPerSec = float64(res.Requests) / s
		res.TxPerSec = float64(res.Txs) / s
	}
	res.Usage = procstat.NewUsage(cpu0, cpu1, elapsed, res.Requests, res.Txs)
	slices.SortFunc(samples, func(a, b reqSample) int { return int(a.lat - b.lat) })
	res.Latency = summarizeLatency(samples, func(reqSample) int64 { return 1 })
	if cfg.batch > 1 {
		tl := summarizeLatency(samples, func(s reqSample) int64 { return int64(s.txs) })
		res.TxLatency = &tl
	}
	return res
}

// summarizeLatency returns the percentiles of samples, sorted by latency, each
// counted weight times (nearest rank).
func summarizeLatency(samples []reqSample, weight func(reqSample) int64) latencySummary {
	var total int64
	var sum float64
	for _, s := range samples {
		w := weight(s)
		total += w
		sum += float64(w) * float64(s.lat)
	}
	if total == 0 {
		return latencySummary{}
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	at := func(p float64) float64 {
		rank := int64(p*float64(total) + 0.999999) // ceil, the nearest rank
		rank = max(rank, 1)
		var seen int64
		for _, s := range samples {
			seen += weight(s)
			if seen >= rank {
				return ms(s.lat)
			}
		}
		return ms(samples[len(samples)-1].lat)
	}
	return latencySummary{
		P50: at(0.50), P90: at(0.90), P99: at(0.99),
		Max: ms(samples[len(samples)-1].lat), Mean: sum / float64(total) / float64(time.Millisecond),
	}
}

// print writes res as text.
func (res *benchResult) print(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s bench: %d clients, %d targets, %.1fs, %d op/tx, %d-byte values, ack=%s, batch %d, %d keys\n",
		res.System, res.Clients, len(res.Targets), res.Seconds, res.OpsPerTx, res.ValueSize, res.Ack, res.Batch, res.Keys)
	fmt.Fprintf(&b, "throughput   %.0f tx/s  (%d tx: %d committed, %d pending, %d rejected)\n",
		res.TxPerSec, res.Txs, res.Committed, res.Pending, res.Rejected)
	if res.Batch > 1 {
		fmt.Fprintf(&b, "requests     %.0f req/s  (%d)\n", res.ReqPerSec, res.Requests)
	}
	l := res.Latency
	fmt.Fprintf(&b, "latency      p50 %.2fms  p90 %.2fms  p99 %.2fms  max %.2fms  mean %.2fms  (per request)\n",
		l.P50, l.P90, l.P99, l.Max, l.Mean)
	if t := res.TxLatency; t != nil {
		fmt.Fprintf(&b, "tx latency   p50 %.2fms  p90 %.2fms  p99 %.2fms  max %.2fms  (per transaction)\n",
			t.P50, t.P90, t.P99, t.Max)
	}
	if len(res.Errors) == 0 {
		b.WriteString("errors       none\n")
	} else {
		kinds := make([]string, 0, len(res.Errors))
		for k := range res.Errors {
			kinds = append(kinds, k)
		}
		slices.Sort(kinds)
		b.WriteString("errors      ")
		for _, k := range kinds {
			fmt.Fprintf(&b, " %s %d", k, res.Errors[k])
		}
		b.WriteString("\n")
	}
	res.Usage.WriteText(&b)
	_, err := io.WriteString(w, b.String())
	return err
}
