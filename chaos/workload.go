package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/txid"
)

// WorkloadConfig describes the clients of a run. Zero values mean "use the default".
type WorkloadConfig struct {
	// Clients is the number of concurrent clients. Default 8.
	Clients int
	// Rate is the operations per second of all clients together. Default 40.
	Rate float64
	// Keys is the number of keys that blind puts and some reads use. Default 64.
	Keys int
	// HotKeys is the number of keys that read-modify-write chains contend on.
	// Default 4.
	HotKeys int
	// SubmitTimeout bounds one client.Client call, its own retries included.
	// Default 6s.
	SubmitTimeout time.Duration
	// RetryFor is how long a client keeps resubmitting a write whose outcome is
	// open, with the same idempotency key, before it leaves it indeterminate.
	// Default 20s.
	RetryFor time.Duration
	// Acks is the mix of ack levels of writes, each with its share.
	// Default: ParseAcks(DefaultAcks).
	Acks []AckWeight
	// Client is how the clients write: ClientHTTP (each client its own
	// client.Client, writing with POST /v1/tx) or ClientStream (one
	// client.Client shared by every client, writing over its write streams,
	// to the leader). Default ClientHTTP.
	Client string
}

// The ways the clients write (WorkloadConfig.Client).
const (
	ClientHTTP   = "http"
	ClientStream = "stream"
)

// Defaults of WorkloadConfig.
const (
	DefaultClients       = 8
	DefaultRate          = 40
	DefaultKeys          = 64
	DefaultHotKeys       = 4
	DefaultSubmitTimeout = 6 * time.Second
	DefaultRetryFor      = 20 * time.Second
)

func (c WorkloadConfig) withDefaults() WorkloadConfig {
	if c.Clients == 0 {
		c.Clients = DefaultClients
	}
	if c.Rate == 0 {
		c.Rate = DefaultRate
	}
	if c.Keys == 0 {
		c.Keys = DefaultKeys
	}
	if c.HotKeys == 0 {
		c.HotKeys = DefaultHotKeys
	}
	if c.SubmitTimeout == 0 {
		c.SubmitTimeout = DefaultSubmitTimeout
	}
	if c.RetryFor == 0 {
		c.RetryFor = DefaultRetryFor
	}
	if len(c.Acks) == 0 {
		c.Acks, _ = ParseAcks(DefaultAcks)
	}
	if c.Client == "" {
		c.Client = ClientHTTP
	}
	// Draw in one order whatever the caller's, so that a mix draws the same
	// levels under a seed however it was written.
	c.Acks = slices.Clone(c.Acks)
	slices.SortStableFunc(c.Acks, func(a, b AckWeight) int {
		return slices.Index(allAcks, a.Ack) - slices.Index(allAcks, b.Ack)
	})
	return c
}

// Validate reports every out-of-range field.
func (c WorkloadConfig) Validate() error {
	var errs []error
	if c.Clients < 0 || c.Clients > 1000 {
		errs = append(errs, fmt.Errorf("Clients %d: want 1..1000", c.Clients))
	}
	if c.Rate < 0 || c.Rate > 10000 {
		errs = append(errs, fmt.Errorf("Rate %v: want more than 0 and at most 10000 per second", c.Rate))
	}
	if c.Keys < 0 {
		errs = append(errs, fmt.Errorf("Keys %d: want at least 1", c.Keys))
	}
	if c.HotKeys < 0 {
		errs = append(errs, fmt.Errorf("HotKeys %d: want at least 1", c.HotKeys))
	}
	if c.SubmitTimeout < 0 || c.RetryFor < 0 {
		errs = append(errs, fmt.Errorf("SubmitTimeout %v, RetryFor %v: must not be negative", c.SubmitTimeout, c.RetryFor))
	}
	if c.Client != "" && c.Client != ClientHTTP && c.Client != ClientStream {
		errs = append(errs, fmt.Errorf("Client %q: want %s or %s", c.Client, ClientHTTP, ClientStream))
	}
	seen := map[string]bool{}
	for i, a := range c.Acks {
		if !slices.Contains(allAcks, a.Ack) {
			errs = append(errs, fmt.Errorf("Acks[%d]: unknown ack %q (known: %s)", i, a.Ack, strings.Join(allAcks, ", ")))
		}
		if a.Weight < 1 || a.Weight > 1000 {
			errs = append(errs, fmt.Errorf("Acks[%d]: ack %q weight %d, want 1..1000", i, a.Ack, a.Weight))
		}
		if seen[a.Ack] {
			errs = append(errs, fmt.Errorf("Acks[%d]: ack %q given twice", i, a.Ack))
		}
		seen[a.Ack] = true
	}
	return errors.Join(errs...)
}

// AckWeight is an ack level of writes (wire.AckQuorum, wire.AckAll or
// wire.AckAccepted) and its share of the writes: Weight out of the sum of the
// mix's weights.
type AckWeight struct {
	Ack    string `json:"ack"`
	Weight int    `json:"weight"`
}

// DefaultAcks is the mix of ack levels when none is given: 55% quorum, 15% all,
// 30% accepted.
const DefaultAcks = "quorum*55,all*15,accepted*30"

// allAcks lists the ack levels in the order a client's draw walks them.
var allAcks = []string{wire.AckAll, wire.AckAccepted, wire.AckQuorum}

// ParseAcks parses a comma-separated list of ack levels, each optionally with
// a weight (default 1): "quorum*3,all" gives three quorum writes to one all.
func ParseAcks(s string) ([]AckWeight, error) {
	var out []AckWeight
	seen := map[string]bool{}
	errs := parseWeighted(s, "ack", func(name string, weight int) error {
		if !slices.Contains(allAcks, name) {
			return fmt.Errorf("unknown ack %q (known: %s)", name, strings.Join(allAcks, ", "))
		}
		if seen[name] {
			return fmt.Errorf("ack %q given twice", name)
		}
		seen[name] = true
		out = append(out, AckWeight{name, weight})
		return nil
	})
	if len(out) == 0 && len(errs) == 0 {
		errs = append(errs, errors.New("no ack levels given"))
	}
	return out, errors.Join(errs...)
}

// FormatAcks writes a mix as ParseAcks reads it.
func FormatAcks(acks []AckWeight) string {
	s := make([]string, len(acks))
	for i, a := range acks {
		s[i] = a.Ack + "*" + strconv.Itoa(a.Weight)
	}
	return strings.Join(s, ",")
}

// The mix of a client's operations, in percent.
const (
	pctPut  = 40 // blind put on a key of Keys
	pctCAS  = 35 // read a hot key, then put with if_version
	pctRead = 25 // linearizable read of a hot key (two in three) or another key
)

// serverTimeout is the timeout a client asks the server for on each write.
const serverTimeout = 2 * time.Second

// resolveWait is the wait of each GET /v1/tx/{txid} that resolves a 202.
const resolveWait = 5 * time.Second

// resolvers is the number of goroutines that resolve 202 answers during the run.
const resolvers = 4

// workload runs the clients of one run and records their operations.
type workload struct {
	cfg       WorkloadConfig
	endpoints []string
	seed      uint64
	runID     string      // prefixes keys and idempotency keys, so runs never meet
	creds     Credentials // of every client
	hist      *History
	pending   chan *Op       // 202 answers to resolve; closed by run
	shared    *client.Client // with ClientStream: the one client of every client; set by run

	ops, errs, unknown atomic.Int64
}

func newWorkload(cfg WorkloadConfig, endpoints []string, seed uint64, runID string) *workload {
	return &workload{
		cfg:       cfg,
		endpoints: endpoints,
		seed:      seed,
		runID:     runID,
		hist:      &History{},
		pending:   make(chan *Op, 1<<16),
	}
}

func (w *workload) hotKey(i int) string  { return w.runID + "/hot/" + strconv.Itoa(i) }
func (w *workload) coldKey(i int) string { return w.runID + "/k/" + strconv.Itoa(i) }

// keyPrefixes are the prefixes of every key the clients write: the consumer
// workload projects those writes.
func (w *workload) keyPrefixes() []string { return []string{w.runID + "/hot/", w.runID + "/k/"} }

// run starts the clients, which issue operations until issue ends and finish
// the one in flight within drain; it returns when they all stopped. The
// resolvers of 202 answers run until resolve ends.
func (w *workload) run(issue, drain, resolve context.Context) {
	var wg, rwg sync.WaitGroup
	if w.cfg.Client == ClientStream {
		w.shared = client.NewClient(w.clientConfig(w.endpoints))
		defer w.shared.Close()
	}
	for range resolvers {
		rwg.Go(func() { w.resolveLoop(resolve) })
	}
	for i := range w.cfg.Clients {
		wg.Go(func() { w.client(issue, drain, i) })
	}
	wg.Wait()
	close(w.pending)
	rwg.Wait()
}

// newClient returns the client.Client of client i: the shared one with
// ClientStream, else one of its own that starts at endpoint i.
func (w *workload) newClient(i int) *client.Client {
	if w.shared != nil {
		return w.shared
	}
	n := len(w.endpoints)
	eps := append(append([]string(nil), w.endpoints[i%n:]...), w.endpoints[:i%n]...)
	return client.NewClient(w.clientConfig(eps))
}

// clientConfig is the configuration of the clients' client.Client.
func (w *workload) clientConfig(endpoints []string) client.ClientConfig {
	return w.creds.apply(client.ClientConfig{
		Endpoints:      endpoints,
		Timeout:        w.cfg.SubmitTimeout,
		AttemptTimeout: 3 * time.Second,
		MaxBackoff:     250 * time.Millisecond,
		LookupWait:     time.Second,
		HTTPWrites:     w.cfg.Client != ClientStream,
	})
}

// client issues operations at its share of the rate until issue ends.
func (w *workload) client(issue, drain context.Context, i int) {
	rng := rand.New(rand.NewPCG(w.seed, uint64(i)+1))
	c := w.newClient(i)
	interval := time.Duration(float64(time.Second) * float64(w.cfg.Clients) / w.cfg.Rate)
	// Spread the clients' first operations over one interval.
	next := time.Now().Add(time.Duration(rng.Int64N(int64(interval) + 1)))
	var seq int64
	for {
		t := time.NewTimer(time.Until(next))
		select {
		case <-issue.Done():
			t.Stop()
			return
		case <-t.C:
		}
		next = next.Add(interval)
		if now := time.Now(); next.Before(now) {
			next = now // behind: do not burst to catch up
		}
		seq++
		switch p := rng.IntN(100); {
		case p < pctPut:
			w.write(drain, c, i, seq, OpPut, w.coldKey(rng.IntN(w.cfg.Keys)), 0, w.ackLevel(rng))
		case p < pctPut+pctCAS:
			key := w.hotKey(rng.IntN(w.cfg.HotKeys))
			r := w.read(drain, c, i, key)
			if r.Answer == AnswerOK || r.Answer == AnswerNotFound {
				w.write(drain, c, i, seq, OpCAS, key, r.Result.Version, w.ackLevel(rng))
			}
		default:
			key := w.hotKey(rng.IntN(w.cfg.HotKeys))
			if rng.IntN(3) == 0 {
				key = w.coldKey(rng.IntN(w.cfg.Keys))
			}
			w.read(drain, c, i, key)
		}
	}
}

// ackLevel draws the ack level of a write from the mix, whose weights
// withDefaults put in the order of allAcks.
func (w *workload) ackLevel(rng *rand.Rand) string {
	total := 0
	for _, a := range w.cfg.Acks {
		total += a.Weight
	}
	p := rng.IntN(total)
	for _, a := range w.cfg.Acks {
		if p < a.Weight {
			return a.Ack
		}
		p -= a.Weight
	}
	return wire.AckQuorum // not reached: p < total
}

// read does one linearizable read and records it.
func (w *workload) read(ctx context.Context, c *client.Client, client int, key string) Op {
	op := w.hist.Add(&Op{Client: client, Kind: OpRead, Key: key, Start: time.Now()})
	w.ops.Add(1)
	rctx, cancel := context.WithTimeout(ctx, w.cfg.SubmitTimeout)
	kv, err := c.Get(rctx, key, wire.ReadOptions{Consistency: wire.ConsistencyLinearizable})
	cancel()
	now := time.Now()
	var out Op
	w.hist.Update(op, func(op *Op) {
		op.Answered, op.End = now, now
		switch {
		case errors.Is(err, wire.ErrNotFound):
			op.Answer = AnswerNotFound
			op.Result = OpResult{Status: wire.StatusCommitted}
		case err != nil:
			op.Answer = AnswerFailed
			op.Result = OpResult{Status: AnswerFailed, Err: err.Error()}
		default:
			v, perr := strconv.ParseInt(string(kv.Value), 10, 64)
			if perr != nil {
				op.Answer = AnswerFailed
				op.Result = OpResult{Status: AnswerFailed, Err: fmt.Sprintf("value %q: %v", kv.Value, perr)}
				break
			}
			op.Answer = AnswerOK
			op.Result = OpResult{Status: wire.StatusCommitted, Version: kv.Version, Index: kv.Index, Found: true, ReadValue: v}
		}
		out = *op
	})
	if out.Answer == AnswerFailed {
		w.errs.Add(1)
	}
	return out
}

// write submits one put (or cas, with if_version ifVersion) and records it. On
// an open outcome it resubmits with the same idempotency key until it learns
// the outcome or RetryFor has passed.
func (w *workload) write(ctx context.Context, c *client.Client, client int, seq int64, kind OpKind, key string, ifVersion uint64, ack string) {
	value := int64(client+1)<<40 | seq
	idemKey := fmt.Sprintf("%s-%d-%d", w.runID, client, seq)
	apiOp := wire.Op{Op: wire.OpPut, Key: key, Value: json.RawMessage(strconv.FormatInt(value, 10))}
	if kind == OpCAS {
		apiOp.IfVersion = &ifVersion
	} else {
		ifVersion = 0
	}
	start := time.Now()
	op := w.hist.Add(&Op{
		Client: client, Kind: kind, Key: key, Value: value, IfVersion: ifVersion, Ack: ack,
		IdempotencyKey: idemKey, Start: start,
	})
	w.ops.Add(1)
	tx := wire.TxRequest{IdempotencyKey: idemKey, Ops: []wire.Op{apiOp}}
	giveUp := start.Add(w.cfg.RetryFor)
	for attempt := 0; ; attempt++ {
		sctx, cancel := context.WithTimeout(ctx, w.cfg.SubmitTimeout)
		res, err := c.Submit(sctx, tx, wire.SubmitOptions{Ack: ack, Timeout: serverTimeout})
		cancel()
		now := time.Now()
		if err == nil {
			var pending bool
			w.hist.Update(op, func(op *Op) { pending = settle(op, res, now, attempt) })
			if pending {
				select {
				case w.pending <- op:
				default: // the queue is full: the final phase resolves it
				}
			}
			return
		}
		badRequest := isBadInput(err)
		w.hist.Update(op, func(op *Op) {
			op.Retries = attempt
			if attempt == 0 {
				op.Answered, op.Answer = now, AnswerUnknown
				op.Result = OpResult{Status: wire.StatusUnknown, TxID: res.TxID, Err: err.Error()}
				if badRequest {
					op.Answer, op.Result.Status = AnswerFailed, AnswerFailed
				}
			}
			if res.TxID != 0 {
				op.Result.TxID = res.TxID
			}
		})
		if attempt == 0 {
			w.errs.Add(1)
		}
		if badRequest {
			return // refused as bad input: not done, and a retry would be refused too
		}
		if ctx.Err() != nil || time.Now().After(giveUp) {
			w.unknown.Add(1)
			return // indeterminate: the final log decides
		}
	}
}

// isBadInput reports whether err is a 4xx refusal of the request itself, which
// promises that nothing was done and that a retry would be refused too.
func isBadInput(err error) bool {
	e, ok := errors.AsType[*wire.Error](err)
	if !ok {
		return false
	}
	switch e.Code {
	case wire.CodeBadRequest, wire.CodeInvalidJSON, wire.CodeInvalidUTF8, wire.CodeInvalidTx,
		wire.CodeInvalidParam, wire.CodePayloadTooLarge, wire.CodeMethodNotAllowed:
		return true
	}
	return false
}

// settle records a write's answer; called under the history's lock. It
// reports whether the answer was 202, which leaves the outcome to resolve.
func settle(op *Op, res wire.TxResult, now time.Time, attempt int) (pending bool) {
	op.Retries = attempt
	if attempt == 0 {
		op.Answered = now
		switch res.Status {
		case wire.StatusCommitted:
			op.Answer = AnswerOK
		case wire.StatusRejected:
			op.Answer = AnswerRejected
		case wire.StatusPending:
			op.Answer = AnswerPending
		default:
			op.Answer = AnswerUnknown
		}
	}
	op.Result = resultOf(op, res)
	switch res.Status {
	case wire.StatusCommitted, wire.StatusRejected:
		op.End = now
	case wire.StatusPending:
		op.Accepted = true
		return true
	}
	return false
}

// resultOf turns a TxResult about op into an OpResult.
func resultOf(op *Op, res wire.TxResult) OpResult {
	r := OpResult{Status: res.Status, TxID: res.TxID, Index: res.Index, Version: res.Versions[op.Key]}
	if res.Conflict != nil {
		r.Actual = res.Conflict.Actual
	}
	return r
}

// resolveLoop resolves 202 answers by txid until resolve ends.
func (w *workload) resolveLoop(ctx context.Context) {
	c := client.NewClient(w.creds.apply(client.ClientConfig{Endpoints: w.endpoints, Timeout: resolveWait + 5*time.Second, MaxBackoff: 250 * time.Millisecond}))
	for op := range w.pending {
		w.resolve(ctx, c, op)
	}
}

// resolve polls GET /v1/tx/{txid}?wait until op is committed or rejected, or
// ctx ends.
func (w *workload) resolve(ctx context.Context, c *client.Client, op *Op) bool {
	var id txid.ID
	w.hist.Update(op, func(op *Op) { id = op.Result.TxID })
	for ctx.Err() == nil {
		res, err := c.Tx(ctx, id, resolveWait)
		if err == nil && (res.Status == wire.StatusCommitted || res.Status == wire.StatusRejected) {
			now := time.Now()
			w.hist.Update(op, func(op *Op) {
				op.Result = resultOf(op, res)
				op.End = now
			})
			return true
		}
		if err != nil && ctx.Err() == nil {
			// A node that is down or not ready yet: back off briefly.
			t := time.NewTimer(200 * time.Millisecond)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
		}
	}
	return false
}

// unresolved returns the ops answered 202 (on any attempt) that have no final
// outcome yet.
func (w *workload) unresolved() []*Op {
	w.hist.mu.Lock()
	defer w.hist.mu.Unlock()
	var out []*Op
	for _, op := range w.hist.ops {
		if op.Result.Status == wire.StatusPending && op.End.IsZero() {
			out = append(out, op)
		}
	}
	return out
}
