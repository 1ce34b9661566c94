// Command streambench measures how txlog serves readers of its log (issue 33;
// docs/consuming.md, "Measurements"). Each part starts a fresh three-node
// cluster with the launcher, on a loopback address and HTTP ports chosen at
// the start, and finds its leader and followers.
//
//   - subscribers: -writers clients (default 64) each submit single-put
//     transactions to the leader in a closed loop (client.Submit, ack=quorum)
//     for -warmup and then -duration, once for each count of -subs in turn
//     (default 0,1,0,10,0,100,0): that many SSE subscribers of
//     GET /v1/log/stream, spread over the two followers, read from the tail
//     of the log. A run with subscribers is compared with the mean of its
//     nearest baseline runs (0 subscribers) before and after it, so that
//     drift of the machine weighs on both. For each run it prints the
//     writers' committed transactions per second, that fraction, and the
//     delay from commit to delivery: for every transaction answered
//     committed in the measured window and every subscriber, the time the
//     subscriber read the entry's event minus the time the writer read the
//     200 answer (both clocks of this process). It is negative when a
//     follower delivered the entry before the leader's answer reached the
//     writer. The delay from the writer sending the request to the delivery
//     is printed next to it. The subscribers read only the events' ids,
//     without decoding the entries, so that they take little CPU from the
//     nodes on the same machine; the writers', subscribers' (this process)
//     and nodes' CPU use over the window is printed with each run.
//   - catchup: -catchup-n transactions (default 1,000,000) are written in
//     batches (client.SubmitBatch, -catchup-batch per request, -catchup-writers
//     requests in flight), and once the followers have applied them all,
//     readers read the whole log on a follower, from offset 0 to the last
//     entry, one after the other: a consumer.Consumer (a group's consumer, a
//     no-op Handler, batches of 1000, an offset commit per batch), the stream
//     (client.Follow, which decodes every entry) and the paged GET /v1/log
//     (client.LogWait, limit 1000). It prints the entries per second of each.
//
// scripts/stream-bench.sh builds the binaries and runs it. The full-size
// measurement (about 6 minutes: the subscribers part 3 to 4, the catchup
// part 2 to 3):
//
//	scripts/stream-bench.sh
//	# which runs, after building:
//	streambench -txlogd BIN -dir DIR -parts subscribers,catchup \
//	    -subs 0,1,0,10,0,100,0 -writers 64 -warmup 5s -duration 20s \
//	    -catchup-n 1000000
//
// A quick look: DURATION=3s WARMUP=1s SUBS=0,1,0,10,0 CATCHUP_N=20000
// scripts/stream-bench.sh. Run it on a quiet machine: the numbers are
// throughputs and latencies, and the load generator shares the machine's CPUs
// with the nodes.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/launcher"
	"github.com/txlog/txlog/tools/internal/command"
	"github.com/txlog/txlog/tools/internal/servers"
)

// maxSubscribers bounds a count of -subs.
const maxSubscribers = 10_000

type config struct {
	txlogd, dir    string
	parts          []string
	subs           []int
	writers        int
	warmup, dur    time.Duration
	valueBytes     int
	keys           int
	settle         time.Duration
	catchupN       int
	catchupBatch   int
	catchupWriters int
	readers        []string
}

func main() { command.Main("streambench", run) }

func run(ctx context.Context, args []string, out, logw io.Writer) error {
	fs := flag.NewFlagSet("streambench", flag.ContinueOnError)
	var cfg config
	fs.StringVar(&cfg.txlogd, "txlogd", "", "txlogd binary (required)")
	fs.StringVar(&cfg.dir, "dir", "", "directory of the clusters (required)")
	parts := fs.String("parts", "subscribers,catchup", "the parts to run")
	subs := fs.String("subs", "0,1,0,10,0,100,0", "subscribers: the subscriber count of each run, in order; 0 is a baseline")
	fs.IntVar(&cfg.writers, "writers", 64, "subscribers: writing clients, each with one transaction in flight")
	fs.DurationVar(&cfg.warmup, "warmup", 5*time.Second, "subscribers: unmeasured time at the start of each run")
	fs.DurationVar(&cfg.dur, "duration", 20*time.Second, "subscribers: measured time of each run")
	fs.IntVar(&cfg.valueBytes, "value-bytes", 256, "bytes of each value as stored: a JSON string, quotes included")
	fs.IntVar(&cfg.keys, "keys", 10_000, "keys the writers put, round robin")
	fs.DurationVar(&cfg.settle, "settle", 30*time.Second, "subscribers: how long, after the writers stop, the subscribers may take to read the last entry")
	fs.IntVar(&cfg.catchupN, "catchup-n", 1_000_000, "catchup: transactions in the log")
	fs.IntVar(&cfg.catchupBatch, "catchup-batch", 1000, "catchup: transactions per POST /v1/tx/batch")
	fs.IntVar(&cfg.catchupWriters, "catchup-writers", 4, "catchup: batches in flight")
	readers := fs.String("readers", "consumer,stream,log", "catchup: the readers, in order")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var errs []error
	if cfg.txlogd == "" || cfg.dir == "" {
		errs = append(errs, errors.New("-txlogd and -dir are required"))
	}
	for _, p := range strings.Split(*parts, ",") {
		p = strings.TrimSpace(p)
		if p != "subscribers" && p != "catchup" {
			errs = append(errs, fmt.Errorf("-parts: unknown part %q (subscribers, catchup)", p))
		}
		cfg.parts = append(cfg.parts, p)
	}
	for _, r := range strings.Split(*readers, ",") {
		r = strings.TrimSpace(r)
		if r != "consumer" && r != "stream" && r != "log" {
			errs = append(errs, fmt.Errorf("-readers: unknown reader %q (consumer, stream, log)", r))
		}
		cfg.readers = append(cfg.readers, r)
	}
	var err error
	if slices.Contains(cfg.parts, "subscribers") {
		if cfg.subs, err = parseCounts(*subs, maxSubscribers); err != nil {
			errs = append(errs, fmt.Errorf("-subs: %w", err))
		}
	}
	if cfg.writers < 1 || cfg.warmup < 0 || cfg.dur <= 0 || cfg.settle <= 0 || cfg.valueBytes < 2 || cfg.keys < 1 {
		errs = append(errs, errors.New("-writers and -keys must be at least 1, -value-bytes at least 2, -duration and -settle above 0, -warmup not negative"))
	}
	if cfg.catchupN < 1 || cfg.catchupBatch < 1 || cfg.catchupBatch > 10_000 || cfg.catchupWriters < 1 {
		errs = append(errs, errors.New("-catchup-n and -catchup-writers must be at least 1, -catchup-batch from 1 to 10000"))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, p := range cfg.parts {
		b, err := startBench(ctx, cfg, p, out, logw)
		if err != nil {
			return err
		}
		switch p {
		case "subscribers":
			err = b.subscribers(ctx)
		case "catchup":
			err = b.catchup(ctx)
		}
		b.close(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return nil
}

// bench is one part's cluster.
type bench struct {
	cfg       config
	cl        *launcher.Cluster
	leader    string   // the leader's URL
	followers []string // the followers' URLs
	out, log  io.Writer
}

// startBench starts a fresh cluster for part in its own directory and waits
// until it is ready and has a leader.
func startBench(ctx context.Context, cfg config, part string, out, logw io.Writer) (*bench, error) {
	// Fixed HTTP ports: the clients made at the start reach every node to the
	// end.
	cl, err := servers.StartTxlog(ctx, cfg.txlogd, filepath.Join(cfg.dir, part))
	if err != nil {
		return nil, err
	}
	b := &bench{cfg: cfg, cl: cl, out: out, log: logw}
	leader, err := servers.WaitTxlog(ctx, cl)
	if err != nil {
		b.close(ctx)
		return nil, err
	}
	for _, p := range cl.Nodes() {
		if p.ID() == leader {
			b.leader = cl.URL(p.ID())
		} else {
			b.followers = append(b.followers, cl.URL(p.ID()))
		}
	}
	if b.leader == "" || len(b.followers) == 0 {
		b.close(ctx)
		return nil, fmt.Errorf("leader %q, followers %q: want a leader and a follower", b.leader, b.followers)
	}
	fmt.Fprintf(logw, "%s: cluster in %s, leader %s, followers %s\n", part, cl.Dir(), b.leader, strings.Join(b.followers, " "))
	return b, nil
}

func (b *bench) close(ctx context.Context) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := b.cl.Close(sctx); err != nil {
		fmt.Fprintf(b.log, "stop the cluster: %v\n", err)
	}
}

// client returns a client whose first endpoint is first, then the others.
func (b *bench) client(first string) *client.Client {
	eps := []string{first}
	for _, u := range append([]string{b.leader}, b.followers...) {
		if u != first {
			eps = append(eps, u)
		}
	}
	return client.NewClient(client.ClientConfig{Endpoints: eps, AttemptTimeout: 5 * time.Second, MaxBackoff: 250 * time.Millisecond})
}

// stillLeader tells whether the leader is the one the part started with.
func (b *bench) stillLeader(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	id, err := b.cl.Leader(ctx)
	return err == nil && b.cl.URL(id) == b.leader
}

// jsonString returns a JSON string of n bytes, quotes included.
func jsonString(n int) []byte {
	v := make([]byte, n)
	for i := range v {
		v[i] = 'a' + byte(i%26)
	}
	v[0], v[n-1] = '"', '"'
	return v
}
