// Command alertbench measures how long txlog's alerts take to reach a
// webhook after the leader dies (issue 34; docs/operations.md, "Alerts"). It
// starts a fresh local three-node cluster with --alert-webhook pointing at an
// HTTP receiver of its own (both on 127.0.0.1, ports chosen at run time),
// then --tries times: waits for a stable leader and no alert firing,
// SIGKILLs the leader, and times from the signal until the receiver gets
// each alert the rules send: TxlogLeaderChanged (from the new leader) and,
// when the election outlasts --no-leader-for, TxlogNoLeader. It restarts the
// killed node and waits until the cluster is ready and every alert that
// fired is resolved. It prints each try, the median, min and max arrival per
// alert, and the copies of each alert per try: the rules send exactly one
// firing and one resolved per alert per cluster, so more are duplicates.
//
// --leader-changed-for (txlogd's --alert-leader-changed-for, default 1m
// there) only sets how long TxlogLeaderChanged stays firing, that is how long
// each try waits for its resolved; it does not change when it fires.
//
// scripts/alert-bench.sh builds the binaries and runs it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/txlog/txlog/alert"
	"github.com/txlog/txlog/launcher"
	"github.com/txlog/txlog/tools/internal/command"
)

type config struct {
	txlogd, dir      string
	tries            int
	noLeaderFor      time.Duration
	leaderChangedFor time.Duration
	stable, quiet    time.Duration
	timeout          time.Duration
}

func main() {
	command.Main("alertbench", func(ctx context.Context, args []string, stdout, _ io.Writer) error {
		return run(ctx, args, stdout)
	})
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("alertbench", flag.ContinueOnError)
	var cfg config
	fs.StringVar(&cfg.txlogd, "txlogd", "", "txlogd binary (required)")
	fs.StringVar(&cfg.dir, "dir", "", "directory of the cluster (required)")
	fs.IntVar(&cfg.tries, "tries", 10, "leader SIGKILLs")
	fs.DurationVar(&cfg.noLeaderFor, "no-leader-for", 5*time.Second, "the nodes' --alert-no-leader-for")
	fs.DurationVar(&cfg.leaderChangedFor, "leader-changed-for", 10*time.Second, "the nodes' --alert-leader-changed-for: how long TxlogLeaderChanged fires before it resolves")
	fs.DurationVar(&cfg.stable, "stable", 2*time.Second, "how long the leader must stay the same before a kill")
	fs.DurationVar(&cfg.quiet, "quiet", 0, "after the alerts of a try resolved, how long to wait for late copies (0: --no-leader-for plus 2s)")
	fs.DurationVar(&cfg.timeout, "timeout", 2*time.Minute, "bound of each wait (an alert's arrival, the cluster settling)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cfg.txlogd == "" || cfg.dir == "" || cfg.tries < 1 {
		return errors.New("--txlogd and --dir are required, --tries at least 1")
	}
	if cfg.quiet == 0 {
		cfg.quiet = cfg.noLeaderFor + 2*time.Second
	}

	rec := &receiver{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: rec, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	url := "http://" + ln.Addr().String() + "/alerts"

	cl, err := launcher.StartCluster(ctx, launcher.ClusterConfig{
		Bin: cfg.txlogd, Dir: filepath.Join(cfg.dir, "cluster"), Host: "127.0.0.1",
		ExtraArgs: []string{"--alert-webhook", url, "--alert-no-leader-for", cfg.noLeaderFor.String(),
			"--alert-leader-changed-for", cfg.leaderChangedFor.String()},
	})
	if err != nil {
		return err
	}
	defer cl.Close(context.WithoutCancel(ctx))
	b := &bench{cfg: cfg, cl: cl, rec: rec, out: out}
	fmt.Fprintf(out, "== %d leader SIGKILLs, 3 nodes, --alert-no-leader-for %v, --alert-leader-changed-for %v\n",
		cfg.tries, cfg.noLeaderFor, cfg.leaderChangedFor)
	var tries []try
	for i := range cfg.tries {
		t, err := b.once(ctx, i+1)
		if err != nil {
			return fmt.Errorf("try %d: %w", i+1, err)
		}
		tries = append(tries, t)
		t.print(out)
	}
	summarize(out, tries)
	return nil
}

// arrival is one event as the receiver got it.
type arrival struct {
	alert.Event
	at time.Time
}

// receiver is the webhook: it records every event with its arrival time.
type receiver struct {
	mu     sync.Mutex
	events []arrival
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	at := time.Now()
	var e alert.Event
	if err := json.NewDecoder(io.LimitReader(req.Body, 1<<20)).Decode(&e); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.events = append(r.events, arrival{e, at})
	r.mu.Unlock()
}

// since returns the events from index i on.
func (r *receiver) since(i int) []arrival {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events[min(i, len(r.events)):])
}

func (r *receiver) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// firing returns the alert keys (name and labels) whose last event so far
// is a firing one.
func (r *receiver) firing() []string {
	last := map[string]string{}
	for _, a := range r.since(0) {
		last[key(a.Event)] = a.Status
	}
	var open []string
	for k, st := range last {
		if st == alert.Firing {
			open = append(open, k)
		}
	}
	slices.Sort(open)
	return open
}

func key(e alert.Event) string {
	var ls []string
	for _, k := range slices.Sorted(maps.Keys(e.Labels)) {
		ls = append(ls, k+"="+e.Labels[k])
	}
	return e.Alert + "{" + strings.Join(ls, ",") + "}"
}

type bench struct {
	cfg config
	cl  *launcher.Cluster
	rec *receiver
	out io.Writer
}

// try is what one kill brought: the events from the kill until the cluster
// settled again.
type try struct {
	n              int
	killed, leader string
	killAt         time.Time
	elected        time.Duration // until the launcher saw every live node agree on a new leader
	events         []arrival
}

// settle waits until every live node is ready, agrees on a leader that stays
// the same for cfg.stable, and no alert is firing; it returns the leader.
func (b *bench) settle(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, b.cfg.timeout)
	defer cancel()
	if err := b.cl.WaitReady(ctx); err != nil {
		return "", err
	}
	var leader string
	since := time.Now()
	err := launcher.Poll(ctx, 100*time.Millisecond, func(ctx context.Context) error {
		l, err := b.cl.Leader(ctx)
		if err != nil {
			return err
		}
		if l != leader {
			leader, since = l, time.Now()
		}
		if open := b.rec.firing(); len(open) > 0 {
			return fmt.Errorf("still firing: %s", strings.Join(open, " "))
		}
		if d := time.Since(since); d < b.cfg.stable {
			return fmt.Errorf("leader %s for %v only", leader, d.Round(time.Millisecond))
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("settle: %w", err)
	}
	return leader, nil
}

func (b *bench) once(ctx context.Context, n int) (try, error) {
	t := try{n: n}
	leader, err := b.settle(ctx)
	if err != nil {
		return t, err
	}
	from := b.rec.len()
	t.killed, t.killAt = leader, time.Now()
	if err := b.cl.Kill(leader); err != nil {
		return t, err
	}
	wctx, cancel := context.WithTimeout(ctx, b.cfg.timeout)
	defer cancel()
	err = launcher.Poll(wctx, 20*time.Millisecond, func(ctx context.Context) error {
		l, err := b.cl.Leader(ctx)
		if err != nil {
			return err
		}
		if l == leader {
			return errors.New("the killed leader still named")
		}
		t.leader, t.elected = l, time.Since(t.killAt)
		return nil
	})
	if err != nil {
		return t, fmt.Errorf("no new leader after killing %s: %w", leader, err)
	}
	err = launcher.Poll(wctx, 20*time.Millisecond, func(context.Context) error {
		for _, a := range b.rec.since(from) {
			if a.Alert == alert.LeaderChanged && a.Status == alert.Firing {
				return nil
			}
		}
		return errors.New("no " + alert.LeaderChanged)
	})
	if err != nil {
		return t, fmt.Errorf("after killing %s: %w; got %v", leader, err, b.rec.since(from))
	}
	if err := b.cl.Restart(wctx, leader); err != nil {
		return t, err
	}
	if _, err := b.settle(ctx); err != nil {
		return t, err
	}
	// Late copies: a node that stayed leaderless past the threshold, or a
	// retried POST.
	if err := command.Sleep(ctx, b.cfg.quiet); err != nil {
		return t, err
	}
	t.events = b.rec.since(from)
	return t, nil
}

func (t try) print(w io.Writer) {
	fmt.Fprintf(w, "try %2d: killed %s, leader %s after %v (launcher)\n", t.n, t.killed, t.leader, ms(t.elected))
	for _, a := range t.events {
		fmt.Fprintf(w, "  %-22s %-8s from %-3s  +%-8v (since +%v) %s\n", a.Alert, a.Status, a.Node,
			ms(a.at.Sub(t.killAt)), ms(a.Since.Sub(t.killAt)), labels(a.Labels))
	}
}

func labels(m map[string]string) string {
	var ls []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		ls = append(ls, k+"="+m[k])
	}
	return strings.Join(ls, " ")
}

// summarize prints per alert the arrival of its first firing copy after the
// kill (median, min, max over the tries it fired in) and its copies.
func summarize(w io.Writer, tries []try) {
	names := map[string]bool{alert.LeaderChanged: true, alert.NoLeader: true}
	for _, t := range tries {
		for _, a := range t.events {
			names[a.Alert] = true
		}
	}
	var elected []time.Duration
	for _, t := range tries {
		elected = append(elected, t.elected)
	}
	fmt.Fprintf(w, "== summary of %d tries (time after the SIGKILL)\n", len(tries))
	fmt.Fprintf(w, "%-24s %6s %9s %9s %9s  %s\n", "", "tries", "median", "min", "max", "copies per try (firing/resolved)")
	fmt.Fprintf(w, "%-24s %6d %9v %9v %9v\n", "new leader (launcher)", len(tries), ms(median(elected)), ms(slices.Min(elected)), ms(slices.Max(elected)))
	for _, name := range slices.Sorted(maps.Keys(names)) {
		var arr, det []time.Duration
		var copies []string
		dups := 0
		for _, t := range tries {
			f, r := 0, 0
			for _, a := range t.events {
				if a.Alert != name {
					continue
				}
				if a.Status == alert.Firing {
					if f == 0 {
						arr = append(arr, a.at.Sub(t.killAt))
						det = append(det, a.Since.Sub(t.killAt))
					}
					f++
				} else {
					r++
				}
			}
			dups += max(f-1, 0) + max(r-1, 0)
			copies = append(copies, fmt.Sprintf("%d/%d", f, r))
		}
		if len(arr) == 0 {
			fmt.Fprintf(w, "%-24s %6s %9s %9s %9s  %s (never sent)\n", name, "0", "-", "-", "-", strings.Join(copies, " "))
			continue
		}
		fmt.Fprintf(w, "%-24s %6d %9v %9v %9v  %s; duplicates %d\n", name, len(arr), ms(median(arr)), ms(slices.Min(arr)), ms(slices.Max(arr)), strings.Join(copies, " "), dups)
		fmt.Fprintf(w, "%-24s %6s %9v %9v %9v  (the rule's since: when the node saw it)\n", "", "", ms(median(det)), ms(slices.Min(det)), ms(slices.Max(det)))
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func ms(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
