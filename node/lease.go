package node

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/replication"
	"github.com/txlog/txlog/store"
)

var _ api.LeaseBackend = (*Node)(nil)

// LeaseClockSkew is the bound on the difference between two leaders' clocks
// that a leader stamps into each lease command (store.LeaseCommand.Skew): a
// lease goes to another holder only this long after it expired by the stamped
// times, so that a new leader whose clock runs ahead by up to this never
// grants it before the old holder's own deadline (docs/leases.md).
const LeaseClockSkew = 500 * time.Millisecond

// leases answers api.LeaseBackend for Node, which embeds it: lease writes go
// through the leader as one KindLease entry each, lease reads come from this
// node's applied state.
type leases struct {
	mem   *membership
	peers *peers
	props *proposer
	look  *lookups
	db    *store.DB
	raft  *replication.Raft
}

// AcquireLease implements api.LeaseBackend: the command goes into the log
// through the leader, like a write, and its Result is the answer. A retry
// after an ambiguous failure is safe: an acquire by the holder answers the
// lease it holds, a renewal renews again, a release of a free lease is a
// release.
func (lb *leases) AcquireLease(ctx context.Context, req wire.LeaseRequest, forwarded bool) (wire.LeaseResult, error) {
	if err := lb.mem.leaseWriteErr(); err != nil {
		return wire.LeaseResult{}, err
	}
	lc := store.LeaseCommand{Op: store.LeaseAcquire, Name: req.Name, Holder: req.Holder, TTL: req.TTL, Token: req.Token, Skew: LeaseClockSkew}
	if req.Token != 0 {
		lc.Op = store.LeaseRenew
	}
	var res wire.LeaseResult
	err := lb.peers.viaLeader(ctx, forwarded, func(ctx context.Context) error {
		out, err := lb.props.applyLease(ctx, lc)
		if err != nil {
			return err
		}
		res = wire.LeaseResult{Lease: fromLease(out.Lease, out.Now), Acquired: out.Status == store.LeaseGranted}
		return leaseRefusal(out)
	}, func(ctx context.Context, base string) error {
		var err error
		res, err = lb.peers.client.AcquireLease(ctx, base, req)
		return err
	})
	return res, err
}

// ReleaseLease implements api.LeaseBackend.
func (lb *leases) ReleaseLease(ctx context.Context, name, holder string, token uint64, forwarded bool) error {
	if err := lb.mem.leaseWriteErr(); err != nil {
		return err
	}
	lc := store.LeaseCommand{Op: store.LeaseRelease, Name: name, Holder: holder, Token: token, Skew: LeaseClockSkew}
	return lb.peers.viaLeader(ctx, forwarded, func(ctx context.Context) error {
		out, err := lb.props.applyLease(ctx, lc)
		if err != nil {
			return err
		}
		return leaseRefusal(out)
	}, func(ctx context.Context, base string) error {
		return lb.peers.client.ReleaseLease(ctx, base, name, holder, token)
	})
}

// leaseWriteErr refuses lease writes on a removed node. They issue no txid,
// so the node-number checks that hold up other writes (number.go) do not
// apply to them.
func (m *membership) leaseWriteErr() error {
	if m.removed.Load() {
		return fmt.Errorf("%w: this node is no longer a member and is stopping; send lease writes to another node", wire.ErrRemoved)
	}
	return nil
}

// applyLease proposes a lease command on this node, the leader, stamped with
// its clock, and returns what the store did.
func (pr *proposer) applyLease(ctx context.Context, lc store.LeaseCommand) (store.LeaseOutcome, error) {
	data := store.EncodeCommand(store.Command{Kind: store.KindLease, Time: time.Now().UnixNano(), Payload: store.EncodeLeaseCommand(lc)})
	a := pr.raft.ApplyMany(ctx, [][]byte{data})[0]
	switch {
	case a.Err != nil:
		return store.LeaseOutcome{}, translate(a.Err)
	case a.Result.Err != nil:
		return store.LeaseOutcome{}, &wire.Error{Code: wire.CodeBadRequest, Message: a.Result.Err.Error()}
	case a.Result.Lease == nil:
		return store.LeaseOutcome{}, fmt.Errorf("lease command at index %d: no lease outcome", a.Index)
	}
	return *a.Result.Lease, nil
}

// leaseRefusal is the error of a refused lease command, nil otherwise.
func leaseRefusal(out store.LeaseOutcome) error {
	l := fromLease(out.Lease, out.Now)
	switch out.Status {
	case store.LeaseHeld:
		return &wire.LeaseError{Code: wire.CodeLeaseHeld, Message: fmt.Sprintf("lease %q is held by another holder (token %d)", l.Name, l.Token), Lease: l}
	case store.LeaseFenced:
		return &wire.LeaseError{Code: wire.CodeFenced, Message: fmt.Sprintf("lease %q: not held with that token (current token %d)", l.Name, l.Token), Lease: l}
	}
	return nil
}

// fromLease converts a lease, with the time left as of leader time now.
func fromLease(l store.Lease, now int64) wire.Lease {
	out := wire.Lease{Name: l.Name, Holder: l.Holder, Token: l.Token, ExpiresIn: "0s"}
	if l.Token == 0 {
		return out
	}
	out.TTL = l.TTL.String()
	if left := time.Duration(l.Expires() - now); left > 0 {
		out.ExpiresIn = left.Round(time.Millisecond).String()
	}
	return out
}

// leaseNow is the time this node judges a lease's expiry by for reads: its
// clock, or the largest leader time applied when that is later (a follower
// whose clock runs behind still sees what the store decides).
func leaseNow(db *store.DB) int64 {
	now := time.Now().UnixNano()
	if t, err := db.Reads().MaxTime(); err == nil && t > now {
		now = t
	}
	return now
}

// Lease implements api.LeaseBackend, at the consistency of opts
// (consistentRead).
func (lb *leases) Lease(ctx context.Context, name string, wait time.Duration, after uint64, opts wire.ReadOptions) (wire.Lease, error) {
	return consistentRead(ctx, lb.look, opts, func(ctx context.Context) (wire.Lease, error) {
		return lb.lease(ctx, name, wait, after)
	}, func(ctx context.Context, addr string, opts wire.ReadOptions) (wire.Lease, error) {
		q := waitQuery(wait)
		if after > 0 {
			q.Set("after_token", strconv.FormatUint(after, 10))
		}
		var l wire.Lease
		err := lb.look.peers.client.Read(ctx, addr, "/v1/leases/"+url.PathEscape(name), q, opts, &l)
		return l, err
	})
}

// lease reads a lease from this node's applied state; the long poll wakes
// on each applied entry and at the lease's expiry.
func (lb *leases) lease(ctx context.Context, name string, wait time.Duration, after uint64) (wire.Lease, error) {
	deadline := time.Now().Add(wait)
	for {
		// The index before the read: an entry applied after it wakes the
		// wait below, even one applied between the read and the wait.
		seen := lb.db.AppliedIndex()
		l, err := lb.db.Reads().Lease(name)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return wire.Lease{}, err
		}
		now := leaseNow(lb.db)
		live := err == nil && l.LiveAt(now)
		done := wait <= 0 || !time.Now().Before(deadline) ||
			(after == 0 && live) || (after > 0 && !(live && l.Token <= after))
		if done {
			if !live {
				return wire.Lease{}, wire.New(wire.MsgLeaseNotFound, name)
			}
			return fromLease(l, now), nil
		}
		until := deadline
		if exp := time.Unix(0, l.Expires()); live && exp.Before(until) {
			// By this node's clock; one behind the leaders' polls.
			until = exp
			if soon := time.Now().Add(10 * time.Millisecond); until.Before(soon) {
				until = soon
			}
		}
		wctx, cancel := context.WithDeadline(ctx, until)
		_ = lb.raft.WaitApplied(wctx, seen+1)
		cancel()
		if ctx.Err() != nil {
			return wire.Lease{}, ctx.Err()
		}
	}
}

// Leases implements api.LeaseBackend: the live leases, at the consistency
// of opts (consistentRead).
func (lb *leases) Leases(ctx context.Context, opts wire.ReadOptions) ([]wire.Lease, error) {
	return consistentRead(ctx, lb.look, opts, func(context.Context) ([]wire.Lease, error) {
		return lb.leases()
	}, func(ctx context.Context, addr string, opts wire.ReadOptions) ([]wire.Lease, error) {
		var list wire.LeaseList
		err := lb.look.peers.client.Read(ctx, addr, "/v1/leases", nil, opts, &list)
		return list.Leases, err
	})
}

// leases returns the live leases in this node's applied state.
func (lb *leases) leases() ([]wire.Lease, error) {
	ls, err := lb.db.Reads().Leases()
	if err != nil {
		return nil, err
	}
	now := leaseNow(lb.db)
	out := make([]wire.Lease, 0, len(ls))
	for _, l := range ls {
		if l.LiveAt(now) {
			out = append(out, fromLease(l, now))
		}
	}
	return out, nil
}
