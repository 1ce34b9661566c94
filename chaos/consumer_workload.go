package chaos

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/consumer"
)

// ConsumerConfig describes the consumer workload: Consumers processes
// (ConsumerProcConfig), all of one group, project the clients' committed
// writes exactly once, beside the clients and under the faults; the
// pause-consumer fault SIGSTOPs the one that holds the group's lease past
// its TTL. Zero values mean "use the default".
type ConsumerConfig struct {
	// Off leaves the consumer workload (and pause-consumer) out.
	Off bool
	// Command runs one consumer: the program and its leading arguments,
	// such as {"txlog", "chaos-consumer"}; ConsumerProcConfig.Args follow.
	// Without one the workload is off.
	Command []string
	// Consumers is the number of consumer processes, at least two.
	// Default 2.
	Consumers int
	// TTL is the group lease's TTL. Default 2s (DefaultLeaseTTL).
	TTL time.Duration
}

// DefaultConsumers is ConsumerConfig.Consumers' default.
const DefaultConsumers = 2

func (c ConsumerConfig) on() bool { return !c.Off && len(c.Command) > 0 }

func (c ConsumerConfig) withDefaults() ConsumerConfig {
	if c.Consumers == 0 {
		c.Consumers = DefaultConsumers
	}
	if c.TTL == 0 {
		c.TTL = DefaultLeaseTTL
	}
	return c
}

// Validate reports every problem with c.
func (c ConsumerConfig) Validate() error {
	if c.Off {
		return nil
	}
	var errs []error
	d := c.withDefaults()
	if d.Consumers < 2 {
		errs = append(errs, fmt.Errorf("%d consumers: want at least two", d.Consumers))
	}
	if d.TTL < wire.MinLeaseTTL || d.TTL > wire.MaxLeaseTTL {
		errs = append(errs, fmt.Errorf("consumer lease TTL %v: want %v to %v", d.TTL, wire.MinLeaseTTL, wire.MaxLeaseTTL))
	}
	return errors.Join(errs...)
}

// pauseHold is how long pause-consumer keeps its consumer stopped: past the
// TTL and the time another consumer needs to take over (leaseReplaceSlack).
func (c ConsumerConfig) pauseHold() time.Duration { return c.TTL + leaseReplaceSlack + time.Second }

// consumerReadEvery is the time between two rounds of offset reads.
const consumerReadEvery = 250 * time.Millisecond

// ConsumerPauseEvent is what the pause-consumer fault did: the consumer
// that held the group's lease with Token when it was SIGSTOPped
// (FaultEvent.Injected) and SIGCONTed (FaultEvent.Healed).
type ConsumerPauseEvent struct {
	Consumer string `json:"consumer"`
	Token    uint64 `json:"token"`
}

// consumerProc is one running consumer process.
type consumerProc struct {
	cfg  ConsumerProcConfig
	proc *child
}

// consumerWorkload is the consumers of one run and the reader of the
// group's offset.
type consumerWorkload struct {
	cfg        ConsumerConfig
	group      string
	sources    []string
	projection string
	procs      []*consumerProc
	client     *client.Client
	nodes      map[string]*client.Client // one per endpoint: who answered a read
	log        *slog.Logger

	stopReads context.CancelFunc
	readsDone chan struct{}
	mu        sync.Mutex
	reads     []OffsetRead
}

// startConsumerWorkload starts the consumers of group runID/consumers,
// projecting the writes of keys under sources, logging to
// dir/consumers/<id>.log and recording into dir/consumers/<id>.jsonl, and
// the reader of the group's offset.
func startConsumerWorkload(cfg ConsumerConfig, dir string, endpoints []string, runID string, sources []string, creds Credentials, log *slog.Logger) (*consumerWorkload, error) {
	cfg = cfg.withDefaults()
	dir = filepath.Join(dir, "consumers")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	w := &consumerWorkload{cfg: cfg, group: runID + "/consumers", sources: sources, projection: runID + "/projection", log: log,
		client: client.NewClient(creds.apply(client.ClientConfig{Endpoints: endpoints, Timeout: 5 * time.Second, MaxBackoff: 250 * time.Millisecond})),
		nodes:  map[string]*client.Client{}, readsDone: make(chan struct{})}
	for _, e := range endpoints {
		w.nodes[e] = client.NewClient(creds.apply(client.ClientConfig{Endpoints: []string{e}, Timeout: time.Second}))
	}
	for i := range cfg.Consumers {
		id := "k" + strconv.Itoa(i+1)
		pc := ConsumerProcConfig{Targets: endpoints, Group: w.group, ID: id, TTL: cfg.TTL, Sources: sources,
			Projection: w.projection, History: filepath.Join(dir, id+".jsonl"), Creds: creds}
		p, err := startChild(id, cfg.Command, pc.Args(), creds.env(), filepath.Join(dir, id+".log"))
		if err != nil {
			w.stop(context.Background())
			return nil, err
		}
		w.procs = append(w.procs, &consumerProc{cfg: pc, proc: p})
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.stopReads = cancel
	go func() {
		defer close(w.readsDone)
		for sleepCtx(ctx, consumerReadEvery) {
			for _, e := range endpoints {
				w.readOffset(ctx, e, w.nodes[e])
			}
		}
	}()
	return w, nil
}

// readOffset reads the group's offset once through c and records it; it
// returns the offset, 0 when the read failed.
func (w *consumerWorkload) readOffset(ctx context.Context, node string, c *client.Client) uint64 {
	g, err := c.Consumer(ctx, w.group)
	if err != nil || g.Lag == 0 {
		// No offset yet, no answer, or none to place: the offset's own
		// commit is applied after it, so a state that holds it has a lag.
		return 0
	}
	w.mu.Lock()
	w.reads = append(w.reads, OffsetRead{Node: node, Offset: g.Offset, Applied: g.Offset + g.Lag, At: time.Now()})
	w.mu.Unlock()
	return g.Offset
}

// stop stops the offset reader and SIGTERMs the consumers, waiting for
// them. Calling it twice is harmless.
func (w *consumerWorkload) stop(ctx context.Context) {
	if w.stopReads != nil {
		w.stopReads()
		<-w.readsDone
	}
	procs := make([]*child, len(w.procs))
	for i, c := range w.procs {
		procs[i] = c.proc
	}
	stopChildren(ctx, procs, w.log)
}

// pauseConsumer is the pause-consumer fault: it finds the holder of the
// group's lease (waiting up to timeout for one), SIGSTOPs it for pauseHold
// and SIGCONTs it.
func (w *consumerWorkload) pauseConsumer(ctx context.Context, ev *FaultEvent, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		l, err := w.client.Lease(lctx, consumer.LeaseName(w.group), 0, 0)
		cancel()
		if err == nil && l.Token != 0 && l.Remaining() >= w.cfg.TTL/2 {
			for _, c := range w.procs {
				if c.cfg.ID == l.Holder {
					ev.Nodes = []string{c.cfg.ID}
					ev.ConsumerPause = &ConsumerPauseEvent{Consumer: c.cfg.ID, Token: l.Token}
					return c.proc.pause(ctx, w.cfg.pauseHold(), ev)
				}
			}
		}
		if time.Now().After(deadline) || !sleepCtx(ctx, 100*time.Millisecond) {
			return errors.New("no consumer held the group's lease")
		}
	}
}

// ConsumerReport is the consumer workload's part of a report.
type ConsumerReport struct {
	Group      string         `json:"group"`
	Consumers  int            `json:"consumers"`
	TTL        time.Duration  `json:"ttl"`
	Stats      ConsumerStats  `json:"stats"`
	Batches    int            `json:"batches"`     // batches the consumers handed to their effects
	LateWrites int            `json:"late_writes"` // writes sent under a token after its term ended
	Pauses     int            `json:"pauses"`      // pause-consumer faults
	Spans      []ConsumerSpan `json:"spans"`
}

// ConsumerSpan is one consumer's term, as the report's timeline draws it:
// from its first batch under Token to its last.
type ConsumerSpan struct {
	Consumer string    `json:"consumer"`
	Token    uint64    `json:"token"`
	From     time.Time `json:"from"`
	To       time.Time `json:"to"`
}

// finish waits (up to timeout) for the group's offset to pass the last
// committed source entry of ref, reads the projection, stops the consumers,
// reads the log past ref (their last commits) and checks it all.
func (w *consumerWorkload) finish(ctx context.Context, ref []wire.LogEntry, events []FaultEvent, timeout time.Duration) (*ConsumerReport, CheckResult) {
	source := func(e wire.LogEntry) bool { return writesPrefix(e, w.sources) }
	var last, to uint64
	for _, e := range ref {
		to = max(to, e.Index)
		if e.Status == wire.StatusCommitted && source(e) {
			last = max(last, e.Index)
		}
	}
	var errs []error
	wctx, cancel := context.WithTimeout(ctx, timeout)
	var offset uint64
	for offset < last && sleepCtx(wctx, 100*time.Millisecond) {
		offset = max(offset, w.readOffset(wctx, "any", w.client))
	}
	cancel()
	if offset < last {
		errs = append(errs, fmt.Errorf("the group's offset read %d, not past the last source entry %d, after %v", offset, last, timeout))
	}
	proj, err := readProjection(ctx, w.client, w.projection, to)
	if err != nil {
		errs = append(errs, fmt.Errorf("read the projection: %w", err))
	}
	w.stop(context.WithoutCancel(ctx))
	log := ref
	for from := to + 1; ; {
		page, err := w.client.Log(ctx, from, 1000)
		if err != nil {
			errs = append(errs, fmt.Errorf("read the log past %d: %w", to, err))
			break
		}
		log = append(log, page.Entries...)
		if len(page.Entries) == 0 || page.Next <= from {
			break
		}
		from = page.Next
	}
	w.mu.Lock()
	reads := slices.Clone(w.reads)
	w.mu.Unlock()
	h := ConsumerHistory{Group: w.group, Lease: consumer.LeaseName(w.group), From: 1, To: to, Source: source, Projection: proj, Offsets: reads}
	res, st := checkConsumer(h, log)
	var batches []ConsumerBatchOp
	for _, c := range w.procs {
		b, err := readJSONLines[ConsumerBatchOp](c.cfg.History)
		if err != nil {
			errs = append(errs, err)
		}
		batches = append(batches, b...)
	}
	if len(batches) == 0 {
		errs = append(errs, errors.New("the consumers recorded no batch"))
	}
	for _, err := range errs {
		res.Pass = false
		res.Evidence = append(res.Evidence, err.Error())
	}
	rep := &ConsumerReport{Group: w.group, Consumers: len(w.procs), TTL: w.cfg.TTL, Stats: st, Spans: consumerSpans(batches)}
	for _, b := range batches {
		if b.Late {
			rep.LateWrites++
		} else {
			rep.Batches++
		}
	}
	for _, f := range events {
		if f.ConsumerPause != nil {
			rep.Pauses++
		}
	}
	return rep, res
}

// consumerSpans returns each consumer's terms from its batches, in order of
// their start.
func consumerSpans(batches []ConsumerBatchOp) []ConsumerSpan {
	type key struct {
		consumer string
		token    uint64
	}
	spans := map[key]*ConsumerSpan{}
	for _, b := range batches {
		if b.Late {
			continue
		}
		at := time.Unix(0, b.At)
		k := key{b.Consumer, b.Token}
		s := spans[k]
		if s == nil {
			s = &ConsumerSpan{Consumer: b.Consumer, Token: b.Token, From: at, To: at}
			spans[k] = s
		}
		if at.Before(s.From) {
			s.From = at
		}
		if at.After(s.To) {
			s.To = at
		}
	}
	out := make([]ConsumerSpan, 0, len(spans))
	for _, s := range spans {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b ConsumerSpan) int {
		return cmp.Or(a.From.Compare(b.From), cmp.Compare(a.Token, b.Token))
	})
	return out
}
