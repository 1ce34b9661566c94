package node

import (
	"context"
	"time"

	"github.com/txlog/txlog/api"
)

// Forwarding to the leader is grouped: a follower's concurrent requests hand their
// frames to a few forwarder goroutines, each of which takes what is queued and
// sends it to the leader in one POST /v1/internal/propose, so that the leader
// proposes them together (one HTTP exchange and one ApplyMany per group instead of
// one per client request).
const (
	forwarders     = 4    // concurrent forwarding requests per node
	maxFwdFrames   = 1024 // frames per forwarding request
	maxFwdDeadline = 30 * time.Second
)

// fwdCall is one request's frames on their way to the leader.
type fwdCall struct {
	base     string // the leader's HTTP base URL
	frames   [][]byte
	opts     api.SubmitOptions
	deadline time.Time
	reply    chan fwdReply // capacity 1: the forwarder never blocks on a caller that gave up
}

type fwdReply struct {
	results []api.TxResult
	err     error
}

// forward sends frames to the leader at base through the forwarders and waits
// for the leader's results, or for ctx.
func (n *Node) forward(ctx context.Context, base string, frames [][]byte, opts api.SubmitOptions) ([]api.TxResult, error) {
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now().Add(maxFwdDeadline)
	}
	c := &fwdCall{base: base, frames: frames, opts: opts, deadline: dl, reply: make(chan fwdReply, 1)}
	select {
	case n.fwd <- c:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case r := <-c.reply:
		return r.results, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// forwardLoop is one forwarder: it takes a call, gathers what else is queued
// without waiting, and sends the gathered calls, one request per leader address.
// It runs until the HTTP server has stopped (fwdStop), so that requests in flight
// during a graceful shutdown can still finish through the new leader.
func (n *Node) forwardLoop() {
	for {
		var first *fwdCall
		select {
		case first = <-n.fwd:
		case <-n.fwdStop:
			return
		}
		calls := []*fwdCall{first}
		frames := len(first.frames)
	gather:
		for frames < maxFwdFrames {
			select {
			case c := <-n.fwd:
				calls = append(calls, c)
				frames += len(c.frames)
			default:
				break gather
			}
		}
		for len(calls) > 0 {
			base := calls[0].base
			var group, rest []*fwdCall
			for _, c := range calls {
				if c.base == base {
					group = append(group, c)
				} else {
					rest = append(rest, c)
				}
			}
			n.sendGroup(base, group)
			calls = rest
		}
	}
}

// sendGroup forwards the frames of calls in one request and hands each call its
// share of the results. The request lives as long as the latest caller's deadline.
func (n *Node) sendGroup(base string, calls []*fwdCall) {
	var frames [][]byte
	deadline := calls[0].deadline
	opts := calls[0].opts
	for _, c := range calls {
		frames = append(frames, c.frames...)
		if c.deadline.After(deadline) {
			deadline = c.deadline
		}
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	opts.Timeout = time.Until(deadline)
	results, err := n.client.ProposeTo(ctx, base, frames, opts)
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
