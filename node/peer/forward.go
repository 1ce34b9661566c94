package peer

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/txlog/txlog/api/wire"
)

// Forwarding to the leader is grouped, and driven by the callers themselves.
// A follower's concurrent requests queue their frames per leader address. A
// request that finds fewer than forwarders exchanges in flight to that address
// takes the queue (its own frames first, with what else waits, up to
// maxFwdFrames) and sends it in one POST /v1/internal/propose from its own
// goroutine: at low load a request forwards without handing its frames to
// another goroutine and back (two hand-offs that cost about as much as the
// exchange on a busy machine), and under load the leader gets a few large
// groups, one HTTP exchange and one ApplyMany each, instead of one per client
// request. When a sender's exchange ends and frames still wait, it takes the
// next group off the queue and hands it, with its place among the forwarders,
// to the group's first caller, which sends it in turn.
const (
	forwarders     = 4    // concurrent forwarding requests per leader address
	maxFwdFrames   = 1024 // frames per forwarding request
	maxFwdDeadline = 30 * time.Second
)

// fwdCall is one request's frames on their way to the leader.
type fwdCall struct {
	frames   [][]byte
	opts     wire.SubmitOptions
	deadline time.Time
	// turn receives a group that this call must send (it is the group's first
	// call). reply receives this call's results. Both have capacity 1 and each
	// gets at most one value, so nobody blocks on a caller that gave up.
	turn  chan []*fwdCall
	reply chan fwdReply
}

type fwdReply struct {
	results []wire.TxResult
	err     error
}

// fwdQueue is the forwarding state for one leader address. Guarded by
// Forwarder.mu.
type fwdQueue struct {
	inflight int        // exchanges in flight (senders holding a place)
	calls    []*fwdCall // waiting, oldest first; no group has taken them yet
}

// ProposeFunc sends payloads to the node at baseURL in one exchange and
// returns one result per payload: Streams.Propose, or client.Client.ProposeTo.
type ProposeFunc func(ctx context.Context, baseURL string, payloads [][]byte, opts wire.SubmitOptions) ([]wire.TxResult, error)

// Forwarder forwards a follower's proposals to the leader in groups, one queue
// per leader address, each group in one exchange through its ProposeFunc. Safe
// for concurrent use.
type Forwarder struct {
	propose ProposeFunc

	mu     sync.Mutex
	queues map[string]*fwdQueue
}

// NewForwarder returns a Forwarder that sends each group with propose.
func NewForwarder(propose ProposeFunc) *Forwarder {
	return &Forwarder{propose: propose}
}

// Forward sends frames to the leader at base, grouped with other callers'
// frames, and waits for the leader's results, or for ctx.
func (f *Forwarder) Forward(ctx context.Context, base string, frames [][]byte, opts wire.SubmitOptions) ([]wire.TxResult, error) {
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now().Add(maxFwdDeadline)
	}
	c := &fwdCall{frames: frames, opts: opts, deadline: dl, turn: make(chan []*fwdCall, 1), reply: make(chan fwdReply, 1)}
	f.mu.Lock()
	if f.queues == nil {
		f.queues = map[string]*fwdQueue{}
	}
	q := f.queues[base]
	if q == nil {
		q = &fwdQueue{}
		f.queues[base] = q
	}
	q.calls = append(q.calls, c)
	if q.inflight < forwarders {
		q.inflight++
		group := q.take()
		f.mu.Unlock()
		f.sendTurns(base, q, group)
		r := f.awaitFwd(base, q, c) // c was first in its own group: answered
		return r.results, r.err
	}
	f.mu.Unlock()
	select {
	case r := <-c.reply:
		return r.results, r.err
	case group := <-c.turn:
		f.sendTurns(base, q, group)
		r := f.awaitFwd(base, q, c)
		return r.results, r.err
	case <-ctx.Done():
	}
	// Gone. If c is still queued, it leaves the queue. If a sender took it into
	// a group, the sender answers into c.reply, which nobody needs to read. If
	// its group was handed to c (under mu, so the turn is there now), the group
	// must still go out, without holding up this caller.
	f.mu.Lock()
	defer f.mu.Unlock()
	if i := slices.Index(q.calls, c); i >= 0 {
		q.calls = slices.Delete(q.calls, i, i+1)
		return nil, ctx.Err()
	}
	select {
	case group := <-c.turn:
		go f.sendTurns(base, q, group)
	default:
	}
	return nil, ctx.Err()
}

// awaitFwd waits for c's results, sending the group handed to c if that comes
// first.
func (f *Forwarder) awaitFwd(base string, q *fwdQueue, c *fwdCall) fwdReply {
	for {
		select {
		case r := <-c.reply:
			return r
		case group := <-c.turn:
			f.sendTurns(base, q, group)
		}
	}
}

// take removes the next group from the queue: the oldest calls, as many as fit
// in maxFwdFrames (at least one). The caller holds Forwarder.mu.
func (q *fwdQueue) take() []*fwdCall {
	frames, k := 0, 0
	for k < len(q.calls) && (k == 0 || frames+len(q.calls[k].frames) <= maxFwdFrames) {
		frames += len(q.calls[k].frames)
		k++
	}
	group := slices.Clone(q.calls[:k])
	q.calls = slices.Delete(q.calls, 0, k)
	return group
}

// sendTurns sends group holding one of q's places, then passes the place on:
// the next group goes to its first caller, or, with nothing waiting, the place
// is given back.
func (f *Forwarder) sendTurns(base string, q *fwdQueue, group []*fwdCall) {
	f.sendGroup(base, group)
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(q.calls) > 0 {
		next := q.take()
		next[0].turn <- next
		return
	}
	q.inflight--
	if q.inflight == 0 && f.queues[base] == q {
		delete(f.queues, base)
	}
}

// sendGroup forwards the frames of calls in one request and hands each call its
// share of the results. The request lives until the earliest caller's deadline,
// so that the caller sending it is never held past its own: a caller with more
// time whose exchange is cut short proposes again (the txid makes that safe).
func (f *Forwarder) sendGroup(base string, calls []*fwdCall) {
	var frames [][]byte
	deadline := calls[0].deadline
	opts := calls[0].opts
	for _, c := range calls {
		frames = append(frames, c.frames...)
		if c.deadline.Before(deadline) {
			deadline = c.deadline
		}
		opts.Fresh = opts.Fresh && c.opts.Fresh // the leader looks up the group's frames unless none was sent before
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	opts.Timeout = time.Until(deadline)
	results, err := f.propose(ctx, base, frames, opts)
	off := 0
	for _, c := range calls {
		r := fwdReply{err: err}
		if err == nil && off+len(c.frames) <= len(results) {
			r.results = results[off : off+len(c.frames)]
		}
		off += len(c.frames)
		c.reply <- r
	}
}
