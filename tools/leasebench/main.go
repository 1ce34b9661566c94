// Command leasebench measures txlog's leases (issue 32; docs/leases.md,
// "Measurements") on a fresh local three-node cluster, in three parts:
//
//   - latency: at one client, a plain write, an acquire and a renewal in
//     turn, --n times each; p50 and p99 of each.
//   - takeover: a holder (`txlog exclusive ... -- sleep`) is SIGTERMed or
//     SIGKILLed while a standby (a lease.Elector) campaigns; the time from
//     the signal until the standby holds the lease, median of --tries each.
//   - many leases: --leases leases held by --holders holders with --ttl,
//     renewed every TTL/3, while --writers plain clients write and the
//     leader is SIGKILLed --kills times; once without the leases and once
//     with them. It prints the leases lost although renewed in time (a
//     renewal refused while the last one that succeeded was sent less than
//     TTL - skew ago: the target is 0), those lost because no renewal
//     committed within the TTL (by kind and second of the run, with the
//     first errors), the longest pause in the writers' commits at each kill,
//     and the writers' throughput with the leases as a fraction of the run
//     without. The nodes keep their HTTP ports across restarts, so the
//     clients made at the start reach every node to the end.
//
// scripts/lease-bench.sh builds the binaries and runs it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/launcher"
	"github.com/txlog/txlog/lease"
	"github.com/txlog/txlog/tools/internal/command"
	"github.com/txlog/txlog/tools/internal/servers"
)

// leaseClockSkew is node.LeaseClockSkew: how early a new leader may judge a
// lease expired.
const leaseClockSkew = 500 * time.Millisecond

type config struct {
	txlogd, txlog, dir string
	parts              []string
	n, tries           int
	ttl                time.Duration
	leases, holders    int
	kills, writers     int
	killInterval       time.Duration
}

func main() { command.Main("leasebench", run) }

func run(ctx context.Context, args []string, out, logw io.Writer) error {
	fs := flag.NewFlagSet("leasebench", flag.ContinueOnError)
	var cfg config
	fs.StringVar(&cfg.txlogd, "txlogd", "", "txlogd binary (required)")
	fs.StringVar(&cfg.txlog, "txlog", "", "txlog binary, for the takeover's holder (required with takeover)")
	fs.StringVar(&cfg.dir, "dir", "", "directory of the cluster (required)")
	parts := fs.String("parts", "latency,takeover,many", "the parts to run")
	fs.IntVar(&cfg.n, "n", 1000, "latency: samples of each operation")
	fs.IntVar(&cfg.tries, "tries", 20, "takeover: tries of each signal")
	fs.DurationVar(&cfg.ttl, "ttl", 5*time.Second, "the leases' TTL")
	fs.IntVar(&cfg.leases, "leases", 1000, "many: leases")
	fs.IntVar(&cfg.holders, "holders", 50, "many: holders (the leases are spread over them)")
	fs.IntVar(&cfg.kills, "kills", 10, "many: leader SIGKILLs in each run")
	fs.DurationVar(&cfg.killInterval, "kill-interval", 3*time.Second, "many: time between the recovery from one kill and the next")
	fs.IntVar(&cfg.writers, "writers", 8, "many: plain clients, each writing in a closed loop")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg.parts = strings.Split(*parts, ",")
	if cfg.txlogd == "" || cfg.dir == "" || slices.Contains(cfg.parts, "takeover") && cfg.txlog == "" {
		return errors.New("--txlogd and --dir are required, and --txlog with the takeover part")
	}
	// Fixed HTTP ports: a killed leader comes back where the holders' and
	// writers' clients look for it.
	cl, err := servers.StartTxlog(ctx, cfg.txlogd, filepath.Join(cfg.dir, "cluster"))
	if err != nil {
		return err
	}
	defer cl.Close(context.WithoutCancel(ctx))
	if _, err := servers.WaitTxlog(ctx, cl); err != nil {
		return err
	}
	b := &bench{cfg: cfg, cl: cl, out: out, log: logw}
	for _, p := range cfg.parts {
		switch strings.TrimSpace(p) {
		case "latency":
			err = b.latency(ctx)
		case "takeover":
			err = b.takeover(ctx)
		case "many":
			err = b.many(ctx)
		default:
			err = fmt.Errorf("unknown part %q", p)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

type bench struct {
	cfg config
	cl  *launcher.Cluster
	out io.Writer
	log io.Writer
}

// endpoints returns the nodes' URLs, the leader's first.
func (b *bench) endpoints(ctx context.Context) []string {
	leader, _ := b.cl.Leader(ctx)
	var eps []string
	for _, p := range b.cl.Nodes() {
		if p.ID() == leader {
			eps = append([]string{b.cl.URL(p.ID())}, eps...)
		} else {
			eps = append(eps, b.cl.URL(p.ID()))
		}
	}
	return eps
}

func (b *bench) client(ctx context.Context) *client.Client {
	return client.NewClient(client.ClientConfig{Endpoints: b.endpoints(ctx), AttemptTimeout: 2 * time.Second, MaxBackoff: 250 * time.Millisecond})
}

func put(key string) wire.TxRequest {
	return wire.TxRequest{Ops: []wire.Op{{Op: wire.OpPut, Key: key, Value: json.RawMessage("1")}}}
}

// latency measures a plain write, an acquire and a renewal in turn.
func (b *bench) latency(ctx context.Context) error {
	c := b.client(ctx)
	var wr, acq, ren []time.Duration
	for i := range b.cfg.n {
		t := time.Now()
		if _, err := c.Submit(ctx, put(fmt.Sprintf("bench/plain/%d", i%100)), wire.SubmitOptions{Ack: wire.AckQuorum}); err != nil {
			return fmt.Errorf("latency: write: %w", err)
		}
		wr = append(wr, time.Since(t))
		name := fmt.Sprintf("bench/latency/%d", i)
		t = time.Now()
		res, err := c.AcquireLease(ctx, name, "bench", b.cfg.ttl)
		if err != nil {
			return fmt.Errorf("latency: acquire: %w", err)
		}
		acq = append(acq, time.Since(t))
		t = time.Now()
		if _, err := c.RenewLease(ctx, name, "bench", res.Token, b.cfg.ttl); err != nil {
			return fmt.Errorf("latency: renew: %w", err)
		}
		ren = append(ren, time.Since(t))
		if err := c.ReleaseLease(ctx, name, "bench", res.Token); err != nil {
			return fmt.Errorf("latency: release: %w", err)
		}
	}
	fmt.Fprintf(b.out, "== latency at 1 client, %d of each, TTL %v\n%-8s %9s %9s\n", b.cfg.n, b.cfg.ttl, "op", "p50", "p99")
	for _, r := range []struct {
		name string
		d    []time.Duration
	}{{"write", wr}, {"acquire", acq}, {"renew", ren}} {
		fmt.Fprintf(b.out, "%-8s %9v %9v\n", r.name, pct(r.d, 50), pct(r.d, 99))
	}
	return nil
}

// pct returns the p-th percentile of d, rounded to 10µs.
func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)].Round(10 * time.Microsecond)
}

// takeover measures the standby's takeover after SIGTERM and SIGKILL of
// the holder.
func (b *bench) takeover(ctx context.Context) error {
	fmt.Fprintf(b.out, "== takeover by a standby, TTL %v, %d tries each\n%-8s %9s %9s %9s\n", b.cfg.ttl, b.cfg.tries, "signal", "median", "min", "max")
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		var ds []time.Duration
		for try := range b.cfg.tries {
			d, err := b.takeoverOnce(ctx, sig, try)
			if err != nil {
				return fmt.Errorf("takeover after %v, try %d: %w", sig, try, err)
			}
			fmt.Fprintf(b.log, "takeover after %s: %v\n", sigName(sig), d.Round(time.Millisecond))
			ds = append(ds, d)
		}
		slices.Sort(ds)
		fmt.Fprintf(b.out, "%-8s %9v %9v %9v\n", strings.TrimPrefix(sigName(sig), "SIG"), ds[len(ds)/2].Round(time.Millisecond),
			ds[0].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond))
	}
	return nil
}

func sigName(s syscall.Signal) string {
	if s == syscall.SIGTERM {
		return "SIGTERM"
	}
	return "SIGKILL"
}

func (b *bench) takeoverOnce(ctx context.Context, sig syscall.Signal, try int) (time.Duration, error) {
	name := fmt.Sprintf("bench/takeover/%s/%d", sigName(sig), try)
	eps := b.endpoints(ctx)
	holder := exec.Command(b.cfg.txlog, "exclusive", "--targets", strings.Join(eps, ","), "--lease", name,
		"--ttl", b.cfg.ttl.String(), "--holder", "holder", "--", "sleep", "3600")
	holder.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	holder.Stdout, holder.Stderr = b.log, b.log
	if err := holder.Start(); err != nil {
		return 0, err
	}
	exited := make(chan struct{})
	go func() { holder.Wait(); close(exited) }()
	defer func() {
		syscall.Kill(-holder.Process.Pid, syscall.SIGKILL) // the holder and its sleep
		<-exited
	}()
	c := client.NewClient(client.ClientConfig{Endpoints: eps, AttemptTimeout: 2 * time.Second, MaxBackoff: 250 * time.Millisecond})
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for {
		l, err := c.Lease(wctx, name, 0, 0)
		if err == nil && l.Holder == "holder" {
			break
		}
		if err := command.Sleep(wctx, 20*time.Millisecond); err != nil {
			return 0, fmt.Errorf("the holder never held the lease: %w", err)
		}
	}
	el, err := lease.New(lease.Config{Client: c, Name: name, Holder: "standby", TTL: b.cfg.ttl})
	if err != nil {
		return 0, err
	}
	got := make(chan error, 1)
	var at time.Time
	go func() {
		_, err := el.Campaign(wctx)
		at = time.Now()
		got <- err
	}()
	// Let the standby's acquire be refused and its long poll wait.
	if err := command.Sleep(wctx, 300*time.Millisecond); err != nil {
		return 0, err
	}
	start := time.Now()
	if sig == syscall.SIGKILL {
		syscall.Kill(-holder.Process.Pid, sig)
	} else {
		syscall.Kill(holder.Process.Pid, sig)
	}
	if err := <-got; err != nil {
		return 0, fmt.Errorf("the standby did not take over: %w", err)
	}
	d := at.Sub(start)
	return d, el.Resign(ctx)
}

// manyStats counts what the holders of the many-leases part saw.
type manyStats struct {
	grants, renewals, renewErrors atomic.Int64
	lostInTime, lostLate          atomic.Int64
	maxGap                        atomic.Int64    // ns between two renewals that succeeded
	start                         time.Time       // when the holders started
	pauses                        []time.Duration // per kill: the longest time between two writes' commits

	mu     sync.Mutex
	losses []loss // every lease lost, in the order seen
}

// loss is one lease lost by its holder.
type loss struct {
	at      time.Duration // since the holders started
	sinceOK time.Duration // since the last acquire or renewal that succeeded was sent
	kind    string        // "fenced in time", "fenced late", "no answer within the TTL"
	err     string
}

func (st *manyStats) lost(lastOK time.Time, kind string, err error) {
	now := time.Now()
	st.mu.Lock()
	st.losses = append(st.losses, loss{at: now.Sub(st.start), sinceOK: now.Sub(lastOK), kind: kind, err: err.Error()})
	st.mu.Unlock()
}

// many runs the writers under leader kills without leases and then with.
func (b *bench) many(ctx context.Context) error {
	fmt.Fprintf(b.out, "== %d leases held by %d holders, TTL %v renewed every %v, %d writers, %d leader kills a run\n",
		b.cfg.leases, b.cfg.holders, b.cfg.ttl, (b.cfg.ttl / 3).Round(time.Millisecond), b.cfg.writers, b.cfg.kills)
	base, baseSt, err := b.manyRun(ctx, false)
	if err != nil {
		return err
	}
	fmt.Fprintf(b.out, "without leases: %.0f writes/s\n", base)
	fmt.Fprintf(b.out, "  write pause per kill (no write committed): %s\n", durations(baseSt.pauses))
	with, st, err := b.manyRun(ctx, true)
	if err != nil {
		return err
	}
	fmt.Fprintf(b.out, "with leases:    %.0f writes/s, %.2f of the run without\n", with, with/base)
	fmt.Fprintf(b.out, "leases: %d grants, %d renewals (%d failed and retried); lost although renewed in time: %d; lost with no renewal committed within the TTL: %d; longest gap between renewals %v\n",
		st.grants.Load(), st.renewals.Load(), st.renewErrors.Load(), st.lostInTime.Load(), st.lostLate.Load(),
		time.Duration(st.maxGap.Load()).Round(time.Millisecond))
	fmt.Fprintf(b.out, "  write pause per kill (no write committed): %s\n", durations(st.pauses))
	printLosses(b.out, st)
	return nil
}

// manyRun runs the writers (and with leases, the holders) through the
// leader kills and returns the writers' committed writes per second.
func (b *bench) manyRun(ctx context.Context, withLeases bool) (float64, *manyStats, error) {
	if _, err := servers.WaitTxlog(ctx, b.cl); err != nil {
		return 0, nil, err
	}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	st := &manyStats{start: time.Now()}
	if withLeases {
		per := (b.cfg.leases + b.cfg.holders - 1) / b.cfg.holders
		for h := range b.cfg.holders {
			c := b.client(ctx)
			holder := fmt.Sprintf("holder-%d", h)
			for i := h * per; i < min((h+1)*per, b.cfg.leases); i++ {
				wg.Go(func() { b.hold(rctx, c, fmt.Sprintf("bench/many/%d", i), holder, st) })
			}
		}
		// Start measuring once every lease is held.
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		for st.grants.Load() < int64(b.cfg.leases) && command.Sleep(wctx, 50*time.Millisecond) == nil {
		}
		cancel()
	}
	// lastWrite is when the last write committed (Unix ns); pause the longest
	// time between two commits since the last kill.
	var ok, lastWrite, pause atomic.Int64
	counting := atomic.Bool{}
	counting.Store(true)
	for w := range b.cfg.writers {
		c := b.client(ctx)
		wg.Go(func() {
			for i := 0; rctx.Err() == nil; i++ {
				sctx, cancel := context.WithTimeout(rctx, 5*time.Second)
				_, err := c.Submit(sctx, put(fmt.Sprintf("bench/writer/%d/%d", w, i%64)), wire.SubmitOptions{Ack: wire.AckQuorum})
				cancel()
				if err == nil {
					now := time.Now().UnixNano()
					gap := now - lastWrite.Swap(now)
					for old := pause.Load(); gap > old && !pause.CompareAndSwap(old, gap); old = pause.Load() {
					}
					if counting.Load() {
						ok.Add(1)
					}
				}
			}
		})
	}
	start := time.Now()
	for k := range b.cfg.kills {
		if err := command.Sleep(ctx, b.cfg.killInterval); err != nil {
			return 0, nil, err
		}
		if k > 0 {
			st.pauses = append(st.pauses, time.Duration(pause.Load()))
		}
		pause.Store(0)
		if err := b.killLeader(ctx); err != nil {
			return 0, nil, fmt.Errorf("kill %d: %w", k+1, err)
		}
	}
	if err := command.Sleep(ctx, b.cfg.killInterval); err != nil {
		return 0, nil, err
	}
	if b.cfg.kills > 0 {
		st.pauses = append(st.pauses, time.Duration(pause.Load()))
	}
	counting.Store(false)
	elapsed := time.Since(start)
	n := ok.Load()
	stop()
	wg.Wait()
	return float64(n) / elapsed.Seconds(), st, nil
}

// killLeader SIGKILLs the leader, waits for another, restarts the old one
// and waits until every node is ready.
func (b *bench) killLeader(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	leader, err := b.cl.Leader(ctx)
	if err != nil {
		return err
	}
	if err := b.cl.Kill(leader); err != nil {
		return err
	}
	for {
		if l, err := b.cl.Leader(ctx); err == nil && l != leader {
			break
		}
		if err := command.Sleep(ctx, 50*time.Millisecond); err != nil {
			return fmt.Errorf("no new leader after killing %s: %w", leader, err)
		}
	}
	fmt.Fprintf(b.log, "killed leader %s\n", leader)
	if err := b.cl.Restart(ctx, leader); err != nil {
		return err
	}
	return b.cl.WaitReady(ctx)
}

// hold keeps one lease until ctx ends, renewing every TTL/3 and acquiring
// it again when it was lost, and counts what happened.
func (b *bench) hold(ctx context.Context, c *client.Client, name, holder string, st *manyStats) {
	ttl := b.cfg.ttl
	var token uint64
	var lastOK time.Time // when the last acquire or renewal that succeeded was sent
	for ctx.Err() == nil {
		sent := time.Now()
		if token == 0 {
			res, err := c.AcquireLease(ctx, name, holder, ttl)
			if err != nil {
				command.Sleep(ctx, 100*time.Millisecond)
				continue
			}
			token, lastOK = res.Token, sent
			st.grants.Add(1)
		} else {
			rctx, cancel := context.WithDeadline(ctx, lastOK.Add(ttl))
			_, err := c.RenewLease(rctx, name, holder, token, ttl)
			cancel()
			switch {
			case err == nil:
				gap := sent.Sub(lastOK)
				for old := st.maxGap.Load(); int64(gap) > old && !st.maxGap.CompareAndSwap(old, int64(gap)); old = st.maxGap.Load() {
				}
				lastOK = sent
				st.renewals.Add(1)
			case ctx.Err() != nil:
				return
			case errors.Is(err, wire.ErrFenced):
				if time.Now().Before(lastOK.Add(ttl - leaseClockSkew)) {
					st.lostInTime.Add(1)
					st.lost(lastOK, "fenced in time", err)
				} else {
					st.lostLate.Add(1)
					st.lost(lastOK, "fenced late", err)
				}
				token = 0
				continue
			default:
				st.renewErrors.Add(1)
				if !time.Now().Before(lastOK.Add(ttl)) {
					st.lostLate.Add(1) // the holder must assume it lost the lease
					st.lost(lastOK, "no answer within the TTL", err)
					token = 0
					continue
				}
				command.Sleep(ctx, 100*time.Millisecond)
				continue
			}
		}
		command.Sleep(ctx, time.Until(lastOK.Add(ttl/3)))
	}
	if token != 0 {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		c.ReleaseLease(rctx, name, holder, token)
		cancel()
	}
}

// printLosses sums the leases lost by kind and second of the run, and lists
// the first few with their errors.
func printLosses(w io.Writer, st *manyStats) {
	st.mu.Lock()
	defer st.mu.Unlock()
	bySecond := map[string]map[int]int{}
	for _, l := range st.losses {
		if bySecond[l.kind] == nil {
			bySecond[l.kind] = map[int]int{}
		}
		bySecond[l.kind][int(l.at/time.Second)]++
	}
	for _, kind := range slices.Sorted(maps.Keys(bySecond)) {
		secs := slices.Sorted(maps.Keys(bySecond[kind]))
		var parts []string
		for _, s := range secs {
			parts = append(parts, fmt.Sprintf("%ds:%d", s, bySecond[kind][s]))
		}
		fmt.Fprintf(w, "lost, %s, by second of the run: %s\n", kind, strings.Join(parts, " "))
	}
	for _, l := range st.losses[:min(len(st.losses), 5)] {
		fmt.Fprintf(w, "  lost at %v, %v after the last success, %s: %s\n", l.at.Round(time.Millisecond), l.sinceOK.Round(time.Millisecond), l.kind, l.err)
	}
}

func durations(ds []time.Duration) string {
	var parts []string
	for _, d := range ds {
		parts = append(parts, d.Round(10*time.Millisecond).String())
	}
	return strings.Join(parts, " ")
}
