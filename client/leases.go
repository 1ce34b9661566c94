package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/txlog/txlog/api/wire"
)

// leaseError returns the *LeaseError of an error answer's body, if it is one.
func leaseError(code string, body []byte) (*wire.LeaseError, bool) {
	if code != wire.CodeLeaseHeld && code != wire.CodeFenced {
		return nil, false
	}
	var a wire.LeaseErrorAnswer
	if json.Unmarshal(body, &a) != nil || a.Lease == nil {
		return nil, false
	}
	return &wire.LeaseError{Code: code, Message: a.Error.Message, Lease: *a.Lease}, true
}

// leasePath is the escaped path of a lease.
func leasePath(name string) string { return "/v1/leases/" + url.PathEscape(name) }

func acquireRequest(req wire.LeaseRequest, forwarded bool) (request, error) {
	body, err := wire.MarshalJSON(wire.LeaseBody{Holder: req.Holder, TTL: req.TTL.String(), Token: req.Token})
	if err != nil {
		return request{}, fmt.Errorf("encode lease request: %w", err)
	}
	r := request{method: http.MethodPut, path: leasePath(req.Name), body: body}
	if forwarded {
		r.header = http.Header{wire.HeaderForwarded: {"1"}}
	}
	return r, nil
}

// leases are the lease calls.
type leases struct{ *conn }

// AcquireLease acquires the lease name for holder with ttl through any node:
// the lease, whose Token fences holder's writes, or a *LeaseError
// (ErrLeaseHeld) naming the current holder. An acquire by the holder that
// has it answers the current lease (Acquired false), so a retry is safe.
func (c *leases) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (wire.LeaseResult, error) {
	return c.putLease(ctx, wire.LeaseRequest{Name: name, Holder: holder, TTL: ttl})
}

// RenewLease extends the lease that holder holds with token by ttl from the
// time the leader applies it; a *LeaseError (ErrFenced) when the token is not
// current or the lease expired.
func (c *leases) RenewLease(ctx context.Context, name, holder string, token uint64, ttl time.Duration) (wire.LeaseResult, error) {
	return c.putLease(ctx, wire.LeaseRequest{Name: name, Holder: holder, TTL: ttl, Token: token})
}

func (c *leases) putLease(ctx context.Context, req wire.LeaseRequest) (wire.LeaseResult, error) {
	r, err := acquireRequest(req, false)
	if err != nil {
		return wire.LeaseResult{}, err
	}
	var res wire.LeaseResult
	err = c.call(ctx, r, true, &res)
	return res, err
}

// AcquireLeaseVia sends an acquire or renewal to the node at baseURL once,
// marked as forwarded: a node passes one on to the leader with it.
func (c *leases) AcquireLeaseVia(ctx context.Context, baseURL string, req wire.LeaseRequest) (wire.LeaseResult, error) {
	r, err := acquireRequest(req, true)
	if err != nil {
		return wire.LeaseResult{}, err
	}
	var res wire.LeaseResult
	err = c.callAt(ctx, baseURL, r, &res)
	return res, err
}

func releaseRequest(name, holder string, token uint64, forwarded bool) request {
	r := request{method: http.MethodDelete, path: leasePath(name), query: url.Values{"holder": {holder}, "token": {strconv.FormatUint(token, 10)}}}
	if forwarded {
		r.header = http.Header{wire.HeaderForwarded: {"1"}}
	}
	return r
}

// ReleaseLease releases the lease that holder holds with token, through any
// node; a free lease stays free (nil). A *LeaseError (ErrFenced) means
// another token holds it, which the release left alone.
func (c *leases) ReleaseLease(ctx context.Context, name, holder string, token uint64) error {
	return c.call(ctx, releaseRequest(name, holder, token, false), true, nil)
}

// ReleaseLeaseVia is ReleaseLease sent to the node at baseURL once, marked
// as forwarded.
func (c *leases) ReleaseLeaseVia(ctx context.Context, baseURL, name, holder string, token uint64) error {
	return c.callAt(ctx, baseURL, releaseRequest(name, holder, token, true), nil)
}

// Lease reads a live lease from any node (ErrNotFound when free),
// linearizably. With wait > 0 it long-polls as LeaseBackend.Lease says.
func (c *leases) Lease(ctx context.Context, name string, wait time.Duration, afterToken uint64) (wire.Lease, error) {
	return c.LeaseWith(ctx, name, wait, afterToken, wire.ReadOptions{})
}

// LeaseWith is Lease at the Consistency of opts (as Get takes it): Lease
// keeps the signature lease.Client and consumer's fakes implement.
func (c *leases) LeaseWith(ctx context.Context, name string, wait time.Duration, afterToken uint64, opts wire.ReadOptions) (wire.Lease, error) {
	q := readQuery(waitQuery(wait), []wire.ReadOptions{opts})
	if afterToken > 0 {
		q.Set("after_token", strconv.FormatUint(afterToken, 10))
	}
	var l wire.Lease
	err := c.call(ctx, request{method: http.MethodGet, path: leasePath(name), query: q, serverTime: wait}, true, &l)
	return l, err
}

// Leases lists the live leases, from any node, linearizably unless opts
// set another Consistency.
func (c *leases) Leases(ctx context.Context, opts ...wire.ReadOptions) ([]wire.Lease, error) {
	var ls wire.LeaseList
	err := c.call(ctx, request{method: http.MethodGet, path: "/v1/leases", query: readQuery(nil, opts)}, true, &ls)
	return ls.Leases, err
}
