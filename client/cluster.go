package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/txlog/txlog/api/wire"
)

// cluster are the calls of the cluster's membership and of one node's
// state.
type cluster struct{ *conn }

// Cluster describes the cluster through any node, linearizable: the
// leader, term, commit index and members are the leader's, current as of
// the call (docs/api.md, "Consistency"); no leader is ErrNoLeader. With
// opts of Consistency stale, the first node that answers describes the
// cluster as it sees it, with a leader or without.
func (c *cluster) Cluster(ctx context.Context, opts ...wire.ReadOptions) (wire.ClusterStatus, error) {
	var st wire.ClusterStatus
	err := c.call(ctx, request{method: http.MethodGet, path: "/v1/cluster", query: readQuery(nil, opts)}, true, &st)
	return st, err
}

// ClusterFrom describes the cluster as the node at baseURL sees it
// (consistency=stale), with a leader or without.
func (c *cluster) ClusterFrom(ctx context.Context, baseURL string) (wire.ClusterStatus, error) {
	return c.ownView(ctx, baseURL)
}

// ownView asks the node at base for GET /v1/cluster as it sees it
// (consistency=stale). A node from before read consistency refuses the
// parameter (400 invalid_parameter) and is asked again without it, which
// such a node answers from its own state anyway: a newer client keeps
// working against an older node during a rolling upgrade.
func (c *conn) ownView(ctx context.Context, base string) (wire.ClusterStatus, error) {
	var st wire.ClusterStatus
	err := c.callAt(ctx, base, request{method: http.MethodGet, path: "/v1/cluster", query: staleQuery()}, &st)
	var e *wire.Error
	if errors.As(err, &e) && e.Code == wire.CodeInvalidParam {
		err = c.callAt(ctx, base, request{method: http.MethodGet, path: "/v1/cluster"}, &st)
	}
	return st, err
}

// staleQuery is the query of a read of one node's own view.
func staleQuery() url.Values { return url.Values{"consistency": {wire.ConsistencyStale}} }

func joinRequest(req wire.JoinRequest) (request, error) {
	body, err := wire.MarshalJSON(req)
	if err != nil {
		return request{}, fmt.Errorf("encode join request: %w", err)
	}
	return request{method: http.MethodPost, path: "/v1/cluster/join", body: body}, nil
}

// Join adds a server to the cluster through any node and returns the txid
// node number it holds there. It is retried only while no node has carried it
// out. A number another member holds gives an *Error with code
// CodeNodeNumberTaken.
func (c *cluster) Join(ctx context.Context, req wire.JoinRequest) (wire.JoinResult, error) {
	var res wire.JoinResult
	r, err := joinRequest(req)
	if err != nil {
		return res, err
	}
	err = c.call(ctx, r, false, &res)
	return res, err
}

// JoinVia asks the node at baseURL, once, to add a server.
func (c *cluster) JoinVia(ctx context.Context, baseURL string, req wire.JoinRequest) (wire.JoinResult, error) {
	var res wire.JoinResult
	r, err := joinRequest(req)
	if err != nil {
		return res, err
	}
	err = c.callAt(ctx, baseURL, r, &res)
	return res, err
}

func removeRequest(id string) request {
	return request{method: http.MethodDelete, path: "/v1/cluster/nodes/" + url.PathEscape(id)}
}

// Remove takes a server out of the cluster through any node. An unknown
// server gives ErrNotFound.
func (c *cluster) Remove(ctx context.Context, id string) error {
	return c.call(ctx, removeRequest(id), false, nil)
}

// RemoveVia asks the node at baseURL, once, to take a server out.
func (c *cluster) RemoveVia(ctx context.Context, baseURL, id string) error {
	return c.callAt(ctx, baseURL, removeRequest(id), nil)
}

func transferRequest(req wire.TransferRequest) (request, error) {
	body, err := wire.MarshalJSON(req)
	if err != nil {
		return request{}, fmt.Errorf("encode transfer request: %w", err)
	}
	return request{method: http.MethodPost, path: "/v1/cluster/transfer-leadership", body: body}, nil
}

// TransferLeadership hands leadership to req.ID, or to a server Raft chooses,
// through any node.
func (c *cluster) TransferLeadership(ctx context.Context, req wire.TransferRequest) (wire.TransferResult, error) {
	r, err := transferRequest(req)
	if err != nil {
		return wire.TransferResult{}, err
	}
	var res wire.TransferResult
	err = c.call(ctx, r, false, &res)
	return res, err
}

// TransferLeadershipVia asks the node at baseURL, once, to hand leadership over.
func (c *cluster) TransferLeadershipVia(ctx context.Context, baseURL string, req wire.TransferRequest) (wire.TransferResult, error) {
	r, err := transferRequest(req)
	if err != nil {
		return wire.TransferResult{}, err
	}
	var res wire.TransferResult
	err = c.callAt(ctx, baseURL, r, &res)
	return res, err
}

// Ready asks the node at baseURL whether it is ready: nil, or an *Error with
// code not_ready saying why.
func (c *cluster) Ready(ctx context.Context, baseURL string) error {
	return c.callAt(ctx, baseURL, request{method: http.MethodGet, path: "/readyz"}, nil)
}

// Health asks the node at baseURL whether it serves HTTP at all.
func (c *cluster) Health(ctx context.Context, baseURL string) error {
	return c.callAt(ctx, baseURL, request{method: http.MethodGet, path: "/healthz"}, nil)
}
