package api

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/txlog/txlog/txid"
)

// ClientConfig holds the settings of a Client. Zero means "use the default".
type ClientConfig struct {
	// Endpoints are the base URLs of the nodes, such as "http://127.0.0.1:8080".
	// Methods that may use any node need at least one; the methods that take a
	// baseURL (GetFrom, ProposeTo, the …Via methods, Ready, Health) do not.
	Endpoints []string
	// HTTPClient sends the requests. Default: a client whose transport keeps up
	// to 64 idle connections per host. Leave its Timeout zero: the Client sets
	// a deadline on each attempt itself.
	HTTPClient *http.Client
	// Timeout bounds one method call, retries included, unless the request
	// itself asks the server for longer. ctx may end it earlier. Default 30s.
	Timeout time.Duration
	// AttemptTimeout bounds one HTTP exchange, on top of the timeout or wait
	// the request asks the server for. Default 10s.
	AttemptTimeout time.Duration
	// MinBackoff is the pause before the first retry; the pause doubles with
	// every retry, with jitter. Default 20ms.
	MinBackoff time.Duration
	// MaxBackoff caps the pause between retries. Default 1s.
	MaxBackoff time.Duration
	// LookupWait is how long the server may wait for a transaction to resolve
	// when Submit looks up one whose outcome is unknown. Default 1s.
	LookupWait time.Duration
}

// Defaults of ClientConfig.
const (
	DefaultClientTimeout  = 30 * time.Second
	DefaultAttemptTimeout = 10 * time.Second
	DefaultMinBackoff     = 20 * time.Millisecond
	DefaultMaxBackoff     = time.Second
	DefaultLookupWait     = time.Second
)

// maxAnswerBytes bounds the body of an answer the Client reads.
const maxAnswerBytes = 256 << 20

// Validate reports every bad endpoint and every negative duration of c.
func (c ClientConfig) Validate() error {
	var errs []error
	for i, e := range c.Endpoints {
		if _, err := normalizeBaseURL(e); err != nil {
			errs = append(errs, fmt.Errorf("Endpoints[%d]: %w", i, err))
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"Timeout", c.Timeout}, {"AttemptTimeout", c.AttemptTimeout}, {"MinBackoff", c.MinBackoff}, {"MaxBackoff", c.MaxBackoff}, {"LookupWait", c.LookupWait}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s: %s, want >= 0", d.name, d.v))
		}
	}
	return errors.Join(errs...)
}

// normalizeBaseURL checks that s is an http or https URL with a host and no
// query, and returns it without a trailing slash.
func normalizeBaseURL(s string) (string, error) {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "", err
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("%q: want an http:// or https:// URL", s)
	case u.Host == "":
		return "", fmt.Errorf("%q: no host", s)
	case u.RawQuery != "" || u.Fragment != "":
		return "", fmt.Errorf("%q: want a base URL without query or fragment", s)
	}
	return strings.TrimRight(s, "/"), nil
}

// Client is a Go client of the txlog HTTP API. It is safe for concurrent use.
//
// Methods without a baseURL may use any node: on a connection error or a 503
// that means "not done, try elsewhere" they move on to the next endpoint, with
// a jittered, capped backoff, until the call's time is up. Answers 4xx come
// back at once, as the sentinel of their code (wrapped, check with errors.Is)
// or as an *Error.
type Client struct {
	cfg ClientConfig // with defaults filled in
	hc  *http.Client

	mu sync.Mutex
	// endpoints are normalized base URLs; it grows when a node names a leader
	// the list does not have. preferred is the one to try first.
	// Invariant: preferred < len(endpoints) or endpoints is empty.
	endpoints []string
	preferred int
}

// NewClient returns a Client. It fills in the defaults of cfg on its own copy;
// call cfg.Validate first to catch bad endpoints, which otherwise fail each
// request sent to them.
func NewClient(cfg ClientConfig) *Client {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultClientTimeout
	}
	if cfg.AttemptTimeout <= 0 {
		cfg.AttemptTimeout = DefaultAttemptTimeout
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = DefaultMinBackoff
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = cfg.MinBackoff
	}
	if cfg.LookupWait <= 0 {
		cfg.LookupWait = DefaultLookupWait
	}
	hc := cfg.HTTPClient
	if hc == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConns = 512
		t.MaxIdleConnsPerHost = 64
		hc = &http.Client{Transport: t}
	}
	c := &Client{cfg: cfg, hc: hc}
	for _, e := range cfg.Endpoints {
		if n, err := normalizeBaseURL(e); err == nil {
			e = n
		}
		if !slices.Contains(c.endpoints, e) {
			c.endpoints = append(c.endpoints, e)
		}
	}
	c.cfg.Endpoints = nil // c.endpoints is the one copy
	return c
}

// Endpoints returns the base URLs the Client knows, the one it prefers first.
func (c *Client) Endpoints() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.endpoints))
	for i := range c.endpoints {
		out = append(out, c.endpoints[(c.preferred+i)%len(c.endpoints)])
	}
	return out
}

// first returns the endpoint to try first.
func (c *Client) first() (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.endpoints) == 0 {
		return "", errors.New("api client: no endpoints")
	}
	return c.endpoints[c.preferred], nil
}

// next returns the endpoint after base.
func (c *Client) next(base string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.Index(c.endpoints, base)
	return c.endpoints[(i+1)%len(c.endpoints)] // i == -1 gives the first
}

// prefer makes base the endpoint to try first, adding it when it is new.
func (c *Client) prefer(base string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.Index(c.endpoints, base)
	if i < 0 {
		c.endpoints = append(c.endpoints, base)
		i = len(c.endpoints) - 1
	}
	c.preferred = i
}

// request is one HTTP request the Client sends, maybe several times.
type request struct {
	method string
	path   string // escaped, starting with "/"
	query  url.Values
	header http.Header
	body   []byte
	// serverTime is the timeout or wait the request asks the server for; the
	// attempt and call deadlines are extended by it.
	serverTime time.Duration
}

// answer is a complete HTTP answer.
type answer struct {
	status int
	body   []byte
}

// transportError is an HTTP exchange that got no answer.
type transportError struct {
	endpoint string
	err      error
	// sent is false only when the request certainly did not reach the server
	// (the connection was never made).
	sent bool
}

func (e *transportError) Error() string { return e.endpoint + ": " + e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

// roundTrip sends req to base once and reads the whole answer.
func (c *Client) roundTrip(ctx context.Context, base string, req request) (answer, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.AttemptTimeout+req.serverTime)
	defer cancel()
	u := base + req.path
	if len(req.query) > 0 {
		u += "?" + req.query.Encode()
	}
	var body io.Reader
	if req.body != nil {
		body = bytes.NewReader(req.body)
	}
	hr, err := http.NewRequestWithContext(ctx, req.method, u, body)
	if err != nil {
		return answer{}, fmt.Errorf("%s %s: %w", req.method, u, err)
	}
	for k, vs := range req.header {
		hr.Header[k] = vs
	}
	if req.body != nil && hr.Header.Get("Content-Type") == "" {
		hr.Header.Set("Content-Type", "application/json")
	}
	hr.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(hr)
	if err != nil {
		return answer{}, &transportError{endpoint: base, err: err, sent: !dialFailed(err)}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return answer{}, &transportError{endpoint: base, err: fmt.Errorf("read answer: %w", err), sent: true}
	}
	if len(b) > maxAnswerBytes {
		return answer{}, &transportError{endpoint: base, err: fmt.Errorf("answer longer than %d bytes", maxAnswerBytes), sent: true}
	}
	return answer{status: resp.StatusCode, body: b}, nil
}

// dialFailed reports whether err happened before a connection was made.
func dialFailed(err error) bool {
	oe, ok := errors.AsType[*net.OpError](err)
	return ok && oe.Op == "dial"
}

// classify turns a non-2xx answer into its wire code and error. An answer
// without an error object (from a proxy, say) gets the code "http_<status>".
func classify(a answer) (string, error) {
	var body struct {
		Error *ErrorBody `json:"error"`
	}
	if json.Unmarshal(a.body, &body) == nil && body.Error != nil && body.Error.Code != "" {
		return body.Error.Code, codeError(*body.Error)
	}
	code := "http_" + strconv.Itoa(a.status)
	msg := strings.TrimSpace(string(a.body))
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	if msg == "" {
		msg = http.StatusText(a.status)
	}
	return code, &Error{Code: code, Message: msg}
}

// refused reports whether code says the request was not carried out and may be
// carried out by another node or later.
func refused(code string) bool {
	return retryableCode(code) || code == "http_503"
}

// ambiguousCode reports whether code leaves open whether the request was
// carried out.
func ambiguousCode(code string) bool {
	return code == CodeTimeout || code == "http_502" || code == "http_504"
}

// decodeAnswer decodes the JSON body of a 2xx answer into out.
func decodeAnswer(a answer, out any) error {
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(a.body, out); err != nil {
		return fmt.Errorf("decode answer (status %d): %w", a.status, err)
	}
	return nil
}

// callContext bounds a call by the Timeout, or longer when the request asks
// the server for longer.
func (c *Client) callContext(ctx context.Context, serverTime time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, max(c.cfg.Timeout, serverTime+c.cfg.AttemptTimeout))
}

// pause waits the backoff before retry number attempt (from 1), or until ctx
// ends.
func (c *Client) pause(ctx context.Context, attempt int) error {
	d := c.cfg.MaxBackoff
	if shift := attempt - 1; shift < 30 {
		d = min(c.cfg.MinBackoff<<shift, c.cfg.MaxBackoff)
	}
	d = d/2 + mrand.N(d/2+1) // jitter: between half and all of d
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// giveUp is the error of a call whose time ran out: the last failure, and
// why the time ran out.
func giveUp(last, ctxErr error) error {
	if last == nil {
		return ctxErr
	}
	return fmt.Errorf("%w; gave up: %w", last, ctxErr)
}

// afterRefusal picks the endpoint to try after base refused with code: the
// leader base names when code is not_leader and base knows one, else the next.
func (c *Client) afterRefusal(ctx context.Context, base, code string) string {
	if code == CodeNotLeader {
		if leader, ok := c.learnLeader(ctx, base); ok {
			return leader
		}
	}
	return c.next(base)
}

// learnLeader asks base for the leader's HTTP address and prefers it.
func (c *Client) learnLeader(ctx context.Context, base string) (string, bool) {
	var st ClusterStatus
	if err := c.callAt(ctx, base, request{method: http.MethodGet, path: "/v1/cluster"}, &st); err != nil {
		return "", false
	}
	leader, ok := leaderURL(base, st.LeaderHTTPAddr)
	if ok {
		c.prefer(leader)
	}
	return leader, ok
}

// leaderURL makes a base URL of addr, a host:port or a URL that from (a base
// URL) named. A host:port gets the scheme of from. An address without a usable
// host, such as ":8080" or "0.0.0.0:8080", gives false.
func leaderURL(from, addr string) (string, bool) {
	if addr == "" {
		return "", false
	}
	if strings.Contains(addr, "://") {
		u, err := normalizeBaseURL(addr)
		return u, err == nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return "", false
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return "", false
	}
	scheme := "http"
	if u, err := url.Parse(from); err == nil && u.Scheme != "" {
		scheme = u.Scheme
	}
	return scheme + "://" + addr, true
}

// call sends req to any node, retrying as the Client's doc says, and decodes
// a 2xx answer into out. An idempotent request is also retried after a
// failure that leaves open whether it was carried out.
func (c *Client) call(ctx context.Context, req request, idempotent bool, out any) error {
	ctx, cancel := c.callContext(ctx, req.serverTime)
	defer cancel()
	base, err := c.first()
	if err != nil {
		return err
	}
	var last error
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if err := c.pause(ctx, attempt); err != nil {
				return giveUp(last, err)
			}
		}
		a, err := c.roundTrip(ctx, base, req)
		if te, ok := errors.AsType[*transportError](err); ok {
			if ctx.Err() != nil {
				return giveUp(last, ctx.Err())
			}
			if te.sent && !idempotent {
				return err
			}
			last, base = err, c.next(base)
			continue
		}
		if err != nil {
			return err
		}
		if a.status/100 == 2 {
			c.prefer(base)
			return decodeAnswer(a, out)
		}
		code, aerr := classify(a)
		switch {
		case refused(code):
			last, base = aerr, c.afterRefusal(ctx, base, code)
		case idempotent && ambiguousCode(code):
			last, base = aerr, c.next(base)
		default:
			return aerr
		}
	}
}

// callAt sends req to base once and decodes a 2xx answer into out.
func (c *Client) callAt(ctx context.Context, base string, req request, out any) error {
	b, err := normalizeBaseURL(base)
	if err != nil {
		return fmt.Errorf("api client: base URL: %w", err)
	}
	a, err := c.roundTrip(ctx, b, req)
	if err != nil {
		return err
	}
	if a.status/100 == 2 {
		return decodeAnswer(a, out)
	}
	_, aerr := classify(a)
	return aerr
}

// marshalJSON encodes v without escaping <, > and &, so that a value goes
// over the wire, and into the log, as the caller wrote it.
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// newIdempotencyKey returns a random idempotency key of 26 characters.
func newIdempotencyKey() string { return rand.Text() }

// answerMargin is the least time the Client keeps between the timeout it asks
// a server for and the end of its own ctx, so that the server's answer (say
// "no leader") arrives before the Client stops listening. A request cut off by
// the Client's own deadline leaves its outcome open.
const answerMargin = 50 * time.Millisecond

// errNoTimeLeft ends a call that has too little time left for another attempt.
var errNoTimeLeft = fmt.Errorf("too little time left: %w", context.DeadlineExceeded)

// fit returns d, shortened so that a server working for that long answers a
// margin before ctx ends; false when too little time is left to try at all.
func fit(ctx context.Context, d time.Duration) (time.Duration, bool) {
	dl, ok := ctx.Deadline()
	if !ok {
		return d, true
	}
	left := time.Until(dl)
	left -= max(left/10, answerMargin)
	if left < time.Millisecond {
		return 0, false
	}
	return min(d, left), true
}

// writeQuery returns the query of a write and the time it asks the server for:
// opts.Timeout (none: the server's default), fitted to ctx; false when too
// little time is left to try.
func writeQuery(ctx context.Context, opts SubmitOptions) (url.Values, time.Duration, bool) {
	q := url.Values{}
	if opts.Ack != "" {
		q.Set("ack", opts.Ack)
	}
	want := opts.Timeout
	if want <= 0 {
		want = DefaultTimeout
	}
	d, ok := fit(ctx, want)
	if !ok {
		return nil, 0, false
	}
	if opts.Timeout > 0 || d < want {
		q.Set("timeout", d.String())
	}
	return q, d, true
}

// serverTimeout is the timeout a write asks the server for at most.
func serverTimeout(opts SubmitOptions) time.Duration {
	if opts.Timeout > 0 {
		return opts.Timeout
	}
	return DefaultTimeout
}

// waitQuery is the query of a lookup that may wait.
func waitQuery(wait time.Duration) url.Values {
	q := url.Values{}
	if wait > 0 {
		q.Set("wait", wait.String())
	}
	return q
}

// Submit runs one transaction on any node and returns its result: committed,
// rejected by a failed if_version (not an error), or pending (with
// ack=accepted).
//
// Without an idempotency key in tx, Submit makes a random one, and every
// retry carries the same key, so a retry can never create a second
// transaction. After an answer that leaves the outcome open (503
// unknown_outcome, 504, a connection lost after sending) Submit first looks the
// transaction up, by txid when it knows it and by key otherwise, and
// resubmits only when the cluster does not know it. If the time runs out with
// the outcome still open, the error wraps ErrUnknownOutcome and the result has
// Status StatusUnknown, the idempotency key, and the txid when known: look it
// up later with Tx or TxByIdempotencyKey.
func (c *Client) Submit(ctx context.Context, tx TxRequest, opts SubmitOptions) (TxResult, error) {
	if tx.IdempotencyKey == "" {
		tx.IdempotencyKey = newIdempotencyKey()
	}
	body, err := marshalJSON(tx)
	if err != nil {
		return TxResult{}, fmt.Errorf("encode transaction: %w", err)
	}
	req := request{method: http.MethodPost, path: "/v1/tx", body: body}
	ctx, cancel := c.callContext(ctx, serverTimeout(opts))
	defer cancel()
	base, err := c.first()
	if err != nil {
		return TxResult{}, err
	}
	s := submission{key: tx.IdempotencyKey}
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if err := c.pause(ctx, attempt); err != nil {
				return s.giveUp(err)
			}
		}
		if s.ambiguous {
			res, found, err := c.resolve(ctx, base, s.id, s.key)
			switch {
			case err != nil && ctx.Err() != nil:
				return s.giveUp(ctx.Err())
			case err != nil && !retryable(err):
				return s.giveUp(err)
			case err != nil:
				s.last, base = err, c.next(base)
				continue
			case found && (res.Status == StatusCommitted || res.Status == StatusRejected):
				c.prefer(base)
				return res, nil
			case found:
				// Still in flight: look again rather than submit a second time.
				if res.TxID != 0 {
					s.id = res.TxID
				}
				continue
			}
			// Not known to the cluster: submit again, with the same key.
		}
		var ok bool
		if req.query, req.serverTime, ok = writeQuery(ctx, opts); !ok {
			return s.giveUp(errNoTimeLeft)
		}
		a, err := c.roundTrip(ctx, base, req)
		if te, ok := errors.AsType[*transportError](err); ok {
			s.ambiguous = s.ambiguous || te.sent
			if ctx.Err() != nil {
				return s.giveUp(ctx.Err())
			}
			s.last, base = err, c.next(base)
			continue
		}
		if err != nil {
			return TxResult{}, err
		}
		switch a.status {
		case http.StatusOK, http.StatusAccepted, http.StatusConflict:
			var res TxResult
			if err := decodeAnswer(a, &res); err != nil {
				return TxResult{}, err
			}
			if a.status != http.StatusConflict || res.Status == StatusRejected {
				c.prefer(base)
				return res, nil
			}
		}
		code, aerr := classify(a)
		switch {
		case code == CodeUnknownOutcome:
			var res TxResult
			if json.Unmarshal(a.body, &res) == nil && res.TxID != 0 {
				s.id = res.TxID
			}
			s.ambiguous, s.last = true, aerr // look it up where it was accepted
		case ambiguousCode(code):
			s.ambiguous, s.last, base = true, aerr, c.next(base)
		case refused(code):
			s.last, base = aerr, c.afterRefusal(ctx, base, code)
		default:
			return TxResult{}, aerr
		}
	}
}

// submission is the state of one Submit across its attempts.
type submission struct {
	key string
	id  txid.ID // the txid a node gave the transaction, once known
	// ambiguous is true once an attempt may have been carried out.
	ambiguous bool
	last      error
}

// giveUp is Submit's answer when its time ran out.
func (s *submission) giveUp(ctxErr error) (TxResult, error) {
	if !s.ambiguous {
		return TxResult{}, giveUp(s.last, ctxErr)
	}
	res := TxResult{TxID: s.id, Status: StatusUnknown, IdempotencyKey: s.key}
	return res, fmt.Errorf("%w: idempotency key %q%s: %w", ErrUnknownOutcome, s.key, lastError(s.last), ctxErr)
}

// lastError describes the last failure of an ambiguous call for its error
// message; it is not wrapped, so that errors.Is does not mistake an open
// outcome for, say, "no leader".
func lastError(err error) string {
	if err == nil {
		return ""
	}
	return fmt.Sprintf(" (last error: %v)", err)
}

// retryable reports whether err, from a request that changes nothing, may go
// away on another node or later.
func retryable(err error) bool {
	if _, ok := errors.AsType[*transportError](err); ok {
		return true
	}
	for _, code := range []string{CodeNoLeader, CodeNotLeader, CodeShuttingDown, CodeTimeout} {
		if errors.Is(err, codes[code].sentinel) {
			return true
		}
	}
	if e, ok := errors.AsType[*Error](err); ok {
		return refused(e.Code) || ambiguousCode(e.Code)
	}
	return false
}

// resolve looks up at base a transaction whose outcome is open: by id when it
// is not zero, else by idempotency key. found is false when base does not know
// it.
func (c *Client) resolve(ctx context.Context, base string, id txid.ID, key string) (res TxResult, found bool, err error) {
	wait, ok := fit(ctx, c.cfg.LookupWait)
	if !ok {
		return TxResult{}, false, errNoTimeLeft
	}
	req := request{method: http.MethodGet, query: waitQuery(wait), serverTime: wait}
	if id != 0 {
		req.path = "/v1/tx/" + id.String()
	} else {
		req.path = "/v1/tx"
		req.query.Set("idempotency_key", key)
	}
	err = c.callAt(ctx, base, req, &res)
	if errors.Is(err, ErrNotFound) {
		return TxResult{}, false, nil
	}
	return res, err == nil, err
}

// SubmitBatch runs many independent transactions on any node and returns one
// result per transaction, in order; a transaction that failed on its own has
// Error set. Like Submit, it gives every transaction without an idempotency
// key a random one, and retries with the same keys. If the time runs out after
// an attempt that may have been carried out, the error wraps
// ErrUnknownOutcome and each result has Status StatusUnknown and the
// transaction's idempotency key.
func (c *Client) SubmitBatch(ctx context.Context, txs []TxRequest, opts SubmitOptions) ([]TxResult, error) {
	txs = slices.Clone(txs)
	for i := range txs {
		if txs[i].IdempotencyKey == "" {
			txs[i].IdempotencyKey = newIdempotencyKey()
		}
	}
	body, err := marshalJSON(BatchRequest{Txs: txs})
	if err != nil {
		return nil, fmt.Errorf("encode batch: %w", err)
	}
	req := request{method: http.MethodPost, path: "/v1/tx/batch", body: body}
	ctx, cancel := c.callContext(ctx, serverTimeout(opts))
	defer cancel()
	base, err := c.first()
	if err != nil {
		return nil, err
	}
	var (
		ambiguous bool
		last      error
	)
	unknown := func(ctxErr error) ([]TxResult, error) {
		if !ambiguous {
			return nil, giveUp(last, ctxErr)
		}
		res := make([]TxResult, len(txs))
		for i, tx := range txs {
			res[i] = TxResult{Status: StatusUnknown, IdempotencyKey: tx.IdempotencyKey}
		}
		return res, fmt.Errorf("%w: batch of %d%s: %w", ErrUnknownOutcome, len(txs), lastError(last), ctxErr)
	}
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if err := c.pause(ctx, attempt); err != nil {
				return unknown(err)
			}
		}
		var ok bool
		if req.query, req.serverTime, ok = writeQuery(ctx, opts); !ok {
			return unknown(errNoTimeLeft)
		}
		a, err := c.roundTrip(ctx, base, req)
		if te, ok := errors.AsType[*transportError](err); ok {
			ambiguous = ambiguous || te.sent
			if ctx.Err() != nil {
				return unknown(ctx.Err())
			}
			last, base = err, c.next(base)
			continue
		}
		if err != nil {
			return nil, err
		}
		if a.status == http.StatusOK {
			var br BatchResponse
			if err := decodeAnswer(a, &br); err != nil {
				return nil, err
			}
			if len(br.Results) != len(txs) {
				return nil, fmt.Errorf("batch answer: %d results for %d transactions", len(br.Results), len(txs))
			}
			c.prefer(base)
			return br.Results, nil
		}
		code, aerr := classify(a)
		switch {
		case ambiguousCode(code) || code == CodeUnknownOutcome:
			ambiguous, last, base = true, aerr, c.next(base)
		case refused(code):
			last, base = aerr, c.afterRefusal(ctx, base, code)
		default:
			return nil, aerr
		}
	}
}

// Tx looks a transaction up by its ID on any node. With wait > 0 the server
// waits up to wait for a pending transaction to be resolved. An unknown ID
// gives ErrNotFound.
func (c *Client) Tx(ctx context.Context, id txid.ID, wait time.Duration) (TxResult, error) {
	var res TxResult
	err := c.call(ctx, request{method: http.MethodGet, path: "/v1/tx/" + id.String(), query: waitQuery(wait), serverTime: wait}, true, &res)
	return res, err
}

// TxByIdempotencyKey looks a transaction up by its idempotency key on any node;
// wait as for Tx.
func (c *Client) TxByIdempotencyKey(ctx context.Context, key string, wait time.Duration) (TxResult, error) {
	q := waitQuery(wait)
	q.Set("idempotency_key", key)
	var res TxResult
	err := c.call(ctx, request{method: http.MethodGet, path: "/v1/tx", query: q, serverTime: wait}, true, &res)
	return res, err
}

// getRequest is the request of GET /v1/kv/{key}.
func getRequest(key string, opts ReadOptions) request {
	req := request{method: http.MethodGet, path: "/v1/kv/" + url.PathEscape(key)}
	if opts.Consistency != "" {
		req.query = url.Values{"consistency": {opts.Consistency}}
	}
	if opts.Forwarded {
		req.header = http.Header{HeaderForwarded: {"1"}}
	}
	return req
}

// Get reads key from any node. A missing key gives ErrNotFound.
func (c *Client) Get(ctx context.Context, key string, opts ReadOptions) (KV, error) {
	var kv KV
	err := c.call(ctx, getRequest(key, opts), true, &kv)
	return kv, err
}

// GetFrom reads key from the node at baseURL only, once, marked as forwarded
// (header X-Txlog-Forwarded: 1) so that node does not forward it again. A node
// uses it to pass a read on to the leader.
func (c *Client) GetFrom(ctx context.Context, baseURL, key string, opts ReadOptions) (KV, error) {
	opts.Forwarded = true
	var kv KV
	err := c.callAt(ctx, baseURL, getRequest(key, opts), &kv)
	return kv, err
}

// Log reads up to limit committed transactions from index from on, from any
// node. from 0 and limit 0 leave the server's defaults (1 and 100).
func (c *Client) Log(ctx context.Context, from uint64, limit int) (LogPage, error) {
	q := url.Values{}
	if from > 0 {
		q.Set("from", strconv.FormatUint(from, 10))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var page LogPage
	err := c.call(ctx, request{method: http.MethodGet, path: "/v1/log", query: q}, true, &page)
	return page, err
}

// Cluster describes the cluster as any node sees it.
func (c *Client) Cluster(ctx context.Context) (ClusterStatus, error) {
	var st ClusterStatus
	err := c.call(ctx, request{method: http.MethodGet, path: "/v1/cluster"}, true, &st)
	return st, err
}

// ClusterFrom describes the cluster as the node at baseURL sees it.
func (c *Client) ClusterFrom(ctx context.Context, baseURL string) (ClusterStatus, error) {
	var st ClusterStatus
	err := c.callAt(ctx, baseURL, request{method: http.MethodGet, path: "/v1/cluster"}, &st)
	return st, err
}

func joinRequest(req JoinRequest) (request, error) {
	body, err := marshalJSON(req)
	if err != nil {
		return request{}, fmt.Errorf("encode join request: %w", err)
	}
	return request{method: http.MethodPost, path: "/v1/cluster/join", body: body}, nil
}

// Join adds a server to the cluster through any node. It is retried only
// while no node has carried it out.
func (c *Client) Join(ctx context.Context, req JoinRequest) error {
	r, err := joinRequest(req)
	if err != nil {
		return err
	}
	return c.call(ctx, r, false, nil)
}

// JoinVia asks the node at baseURL, once, to add a server.
func (c *Client) JoinVia(ctx context.Context, baseURL string, req JoinRequest) error {
	r, err := joinRequest(req)
	if err != nil {
		return err
	}
	return c.callAt(ctx, baseURL, r, nil)
}

func removeRequest(id string) request {
	return request{method: http.MethodDelete, path: "/v1/cluster/nodes/" + url.PathEscape(id)}
}

// Remove takes a server out of the cluster through any node. An unknown
// server gives ErrNotFound.
func (c *Client) Remove(ctx context.Context, id string) error {
	return c.call(ctx, removeRequest(id), false, nil)
}

// RemoveVia asks the node at baseURL, once, to take a server out.
func (c *Client) RemoveVia(ctx context.Context, baseURL, id string) error {
	return c.callAt(ctx, baseURL, removeRequest(id), nil)
}

func transferRequest(req TransferRequest) (request, error) {
	body, err := marshalJSON(req)
	if err != nil {
		return request{}, fmt.Errorf("encode transfer request: %w", err)
	}
	return request{method: http.MethodPost, path: "/v1/cluster/transfer-leadership", body: body}, nil
}

// TransferLeadership hands leadership to req.ID, or to a server Raft chooses,
// through any node.
func (c *Client) TransferLeadership(ctx context.Context, req TransferRequest) (TransferResult, error) {
	r, err := transferRequest(req)
	if err != nil {
		return TransferResult{}, err
	}
	var res TransferResult
	err = c.call(ctx, r, false, &res)
	return res, err
}

// TransferLeadershipVia asks the node at baseURL, once, to hand leadership over.
func (c *Client) TransferLeadershipVia(ctx context.Context, baseURL string, req TransferRequest) (TransferResult, error) {
	r, err := transferRequest(req)
	if err != nil {
		return TransferResult{}, err
	}
	var res TransferResult
	err = c.callAt(ctx, baseURL, r, &res)
	return res, err
}

// ProposeTo sends encoded transactions to the node at baseURL, once, as the
// frames of POST /v1/internal/propose, and returns one result per payload. A
// node uses it to forward what it accepted to the leader; a node that is not
// the leader answers ErrNotLeader.
func (c *Client) ProposeTo(ctx context.Context, baseURL string, payloads [][]byte, opts SubmitOptions) ([]TxResult, error) {
	q, serverTime, ok := writeQuery(ctx, opts)
	if !ok {
		return nil, fmt.Errorf("propose to %s: %w", baseURL, errNoTimeLeft)
	}
	req := request{
		method:     http.MethodPost,
		path:       "/v1/internal/propose",
		query:      q,
		header:     http.Header{"Content-Type": {"application/octet-stream"}},
		body:       EncodeFrames(payloads),
		serverTime: serverTime,
	}
	var br BatchResponse
	if err := c.callAt(ctx, baseURL, req, &br); err != nil {
		return nil, err
	}
	if len(br.Results) != len(payloads) {
		return nil, fmt.Errorf("propose answer: %d results for %d payloads", len(br.Results), len(payloads))
	}
	return br.Results, nil
}

// Ready asks the node at baseURL whether it is ready: nil, or an *Error with
// code not_ready saying why.
func (c *Client) Ready(ctx context.Context, baseURL string) error {
	return c.callAt(ctx, baseURL, request{method: http.MethodGet, path: "/readyz"}, nil)
}

// Health asks the node at baseURL whether it serves HTTP at all.
func (c *Client) Health(ctx context.Context, baseURL string) error {
	return c.callAt(ctx, baseURL, request{method: http.MethodGet, path: "/healthz"}, nil)
}
