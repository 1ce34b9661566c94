package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/chaos/procstat"
	"github.com/txlog/txlog/client"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// errorPause is a client's pause after a failed write.
const errorPause = 10 * time.Millisecond

// window is the measured part of a run: writes that start at or after from
// and end by until count.
type window struct {
	from, until time.Time
	stop        atomic.Bool // set once the run is over
}

// tally is what one client saw inside the window; each client owns its own.
type tally struct {
	lat    []time.Duration
	errors map[string]int64
}

// record counts one write that started and ended as given, with err nil for
// a write that succeeded.
func (t *tally) record(w *window, started, ended time.Time, err error) {
	if started.Before(w.from) || ended.After(w.until) {
		return
	}
	if err != nil {
		t.errors[errorKind(err)]++
		return
	}
	t.lat = append(t.lat, ended.Sub(started))
}

// errorKind names a failed write for the JSON summary.
func errorKind(err error) string {
	var we *wire.Error
	switch {
	case errors.As(err, &we):
		return we.Code
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return "timeout"
	}
	return "error"
}

// writeFunc sends client i's next write and waits for its answer.
type writeFunc func(ctx context.Context, i int, seq uint64) error

// loader drives one system: it either has a write for closed-loop clients or
// runs each client's loop itself (nats-async).
type loader struct {
	write writeFunc
	loop  func(ctx context.Context, i int, w *window, t *tally)
	close func()
}

// newLoader connects to the cluster's targets as cfg.system's usual Go
// client does.
func newLoader(cfg config, targets []string) (*loader, error) {
	value := make([]byte, cfg.valueSize)
	for i := range value {
		value[i] = 'a' + byte(i%26)
	}
	switch cfg.system {
	case systemNATS, systemNATSAsync:
		return natsLoader(cfg, targets, value)
	case systemEtcd:
		// One clientv3 client shared by every goroutine, balancing over
		// all three members as it does by default.
		cli, err := clientv3.New(clientv3.Config{Endpoints: targets, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return nil, err
		}
		rngs := perClientRand(cfg.clients)
		val := string(value)
		return &loader{
			write: func(ctx context.Context, i int, _ uint64) error {
				ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
				defer cancel()
				_, err := cli.Put(ctx, key(rngs[i].IntN(cfg.keys)), val)
				return err
			},
			close: func() { cli.Close() },
		}, nil
	case systemTxlogStream, systemTxlogAsync:
		// One client.Client shared by every goroutine, as a program holds
		// one: it writes over its streams to the leader.
		c := client.NewClient(client.ClientConfig{Endpoints: targets, Timeout: cfg.timeout, MaxAsyncPending: cfg.inflight})
		rngs := perClientRand(cfg.clients)
		jsonValue := json.RawMessage(strconv.Quote(string(value)))
		run := strconv.FormatUint(rand.Uint64()%(1<<40), 36)
		tx := func(i int, seq uint64) wire.TxRequest {
			return wire.TxRequest{
				IdempotencyKey: fmt.Sprintf("cmp-%s-%d-%d", run, i, seq),
				Ops:            []wire.Op{{Op: wire.OpPut, Key: key(rngs[i].IntN(cfg.keys)), Value: jsonValue}},
			}
		}
		opts := wire.SubmitOptions{Ack: wire.AckQuorum}
		l := &loader{close: func() { c.Close() }}
		if cfg.system == systemTxlogStream {
			l.write = func(ctx context.Context, i int, seq uint64) error {
				return committed(c.Submit(ctx, tx(i, seq), opts))
			}
			return l, nil
		}
		l.loop = pipelined(cfg, func(ctx context.Context, i int, seq uint64) (future, error) {
			f := c.SubmitAsync(ctx, tx(i, seq), opts)
			return func(ctx context.Context, timeout <-chan time.Time) error {
				select {
				case <-f.Done():
					return committed(f.Result())
				case <-timeout:
					return context.DeadlineExceeded
				case <-ctx.Done():
					return ctx.Err()
				}
			}, nil
		})
		return l, nil
	case systemTxlogHTTP:
		return httpLoader(cfg, targets, value)
	}
	return nil, fmt.Errorf("unknown system %q", cfg.system)
}

// httpLoader posts each write to /v1/tx with Go's net/http, client i
// starting at node i and going round the nodes, as a program in any language
// would without txlog's client.
func httpLoader(cfg config, targets []string, value []byte) (*loader, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = cfg.clients
	tr.MaxIdleConns = cfg.clients * len(targets)
	tr.DisableCompression = true
	hc := &http.Client{Transport: tr, Timeout: cfg.timeout}
	rngs := perClientRand(cfg.clients)
	run := strconv.FormatUint(rand.Uint64()%(1<<40), 36)
	quoted := strconv.Quote(string(value))
	next := make([]int, cfg.clients)
	for i := range next {
		next[i] = i % len(targets)
	}
	return &loader{
		write: func(ctx context.Context, i int, seq uint64) error {
			body := fmt.Appendf(nil, `{"idempotency_key":"cmp-%s-%d-%d","ops":[{"op":"put","key":%q,"value":%s}]}`,
				run, i, seq, key(rngs[i].IntN(cfg.keys)), quoted)
			url := targets[next[i]] + "/v1/tx?ack=quorum"
			next[i] = (next[i] + 1) % len(targets)
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
			if err != nil {
				return err
			}
			req.Header.Set("Content-Type", "application/json")
			res, err := hc.Do(req)
			if err != nil {
				return err
			}
			answer, err := io.ReadAll(res.Body)
			res.Body.Close()
			if err == nil && res.StatusCode != http.StatusOK {
				err = fmt.Errorf("status %d: %.200s", res.StatusCode, answer)
			}
			return err
		},
		close: tr.CloseIdleConnections,
	}, nil
}

// natsLoader publishes to the JetStream stream over one connection to the
// first server, shared by every goroutine: js.Publish (nats), or
// js.PublishAsync with cfg.inflight publishes in flight in all (nats-async,
// see pipelined).
func natsLoader(cfg config, targets []string, value []byte) (*loader, error) {
	nc, err := nats.Connect(targets[0], nats.Timeout(5*time.Second))
	if err != nil {
		return nil, err
	}
	js, err := nc.JetStream(nats.PublishAsyncMaxPending(cfg.inflight))
	if err != nil {
		nc.Close()
		return nil, err
	}
	l := &loader{close: nc.Close}
	if cfg.system == systemNATS {
		l.write = func(ctx context.Context, _ int, _ uint64) error {
			ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
			defer cancel()
			_, err := js.Publish(natsSubject, value, nats.Context(ctx))
			return err
		}
		return l, nil
	}
	l.loop = pipelined(cfg, func(context.Context, int, uint64) (future, error) {
		f, err := js.PublishAsync(natsSubject, value)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, timeout <-chan time.Time) error {
			select {
			case <-f.Ok():
				return nil
			case err := <-f.Err():
				return err
			case <-timeout:
				return nats.ErrTimeout
			case <-ctx.Done():
				return ctx.Err()
			}
		}, nil
	})
	return l, nil
}

// future waits for the answer to one asynchronous write, until timeout
// fires or ctx ends.
type future func(ctx context.Context, timeout <-chan time.Time) error

// pipelined returns the loop of a client that keeps its share of
// cfg.inflight asynchronous writes in flight (at least one) and waits for
// the oldest: a log acknowledges in order, so the oldest is the next to
// resolve. send starts client i's next write.
func pipelined(cfg config, send func(ctx context.Context, i int, seq uint64) (future, error)) func(context.Context, int, *window, *tally) {
	share := max(1, cfg.inflight/cfg.clients)
	return func(ctx context.Context, i int, w *window, t *tally) {
		type pending struct {
			f       future
			started time.Time
		}
		var q []pending
		var seq uint64
		timer := time.NewTimer(cfg.timeout)
		defer timer.Stop()
		for {
			for !w.stop.Load() && ctx.Err() == nil && len(q) < share {
				started := time.Now()
				f, err := send(ctx, i, seq)
				seq++
				if err != nil {
					t.record(w, started, time.Now(), err)
					pause(ctx)
					continue
				}
				q = append(q, pending{f, started})
			}
			if len(q) == 0 {
				return
			}
			p := q[0]
			q = q[1:]
			timer.Reset(max(time.Until(p.started.Add(cfg.timeout)), 0))
			err := p.f(ctx, timer.C)
			t.record(w, p.started, time.Now(), err)
		}
	}
}

// committed returns err, or an error for a transaction that was not
// committed.
func committed(res wire.TxResult, err error) error {
	if err == nil && res.Status != wire.StatusCommitted {
		err = fmt.Errorf("status %s", res.Status)
	}
	return err
}

// pause waits errorPause or until ctx ends.
func pause(ctx context.Context) {
	select {
	case <-time.After(errorPause):
	case <-ctx.Done():
	}
}

// perClientRand returns one generator of key numbers per client.
func perClientRand(n int) []*rand.Rand {
	out := make([]*rand.Rand, n)
	for i := range out {
		out[i] = rand.New(rand.NewPCG(uint64(i), rand.Uint64()))
	}
	return out
}

// key returns the key with number k, as txlog bench names it.
func key(k int) string {
	return fmt.Sprintf("bench/%08d", k)
}

// result is one run's summary, printed as one JSON object.
type result struct {
	System     string           `json:"system"`
	Clients    int              `json:"clients"`
	ValueSize  int              `json:"value_size"`
	Seconds    float64          `json:"seconds"`
	Txs        int64            `json:"txs"`
	TxPerSec   float64          `json:"tx_per_sec"`
	P50ms      float64          `json:"p50_ms"`
	P99ms      float64          `json:"p99_ms"`
	Errors     map[string]int64 `json:"errors"`
	ServerCPU  *float64         `json:"server_cpu_us_per_tx,omitempty"`
	CPUError   string           `json:"server_cpu_error,omitempty"`
	ServerPIDs []int            `json:"server_pids,omitempty"`
	// ClientCPU is the load generator's own CPU per transaction, µs.
	ClientCPU *float64 `json:"client_cpu_us_per_tx,omitempty"`
}

// sampleCPU reads each PID's utime+stime from /proc/PID/stat; a process it
// cannot read is left out, which cpuPerTx reports.
func sampleCPU(pids []int) cpuSample {
	s := cpuSample{}
	for _, pid := range pids {
		user, sys, err := procstat.Times(strconv.Itoa(pid))
		if err == nil {
			s[pid] = user + sys
		}
	}
	return s
}

// runLoad runs cfg.clients clients against l for cfg.warmup and then
// cfg.duration, sampling the CPU time of pids at both ends of the window.
// A --cpuprofile covers the window only.
func runLoad(ctx context.Context, cfg config, l *loader, pids []int) (*result, error) {
	w := &window{from: time.Now().Add(cfg.warmup)}
	w.until = w.from.Add(cfg.duration)
	tallies := make([]*tally, cfg.clients)
	var wg sync.WaitGroup
	for i := range cfg.clients {
		t := &tally{errors: map[string]int64{}}
		tallies[i] = t
		wg.Go(func() {
			if l.loop != nil {
				l.loop(ctx, i, w, t)
				return
			}
			for seq := uint64(0); !w.stop.Load() && ctx.Err() == nil; seq++ {
				started := time.Now()
				err := l.write(ctx, i, seq)
				t.record(w, started, time.Now(), err)
				if err != nil {
					pause(ctx)
				}
			}
		})
	}
	sleepUntil(ctx, w.from)
	stopProfile, perr := startProfile(cfg.cpuProfile)
	cpu0, self0 := sampleCPU(pids), selfCPU()
	sleepUntil(ctx, w.until)
	cpu1, self1 := sampleCPU(pids), selfCPU()
	stopProfile()
	w.stop.Store(true)
	wg.Wait()
	if perr != nil {
		return nil, perr
	}

	res := &result{
		System: cfg.system, Clients: cfg.clients, ValueSize: cfg.valueSize,
		Seconds: cfg.duration.Seconds(), Errors: map[string]int64{}, ServerPIDs: pids,
	}
	var lat []time.Duration
	for _, t := range tallies {
		lat = append(lat, t.lat...)
		for k, n := range t.errors {
			res.Errors[k] += n
		}
	}
	res.Txs = int64(len(lat))
	res.TxPerSec = float64(res.Txs) / cfg.duration.Seconds()
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	if p, ok := percentile(lat, 0.5); ok {
		res.P50ms = ms(p)
	}
	if p, ok := percentile(lat, 0.99); ok {
		res.P99ms = ms(p)
	}
	if len(pids) > 0 {
		if c, err := cpuPerTx(cpu0, cpu1, res.Txs); err != nil {
			res.CPUError = err.Error()
		} else {
			res.ServerCPU = &c
		}
	}
	if res.Txs > 0 && self0 >= 0 && self1 >= self0 {
		c := float64(self1-self0) / float64(time.Microsecond) / float64(res.Txs)
		res.ClientCPU = &c
	}
	return res, nil
}

// selfCPU returns the load generator's utime+stime so far; -1 when
// getrusage fails.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// startProfile starts a CPU profile into path ("" for none) and returns
// what stops it.
func startProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return func() {}, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return func() {}, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// sleepUntil waits until t or until ctx ends.
func sleepUntil(ctx context.Context, t time.Time) {
	select {
	case <-time.After(time.Until(t)):
	case <-ctx.Done():
	}
}
