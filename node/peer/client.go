package peer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/peerlink"
	"github.com/txlog/txlog/txid"
	"github.com/txlog/txlog/ui"
)

// Dialer opens connections of a kind on the peer link: *peerlink.Link.
type Dialer interface {
	Dial(ctx context.Context, addr string, kind byte) (net.Conn, error)
}

// MaxAnswerBytes bounds an answer read from another node: a propose
// stream's message, an internal request's body. An answer grows as its bytes
// arrive, never to more than this.
const MaxAnswerBytes = 256 << 20

// Client makes the requests a node sends another over the peer link
// (peerlink.KindHTTP): to the other node's internal router, at its peer
// address. Every call is one exchange, within ctx; an answer that is not a
// 2xx is the error the public API's code table gives it (AnswerError), and
// no answer at all is a *TransportError. Safe for concurrent use.
type Client struct {
	hc *http.Client
}

// NewClient returns a Client whose connections d opens.
func NewClient(d Dialer) *Client {
	return &Client{hc: &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			return d.Dial(ctx, addr, peerlink.KindHTTP)
		},
		MaxIdleConnsPerHost: 64,
		// Below the acceptor's idle deadline (peerlink.DefaultIdleTimeout).
		IdleConnTimeout:    peerlink.DefaultIdleTimeout / 2,
		DisableCompression: true,
	}}}
}

// CloseIdleConnections closes the Client's idle connections.
func (c *Client) CloseIdleConnections() { c.hc.CloseIdleConnections() }

// TransportError is an exchange with another node that got no answer.
//
// Its text, which the public API may answer with, names neither the node's
// address nor the internal URL (both in Addr and Err for a log): only the
// cause, such as "timed out" or "connect: connection refused".
type TransportError struct {
	Addr string
	Err  error
	// Sent is false only when the request certainly did not reach the node.
	Sent bool
}

func (e *TransportError) Error() string { return "no answer from another node: " + e.cause() }

// linkErrors are the peer link's errors, whose wrapping names the address.
var linkErrors = []error{peerlink.ErrRefused, peerlink.ErrOtherCluster, peerlink.ErrPeerBadHeader, peerlink.ErrClosed,
	peerlink.ErrSecretRequired, peerlink.ErrUnauthenticated, peerlink.ErrPeerUnproven,
	peerlink.ErrPeerNotTLS, peerlink.ErrTLSRequired, peerlink.ErrNoVerifiedCert}

// cause is the text of Err without the URL of a *url.Error, the addresses
// of a *net.OpError or the peer link's wrapping, and without Addr.
func (e *TransportError) cause() string {
	err := e.Err
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	for _, le := range linkErrors {
		if errors.Is(err, le) {
			return le.Error()
		}
	}
	if ue, ok := errors.AsType[*url.Error](err); ok {
		err = ue.Err
	}
	text := err.Error()
	if op, ok := errors.AsType[*net.OpError](err); ok && op.Err != nil {
		text = op.Op + ": " + op.Err.Error()
	}
	if e.Addr != "" {
		text = strings.ReplaceAll(text, e.Addr, "the node")
	}
	return text
}

func (e *TransportError) Unwrap() error { return e.Err }

// request is one internal request.
type request struct {
	method string
	path   string // escaped
	query  url.Values
	header http.Header
	body   []byte
}

// do sends req to the node at addr and decodes a 2xx answer's JSON into out
// (nil: drop it).
func (c *Client) do(ctx context.Context, addr string, req request, out any) error {
	u := "http://" + addr + req.path
	if len(req.query) > 0 {
		u += "?" + req.query.Encode()
	}
	var body io.Reader
	if req.body != nil {
		body = bytes.NewReader(req.body)
	}
	hr, err := http.NewRequestWithContext(ctx, req.method, u, body)
	if err != nil {
		return fmt.Errorf("peer request %s %s: %w", req.method, req.path, err)
	}
	for k, v := range req.header {
		hr.Header[k] = v
	}
	if req.body != nil && hr.Header.Get("Content-Type") == "" {
		hr.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(hr)
	if err != nil {
		return &TransportError{Addr: addr, Err: err, Sent: !errors.Is(err, peerlink.ErrRefused) && !isDialError(err)}
	}
	defer resp.Body.Close()
	b, err := readAnswer(resp.Body, resp.ContentLength)
	if err != nil {
		return &TransportError{Addr: addr, Err: fmt.Errorf("read answer: %w", err), Sent: true}
	}
	if resp.StatusCode/100 != 2 {
		return AnswerError(resp.StatusCode, b)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("decode answer of %s %s (status %d): %w", req.method, req.path, resp.StatusCode, err)
	}
	return nil
}

// isDialError reports whether err happened before a connection was made.
func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// readAnswer reads a body of at most MaxAnswerBytes, growing its buffer as
// bytes arrive: a declared length is only a hint, bounded by the limit.
func readAnswer(r io.Reader, declared int64) ([]byte, error) {
	if declared > MaxAnswerBytes {
		return nil, fmt.Errorf("answer of %d bytes, more than %d", declared, MaxAnswerBytes)
	}
	var buf bytes.Buffer
	if declared > 0 {
		buf.Grow(int(min(declared, 64<<10)))
	}
	n, err := buf.ReadFrom(io.LimitReader(r, MaxAnswerBytes+1))
	if err != nil {
		return nil, err
	}
	if n > MaxAnswerBytes {
		return nil, fmt.Errorf("answer longer than %d bytes", MaxAnswerBytes)
	}
	return buf.Bytes(), nil
}

// AnswerError is the error of an answer that is not a 2xx: the code's
// sentinel or *wire.Error through the code table, a *wire.LeaseError or a
// *wire.CompactedError for those codes, as the public client reads them. An
// answer without an error object gets the code "http_<status>".
func AnswerError(status int, body []byte) error {
	var eb struct {
		Error *wire.ErrorBody `json:"error"`
	}
	if json.Unmarshal(body, &eb) == nil && eb.Error != nil && eb.Error.Code != "" {
		switch eb.Error.Code {
		case wire.CodeLeaseHeld, wire.CodeFenced:
			var a wire.LeaseErrorAnswer
			if json.Unmarshal(body, &a) == nil && a.Lease != nil {
				return &wire.LeaseError{Code: eb.Error.Code, Message: a.Error.Message, Lease: *a.Lease}
			}
		case wire.CodeCompacted:
			var a wire.CompactedAnswer
			if json.Unmarshal(body, &a) == nil {
				return &wire.CompactedError{FirstIndex: a.FirstIndex, Message: a.Error.Message}
			}
		}
		return eb.Error.Err()
	}
	msg := strings.TrimSpace(string(body))
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	return &wire.Error{Code: "http_" + strconv.Itoa(status), Message: msg}
}

// answerMargin is the least time kept between the timeout a proposal asks
// the leader for and the end of the caller's ctx, so that the leader's answer
// arrives before the caller stops listening.
const answerMargin = 50 * time.Millisecond

// ErrNoTimeLeft ends a proposal with too little time left to send it.
var ErrNoTimeLeft = fmt.Errorf("too little time left: %w", context.DeadlineExceeded)

// ProposeQuery returns the query of an internal proposal (ack, timeout,
// fresh, handoff; the sender's ID travels in the peer link's header): opts.Timeout (none: the leader's default), fitted to ctx so that
// the answer comes a margin before ctx ends; false when too little time is
// left to try.
func ProposeQuery(ctx context.Context, opts wire.SubmitOptions) (url.Values, bool) {
	q := url.Values{}
	if opts.Ack != "" {
		q.Set("ack", opts.Ack)
	}
	want := opts.Timeout
	if want <= 0 {
		want = wire.DefaultTimeout
	}
	d := want
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		left -= max(left/10, answerMargin)
		if left < time.Millisecond {
			return nil, false
		}
		d = min(d, left)
	}
	if opts.Timeout > 0 || d < want {
		q.Set("timeout", d.String())
	}
	if opts.Fresh {
		q.Set("fresh", "true")
	}
	if opts.HandOff {
		q.Set("handoff", "true")
	}
	return q, true
}

// Propose sends encoded transactions to the node at addr as the frames of
// POST /v1/internal/propose, and returns one result per payload
// (--forward=http; Streams.Propose is the default).
func (c *Client) Propose(ctx context.Context, addr string, payloads [][]byte, opts wire.SubmitOptions) ([]wire.TxResult, error) {
	q, ok := ProposeQuery(ctx, opts)
	if !ok {
		return nil, fmt.Errorf("propose: %w", ErrNoTimeLeft)
	}
	req := request{method: http.MethodPost, path: "/v1/internal/propose", query: q,
		header: http.Header{"Content-Type": {"application/octet-stream"}}, body: wire.EncodeFrames(payloads)}
	var br wire.BatchResponse
	if err := c.do(ctx, addr, req, &br); err != nil {
		return nil, err
	}
	if len(br.Results) != len(payloads) {
		return nil, fmt.Errorf("propose answer: %d results for %d payloads", len(br.Results), len(payloads))
	}
	return br.Results, nil
}

var forwarded = http.Header{wire.HeaderForwarded: {"1"}}

// Tx looks transaction id up on the node at addr, in its own applied state
// (consistency=stale: what that node has applied is the question), waiting
// up to wait for a pending one to be resolved. ErrNotFound when it does not know it. A lookup
// that got no answer is asked again, after a pause of up to txRetryMax,
// until ctx ends: it changes nothing.
func (c *Client) Tx(ctx context.Context, addr string, id txid.ID, wait time.Duration) (wire.TxResult, error) {
	q := url.Values{"consistency": {wire.ConsistencyStale}}
	if wait > 0 {
		q.Set("wait", wait.String())
	}
	pause := time.Millisecond
	for {
		var res wire.TxResult
		err := c.do(ctx, addr, request{method: http.MethodGet, path: "/v1/tx/" + id.String(), query: q}, &res)
		if _, noAnswer := errors.AsType[*TransportError](err); !noAnswer {
			return res, err
		}
		select {
		case <-ctx.Done():
			return res, err
		case <-time.After(pause):
		}
		pause = min(2*pause, txRetryMax)
	}
}

// txRetryMax bounds the pause between two attempts of a lookup.
const txRetryMax = 50 * time.Millisecond

// PendingKey asks the node at addr for the transaction under key that it
// accepted and has not resolved (marked forwarded, so it asks no one else).
func (c *Client) PendingKey(ctx context.Context, addr, key string) (wire.TxResult, error) {
	var res wire.TxResult
	err := c.do(ctx, addr, request{method: http.MethodGet, path: "/v1/tx", query: url.Values{"idempotency_key": {key}}, header: forwarded}, &res)
	return res, err
}

// Get reads key on the node at addr, marked forwarded so that it does not
// forward the read again.
func (c *Client) Get(ctx context.Context, addr, key string, opts wire.ReadOptions) (wire.KV, error) {
	var kv wire.KV
	err := c.Read(ctx, addr, "/v1/kv/"+url.PathEscape(key), nil, opts, &kv)
	return kv, err
}

// Read sends the node at addr, the leader, a read this node forwards to
// it: GET path (escaped) with query and the consistency of opts, marked
// forwarded so that it does not forward the read again; out takes the
// answer.
func (c *Client) Read(ctx context.Context, addr, path string, query url.Values, opts wire.ReadOptions, out any) error {
	q := url.Values{}
	for k, v := range query {
		q[k] = v
	}
	if opts.Consistency != "" {
		q.Set("consistency", opts.Consistency)
	}
	return c.do(ctx, addr, request{method: http.MethodGet, path: path, query: q, header: forwarded}, out)
}

// Range sends the node at addr, the leader, a range read this node
// forwards to it (POST /v1/internal/range).
func (c *Client) Range(ctx context.Context, addr string, req wire.RangeRequest, opts wire.ReadOptions) (wire.KVPage, error) {
	req.Consistency = opts.Consistency
	var page wire.KVPage
	r, err := jsonRequest(http.MethodPost, "/v1/internal/range", req)
	if err == nil {
		r.header = forwarded
		err = c.do(ctx, addr, r, &page)
	}
	return page, err
}

// Cluster describes the cluster as the node at addr sees it
// (consistency=stale: its own view, whether or not there is a leader).
func (c *Client) Cluster(ctx context.Context, addr string) (wire.ClusterStatus, error) {
	var st wire.ClusterStatus
	err := c.do(ctx, addr, request{method: http.MethodGet, path: "/v1/cluster", query: url.Values{"consistency": {wire.ConsistencyStale}}}, &st)
	return st, err
}

// Stats reads the dashboard's numbers of the node at addr (GET /v1/stats),
// for a page served by this node.
func (c *Client) Stats(ctx context.Context, addr string) (ui.StatsAnswer, error) {
	var st ui.StatsAnswer
	err := c.do(ctx, addr, request{method: http.MethodGet, path: "/v1/stats"}, &st)
	return st, err
}

// jsonRequest is a request whose body is v in JSON.
func jsonRequest(method, path string, v any) (request, error) {
	body, err := wire.MarshalJSON(v)
	if err != nil {
		return request{}, fmt.Errorf("encode %s %s: %w", method, path, err)
	}
	return request{method: method, path: path, body: body}, nil
}

// Join asks the node at addr, the leader, to add a server.
func (c *Client) Join(ctx context.Context, addr string, req wire.JoinRequest) (wire.JoinResult, error) {
	var res wire.JoinResult
	r, err := jsonRequest(http.MethodPost, "/v1/cluster/join", req)
	if err == nil {
		err = c.do(ctx, addr, r, &res)
	}
	return res, err
}

// Remove asks the node at addr, the leader, to take server id out.
func (c *Client) Remove(ctx context.Context, addr, id string) error {
	return c.do(ctx, addr, request{method: http.MethodDelete, path: "/v1/cluster/nodes/" + url.PathEscape(id)}, nil)
}

// TransferLeadership asks the node at addr, the leader, to hand leadership over.
func (c *Client) TransferLeadership(ctx context.Context, addr string, req wire.TransferRequest) (wire.TransferResult, error) {
	var res wire.TransferResult
	r, err := jsonRequest(http.MethodPost, "/v1/cluster/transfer-leadership", req)
	if err == nil {
		err = c.do(ctx, addr, r, &res)
	}
	return res, err
}

// leasePath is the escaped path of a lease.
func leasePath(name string) string { return "/v1/leases/" + url.PathEscape(name) }

// AcquireLease sends an acquire or renewal to the node at addr, the leader,
// marked forwarded.
func (c *Client) AcquireLease(ctx context.Context, addr string, req wire.LeaseRequest) (wire.LeaseResult, error) {
	var res wire.LeaseResult
	r, err := jsonRequest(http.MethodPut, leasePath(req.Name), wire.LeaseBody{Holder: req.Holder, TTL: req.TTL.String(), Token: req.Token})
	if err == nil {
		r.header = forwarded
		err = c.do(ctx, addr, r, &res)
	}
	return res, err
}

// ReleaseLease sends a release to the node at addr, the leader, marked
// forwarded.
func (c *Client) ReleaseLease(ctx context.Context, addr, name, holder string, token uint64) error {
	q := url.Values{"holder": {holder}, "token": {strconv.FormatUint(token, 10)}}
	return c.do(ctx, addr, request{method: http.MethodDelete, path: leasePath(name), query: q, header: forwarded}, nil)
}
