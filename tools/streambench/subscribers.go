package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/chaos/procstat"
	"github.com/txlog/txlog/tools/internal/command"
)

// written is one transaction a writer saw committed in the measured window.
type written struct {
	index          uint64
	sent, answered time.Duration // since the run's start
}

// subscriber is one reader of GET /v1/log/stream during a run.
type subscriber struct {
	base     string
	from     uint64
	arrivals []time.Duration // of entry from+i, since the run's start; 0: not seen
	last     atomic.Uint64   // the last index read
	ready    chan struct{}   // closed on the stream's first line
	err      error           // why it stopped, once done is closed
	done     chan struct{}
}

// runResult is what one run measured.
type runResult struct {
	subs                int
	tput                float64 // committed transactions a second in the window
	committed           int
	errors              int
	commitDelay         []time.Duration // delivery minus the writer's answer, every subscriber
	submitDelay         []time.Duration // delivery minus the writer's send
	undelivered         int             // (transaction, subscriber) pairs not delivered within -settle
	clientCPU, nodesCPU float64         // cores over the window
	steal               float64         // percent of the machine's CPU time
	leaderChanged       bool
}

// subscribers runs the writers once for each subscriber count and prints
// each run and the summary by count.
func (b *bench) subscribers(ctx context.Context) error {
	fmt.Fprintf(b.out, "== subscribers: %d writers (single-put transactions, %d-byte values, ack=quorum) to the leader, %v warmup + %v measured a run; subscribers of GET /v1/log/stream spread over %d followers\n",
		b.cfg.writers, b.cfg.valueBytes, b.cfg.warmup, b.cfg.dur, len(b.followers))
	fmt.Fprintln(b.out, "delay = the subscriber's read of the entry's event - the writer's read of the committed answer (p50/p99/max over every transaction committed in the window and every subscriber); from send = the same from the writer's send of the request")
	fmt.Fprintln(b.out, "vs.before = writes/s over the baseline run before (the summary compares with the baselines before and after); CPU in cores of this process and of the nodes, and the host's steal, over the window")
	fmt.Fprintf(b.out, "%4s %5s %9s %9s %28s %20s %11s %10s %7s %7s %6s\n",
		"run", "subs", "writes/s", "vs.before", "delay p50/p99/max", "from send p50/p99", "deliveries", "undeliv.", "cl.CPU", "nodeCPU", "steal")
	var results []runResult
	hc := &http.Client{Transport: streamTransport()}
	for i, k := range b.cfg.subs {
		r, err := b.runOnce(ctx, hc, k)
		if err != nil {
			return fmt.Errorf("run %d (%d subscribers): %w", i+1, k, err)
		}
		results = append(results, r)
		// The run's line comes now, its fraction against the baseline
		// before it only; the summary has the final ones.
		tputs := make([]float64, len(results))
		for j, r := range results {
			tputs[j] = r.tput
		}
		printRun(b.out, i+1, r, fractions(b.cfg.subs[:len(results)], tputs)[i])
		results[i].submitDelay = nil
	}
	tputs := make([]float64, len(results))
	for j, r := range results {
		tputs[j] = r.tput
	}
	printSummary(b.out, b.cfg.subs, results, fractions(b.cfg.subs, tputs))
	return nil
}

func printRun(w io.Writer, n int, r runResult, f float64) {
	c, s := summarize(r.commitDelay), summarize(r.submitDelay)
	delay, fromSend := "-", "-"
	if r.subs > 0 {
		delay = ms(c.p50) + "/" + ms(c.p99) + "/" + ms(c.max)
		fromSend = ms(s.p50) + "/" + ms(s.p99)
	}
	note := ""
	if r.errors > 0 {
		note += fmt.Sprintf("  %d writes not answered committed", r.errors)
	}
	if c.negative > 0 {
		note += fmt.Sprintf("  %d deliveries before the answer", c.negative)
	}
	if r.leaderChanged {
		note += "  LEADER CHANGED"
	}
	fmt.Fprintf(w, "%4d %5d %9.0f %9s %28s %20s %11d %10d %7.2f %7.2f %5.1f%%%s\n",
		n, r.subs, r.tput, frac(f), delay, fromSend, c.n, r.undelivered, r.clientCPU, r.nodesCPU, r.steal, note)
}

// printSummary prints, by subscriber count, the mean fraction of its runs and
// the delays of all its runs together.
func printSummary(w io.Writer, subs []int, results []runResult, fr []float64) {
	fmt.Fprintln(w, "== fraction of each run with subscribers: its writes/s over the mean of its neighbouring baselines")
	for i, r := range results {
		if r.subs == 0 {
			continue
		}
		before, after := neighbours(subs, i)
		var base []string
		for _, j := range []int{before, after} {
			if j >= 0 {
				base = append(base, fmt.Sprintf("run %d (%.0f/s)", j+1, results[j].tput))
			}
		}
		fmt.Fprintf(w, "run %d, %d subscribers: %.0f/s, %s of %s\n", i+1, r.subs, r.tput, frac(fr[i]), strings.Join(base, " and "))
	}
	fmt.Fprintf(w, "== by subscriber count (fraction: each run against the mean of its neighbouring baselines, then the mean over runs)\n%5s %5s %9s %9s %9s %9s %9s %11s\n",
		"subs", "runs", "writes/s", "fraction", "p50", "p99", "max", "undeliv.")
	var counts []int
	for _, k := range subs {
		if !containsInt(counts, k) {
			counts = append(counts, k)
		}
	}
	for _, k := range counts {
		var tput, fsum float64
		var nf, runs, undeliv int
		var d []time.Duration
		for i, r := range results {
			if r.subs != k {
				continue
			}
			runs++
			tput += r.tput
			undeliv += r.undelivered
			d = append(d, r.commitDelay...)
			if f := fr[i]; f == f { // not NaN
				fsum += f
				nf++
			}
		}
		f := "-"
		if nf > 0 {
			f = frac(fsum / float64(nf))
		}
		if k == 0 {
			fmt.Fprintf(w, "%5d %5d %9.0f %9s %9s %9s %9s %11s\n", k, runs, tput/float64(runs), f, "-", "-", "-", "-")
			continue
		}
		s := summarize(d)
		fmt.Fprintf(w, "%5d %5d %9.0f %9s %9s %9s %9s %11d\n", k, runs, tput/float64(runs), f, ms(s.p50), ms(s.p99), ms(s.max), undeliv)
	}
}

func containsInt(s []int, k int) bool {
	for _, v := range s {
		if v == k {
			return true
		}
	}
	return false
}

// streamTransport is the subscribers' transport: one connection a stream.
func streamTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 0
	t.MaxIdleConnsPerHost = maxSubscribers
	t.DisableCompression = true
	return t
}

// runOnce is one run with k subscribers.
func (b *bench) runOnce(ctx context.Context, hc *http.Client, k int) (runResult, error) {
	r := runResult{subs: k}
	// The tail of the log: one write's index.
	c := b.client(b.leader)
	value := jsonString(b.cfg.valueBytes)
	res, err := c.Submit(ctx, put("streambench/start", value), wire.SubmitOptions{Ack: wire.AckQuorum})
	if err != nil {
		return r, fmt.Errorf("the first write: %w", err)
	}
	from := res.Index + 1

	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	subs := make([]*subscriber, k)
	for i := range subs {
		s := &subscriber{base: b.followers[i%len(b.followers)], from: from, ready: make(chan struct{}), done: make(chan struct{})}
		subs[i] = s
		go s.run(rctx, hc, start)
	}
	for _, s := range subs {
		select {
		case <-s.ready:
		case <-s.done:
			return r, fmt.Errorf("subscriber of %s: %w", s.base, s.err)
		case <-time.After(30 * time.Second):
			return r, fmt.Errorf("subscriber of %s: no answer in 30s", s.base)
		}
	}

	// The writers.
	wctx, stopWriters := context.WithCancel(rctx)
	defer stopWriters()
	measured := time.Since(start) + b.cfg.warmup
	end := measured + b.cfg.dur
	recs := make([][]written, b.cfg.writers)
	failed := make([]int, b.cfg.writers)
	var wg sync.WaitGroup
	for w := range b.cfg.writers {
		wc := b.client(b.leader)
		wg.Go(func() {
			for i := w; wctx.Err() == nil; i += b.cfg.writers {
				sent := time.Since(start)
				res, err := wc.Submit(wctx, put(fmt.Sprintf("streambench/%06d", i%b.cfg.keys), value), wire.SubmitOptions{Ack: wire.AckQuorum})
				answered := time.Since(start)
				if answered < measured || answered >= end {
					continue
				}
				if err != nil || res.Status != wire.StatusCommitted {
					if wctx.Err() == nil {
						failed[w]++
					}
					continue
				}
				recs[w] = append(recs[w], written{index: res.Index, sent: sent, answered: answered})
			}
		})
	}
	pids := func() []int {
		var p []int
		for _, n := range b.cl.Nodes() {
			p = append(p, n.PID())
		}
		return p
	}
	if err := command.Sleep(ctx, time.Until(start.Add(measured))); err != nil {
		return r, err
	}
	cpu0 := procstat.TakeSample(pids)
	if err := command.Sleep(ctx, time.Until(start.Add(end))); err != nil {
		return r, err
	}
	cpu1 := procstat.TakeSample(pids)
	stopWriters()
	wg.Wait()
	secs := b.cfg.dur.Seconds()
	r.clientCPU = (cpu1.Self - cpu0.Self).Seconds() / secs
	if cpu0.NodesOK && cpu1.NodesOK {
		r.nodesCPU = (cpu1.Nodes - cpu0.Nodes).Seconds() / secs
	}
	if steal, _, ok := procstat.MachineShare(cpu0, cpu1); ok {
		r.steal = steal
	}

	var all []written
	var top uint64
	for w := range recs {
		all = append(all, recs[w]...)
		r.errors += failed[w]
		for _, x := range recs[w] {
			top = max(top, x.index)
		}
	}
	r.committed = len(all)
	r.tput = float64(len(all)) / secs

	// Let the subscribers read up to the last transaction of the window.
	settle := time.Now().Add(b.cfg.settle)
	for _, s := range subs {
		for s.last.Load() < top && time.Now().Before(settle) {
			select {
			case <-s.done:
				return r, fmt.Errorf("subscriber of %s: %w", s.base, s.err)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	cancel()
	for _, s := range subs {
		<-s.done
		for _, x := range all {
			i := x.index - s.from
			if x.index < s.from || i >= uint64(len(s.arrivals)) || s.arrivals[i] == 0 {
				r.undelivered++
				continue
			}
			r.commitDelay = append(r.commitDelay, s.arrivals[i]-x.answered)
			r.submitDelay = append(r.submitDelay, s.arrivals[i]-x.sent)
		}
		s.arrivals = nil
	}
	r.leaderChanged = !b.stillLeader(ctx)
	return r, nil
}

func put(key string, value []byte) wire.TxRequest {
	return wire.TxRequest{Ops: []wire.Op{{Op: wire.OpPut, Key: key, Value: json.RawMessage(value)}}}
}

// run reads the stream from s.from until ctx ends, recording when each entry
// arrives. It does not reconnect: a stream that breaks ends the run.
func (s *subscriber) run(ctx context.Context, hc *http.Client, start time.Time) {
	defer close(s.done)
	err := s.read(ctx, hc, start)
	if ctx.Err() != nil {
		err = nil
	}
	s.err = err
}

func (s *subscriber) read(ctx context.Context, hc *http.Client, start time.Time) error {
	u := s.base + wire.LogStreamPath + "?from=" + strconv.FormatUint(s.from, 10)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return fmt.Errorf("GET %s: %d %s", u, resp.StatusCode, body)
	}
	var once sync.Once
	err = readIDs(resp.Body, func() { once.Do(func() { close(s.ready) }) }, func(id uint64) error {
		at := time.Since(start)
		if id < s.from {
			return fmt.Errorf("entry %d before from %d", id, s.from)
		}
		i := int(id - s.from)
		for len(s.arrivals) <= i {
			s.arrivals = append(s.arrivals, 0)
		}
		s.arrivals[i] = at
		s.last.Store(id)
		return nil
	})
	if err == nil {
		err = errors.New("the server ended the stream")
	}
	return err
}
