package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/txlog/txlog/chaos/procstat"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// errorPause is a client's pause after a failed request.
const errorPause = 10 * time.Millisecond

// sample is one successful request.
type sample struct {
	lat time.Duration
}

// clientStats is what one client saw in the measured window; each client owns
// its own.
type clientStats struct {
	samples []sample
	errors  map[string]int64
}

// benchRun is one run: its settings and shared counters.
type benchRun struct {
	cfg      config
	clis     []*clientv3.Client // one per target
	start    time.Time
	measured time.Time
	stopAt   time.Time // zero with --n
	stop     atomic.Bool
	claimed  atomic.Int64
	doneTxs  atomic.Int64 // progress, warmup included
	failed   atomic.Int64
}

func runBench(ctx context.Context, cfg config, progress io.Writer, nodePIDs func() []int) (*result, error) {
	r := &benchRun{cfg: cfg}
	for _, t := range cfg.targets {
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{t}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return nil, fmt.Errorf("connect %s: %w", t, err)
		}
		defer cli.Close()
		r.clis = append(r.clis, cli)
	}
	r.start = time.Now()
	r.measured = r.start.Add(cfg.warmup)
	if cfg.n == 0 {
		r.stopAt = r.measured.Add(cfg.duration)
	}
	stats := make([]*clientStats, cfg.clients)
	var wg sync.WaitGroup
	for i := range cfg.clients {
		stats[i] = &clientStats{errors: map[string]int64{}}
		wg.Go(func() { r.client(ctx, i, stats[i]) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var progressDone chan struct{}
	if progress != nil {
		progressDone = make(chan struct{})
		go func() { defer close(progressDone); r.report(progress, done) }()
	}

	select {
	case <-time.After(time.Until(r.measured)):
	case <-done:
	}
	cpu0 := procstat.TakeSample(nodePIDs)
	if cfg.n == 0 {
		select {
		case <-time.After(time.Until(r.stopAt)):
		case <-done:
		}
	} else {
		<-done
	}
	end := time.Now()
	cpu1 := procstat.TakeSample(nodePIDs)
	r.stop.Store(true)
	<-done
	if progressDone != nil {
		<-progressDone
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	elapsed := end.Sub(r.measured)
	if cfg.n == 0 {
		elapsed = cfg.duration
	}
	return summarize(cfg, stats, elapsed, cpu0, cpu1), nil
}

// client sends requests until the run stops.
func (r *benchRun) client(ctx context.Context, i int, st *clientStats) {
	rng := rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))
	value := make([]byte, r.cfg.valueSize)
	for j := range value {
		value[j] = 'a' + byte((j+i)%26)
	}
	val := string(value)
	target := i % len(r.clis)
	key := make([]byte, 0, 32)
	for !r.stop.Load() && ctx.Err() == nil {
		started := time.Now()
		inWindow := !started.Before(r.measured)
		if r.cfg.n > 0 && inWindow && r.claimed.Add(1) > r.cfg.n {
			return
		}
		cli := r.clis[target]
		target = (target + 1) % len(r.clis)
		rctx, cancel := context.WithTimeout(ctx, r.cfg.timeout)
		var err error
		if r.cfg.opsPerTx == 1 {
			key = appendKey(key[:0], rng.IntN(r.cfg.keys))
			_, err = cli.Put(rctx, string(key), val)
		} else {
			ops := make([]clientv3.Op, r.cfg.opsPerTx)
			for j := range ops {
				key = appendKey(key[:0], rng.IntN(r.cfg.keys))
				ops[j] = clientv3.OpPut(string(key), val)
			}
			_, err = cli.Txn(rctx).Then(ops...).Commit()
		}
		cancel()
		ended := time.Now()
		if err == nil {
			r.doneTxs.Add(1)
		} else {
			r.failed.Add(1)
		}
		if inWindow && (r.stopAt.IsZero() || !ended.After(r.stopAt)) && ctx.Err() == nil {
			if err != nil {
				st.errors[errorKind(err)]++
			} else {
				st.samples = append(st.samples, sample{lat: ended.Sub(started)})
			}
		}
		if err != nil {
			select {
			case <-time.After(errorPause):
			case <-ctx.Done():
			}
		}
	}
}

// appendKey appends the key with number k, as txlog bench names it.
func appendKey(b []byte, k int) []byte {
	b = append(b, "bench/"...)
	var d [20]byte
	s := strconv.AppendInt(d[:0], int64(k), 10)
	for range 8 - len(s) {
		b = append(b, '0')
	}
	return append(b, s...)
}

// errorKind names a failed request: client_timeout, or the gRPC code.
func errorKind(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "client_timeout"
	}
	if s, ok := status.FromError(err); ok && s.Code() != codes.Unknown {
		if s.Code() == codes.DeadlineExceeded {
			return "client_timeout"
		}
		return "grpc_" + strings.ToLower(s.Code().String())
	}
	return "error"
}

// report prints a progress line every interval until done is closed.
func (r *benchRun) report(w io.Writer, done <-chan struct{}) {
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
			phase := ""
			if now.Before(r.measured) {
				phase = " (warmup)"
			}
			fmt.Fprintf(w, "%6.1fs %10d tx %9.0f tx/s %6d failed requests%s\n",
				now.Sub(r.start).Seconds(), txs, float64(txs-last)/now.Sub(lastAt).Seconds(), failed, phase)
			last, lastAt = txs, now
		}
	}
}

// result is the summary of a run, with the JSON fields of txlog bench's.
type result struct {
	System    string           `json:"system"`
	Targets   []string         `json:"targets"`
	Clients   int              `json:"clients"`
	ValueSize int              `json:"value_size"`
	OpsPerTx  int              `json:"ops_per_tx"`
	Batch     int              `json:"batch"`
	Ack       string           `json:"ack"`
	Keys      int              `json:"keys"`
	Seconds   float64          `json:"seconds"`
	Requests  int64            `json:"requests"`
	Txs       int64            `json:"txs"`
	Committed int64            `json:"committed"`
	ReqPerSec float64          `json:"req_per_sec"`
	TxPerSec  float64          `json:"tx_per_sec"`
	Latency   latencySummary   `json:"latency_ms"`
	Errors    map[string]int64 `json:"errors"`
	// The CPU use over the window; the members' with --local only.
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

func summarize(cfg config, stats []*clientStats, elapsed time.Duration, cpu0, cpu1 procstat.Sample) *result {
	// An etcd Put answers once the member that took it has applied it after
	// a quorum stored it: txlog's ack=quorum.
	res := &result{
		System: "etcd", Targets: cfg.targets, Clients: cfg.clients, ValueSize: cfg.valueSize,
		OpsPerTx: cfg.opsPerTx, Batch: 1, Ack: "quorum", Keys: cfg.keys,
		Seconds: elapsed.Seconds(), Errors: map[string]int64{},
	}
	var lat []time.Duration
	for _, st := range stats {
		for _, s := range st.samples {
			lat = append(lat, s.lat)
		}
		for k, n := range st.errors {
			res.Errors[k] += n
		}
	}
	res.Requests = int64(len(lat))
	res.Txs, res.Committed = res.Requests, res.Requests
	if s := elapsed.Seconds(); s > 0 {
		res.ReqPerSec = float64(res.Requests) / s
		res.TxPerSec = res.ReqPerSec
	}
	res.Usage = procstat.NewUsage(cpu0, cpu1, elapsed, res.Requests, res.Txs)
	slices.Sort(lat)
	if len(lat) > 0 {
		ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
		at := func(p float64) float64 {
			rank := max(int(p*float64(len(lat))+0.999999), 1) // nearest rank
			return ms(lat[rank-1])
		}
		var sum time.Duration
		for _, d := range lat {
			sum += d
		}
		res.Latency = latencySummary{P50: at(0.5), P90: at(0.9), P99: at(0.99), Max: ms(lat[len(lat)-1]), Mean: ms(sum) / float64(len(lat))}
	}
	return res
}

// print writes res as text, in txlog bench's layout.
func (res *result) print(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s bench: %d clients, %d targets, %.1fs, %d op/tx, %d-byte values, %d keys\n",
		res.System, res.Clients, len(res.Targets), res.Seconds, res.OpsPerTx, res.ValueSize, res.Keys)
	fmt.Fprintf(&b, "throughput   %.0f tx/s  (%d tx)\n", res.TxPerSec, res.Txs)
	l := res.Latency
	fmt.Fprintf(&b, "latency      p50 %.2fms  p90 %.2fms  p99 %.2fms  max %.2fms  mean %.2fms  (per request)\n",
		l.P50, l.P90, l.P99, l.Max, l.Mean)
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
