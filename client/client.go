package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/txid"
)

// ClientConfig holds the settings of a Client. Zero means "use the default".
type ClientConfig struct {
	// Endpoints are the base URLs of the nodes, such as "http://127.0.0.1:8080".
	// Methods that may use any node need at least one; the methods that take a
	// baseURL (GetFrom, the …Via methods, Ready, Health) do not.
	Endpoints []string
	// HTTPClient sends the requests. Default: a client whose transport keeps up
	// to 64 idle connections per host and uses TLS. Leave its Timeout zero: the
	// Client sets a deadline on each attempt itself.
	HTTPClient *http.Client
	// TLS is the TLS configuration of the default HTTPClient's transport, for
	// https:// endpoints: the roots the nodes' certificates are verified
	// against and, for mutual TLS, the client's certificate (see TLSConfig).
	// Ignored when HTTPClient is set. Default nil: the system's roots, no
	// client certificate.
	TLS *tls.Config
	// Token is sent with every request as "Authorization: Bearer <token>"
	// (the node's --auth-file). Default "": no credential besides a client
	// certificate.
	Token string
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
	// FollowTimeout, when set, ends a Follow that no node has answered for
	// this long: no stream opened since it started or since its last stream
	// broke. Default 0: Follow tries again until ctx ends.
	FollowTimeout time.Duration
	// HTTPWrites sends Submit's writes as POST /v1/tx requests instead of
	// over the write stream (stream.go). Default false: Submit writes over
	// one stream per node, and to the leader when one is known.
	HTTPWrites bool
	// MaxAsyncPending bounds the futures of SubmitAsync not resolved yet;
	// SubmitAsync blocks while that many are. Default 4096.
	MaxAsyncPending int

	// Test-only timings of the write streams (stream.go); zero means the
	// default.
	streamPingAfter, streamDeadAfter, streamLeaderRefresh time.Duration
}

// Defaults of ClientConfig.
const (
	DefaultClientTimeout   = 30 * time.Second
	DefaultAttemptTimeout  = 10 * time.Second
	DefaultMinBackoff      = 20 * time.Millisecond
	DefaultMaxBackoff      = time.Second
	DefaultLookupWait      = time.Second
	DefaultMaxAsyncPending = 4096
)

// Validate reports every bad endpoint and every negative duration of c.
func (c ClientConfig) Validate() error {
	var errs []error
	for i, e := range c.Endpoints {
		if _, err := NormalizeBaseURL(e); err != nil {
			errs = append(errs, fmt.Errorf("Endpoints[%d]: %w", i, err))
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"Timeout", c.Timeout}, {"AttemptTimeout", c.AttemptTimeout}, {"MinBackoff", c.MinBackoff}, {"MaxBackoff", c.MaxBackoff}, {"LookupWait", c.LookupWait}, {"FollowTimeout", c.FollowTimeout}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s: %s, want >= 0", d.name, d.v))
		}
	}
	if c.MaxAsyncPending < 0 {
		errs = append(errs, fmt.Errorf("MaxAsyncPending: %d, want >= 0", c.MaxAsyncPending))
	}
	if strings.ContainsAny(c.Token, " \t\r\n") {
		errs = append(errs, errors.New("Token: contains white space"))
	}
	return errors.Join(errs...)
}

// NormalizeBaseURL checks that s is an http or https URL with a host and no
// query, and returns it without a trailing slash.
func NormalizeBaseURL(s string) (string, error) {
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
//
// As etcd's clientv3 does, a Client is made of small types, one per job, whose
// methods it promotes: kv (Submit, SubmitBatch, Tx, TxByIdempotencyKey, Get
// and the calls that name a node), logs (Log, LogWait, Follow), leases,
// consumers and cluster (membership, readiness). They share one
// conn: the endpoints, the http.Client, and the retries.
type Client struct {
	conn *conn
	kv
	logs
	leases
	consumers
	cluster
}

// conn is the transport a Client's parts share: one HTTP exchange, and the
// failover between endpoints with backoff (exchange.go).
type conn struct {
	cfg ClientConfig // with defaults filled in
	hc  *http.Client

	mu sync.Mutex
	// endpoints are normalized base URLs; it grows when a node names a leader
	// the list does not have. preferred is the one to try first.
	// Invariant: preferred < len(endpoints) or endpoints is empty.
	endpoints []string
	preferred int
	// down holds the endpoints whose last exchange got no answer; next
	// passes over them while another endpoint is not down.
	down map[string]bool
	// answered holds the endpoints that answered at least once.
	answered map[string]bool

	// streams are the write streams (stream.go); nil with HTTPWrites.
	streams *streams
	// async holds a token per SubmitAsync future not resolved yet (async.go).
	async chan struct{}
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
	if cfg.MaxAsyncPending <= 0 {
		cfg.MaxAsyncPending = DefaultMaxAsyncPending
	}
	hc := cfg.HTTPClient
	if hc == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConns = 512
		t.MaxIdleConnsPerHost = 64
		if cfg.TLS != nil {
			t.TLSClientConfig = cfg.TLS.Clone()
		}
		hc = &http.Client{Transport: t}
	}
	c := &conn{cfg: cfg, hc: hc, async: make(chan struct{}, cfg.MaxAsyncPending)}
	if !cfg.HTTPWrites {
		c.streams = newStreams(c)
	}
	for _, e := range cfg.Endpoints {
		if n, err := NormalizeBaseURL(e); err == nil {
			e = n
		}
		if !slices.Contains(c.endpoints, e) {
			c.endpoints = append(c.endpoints, e)
		}
	}
	c.cfg.Endpoints = nil // c.endpoints is the one copy
	return &Client{conn: c, kv: kv{c}, logs: logs{c}, leases: leases{c}, consumers: consumers{c, kv{c}}, cluster: cluster{c}}
}

// Close closes the Client's write streams and waits for their goroutines;
// writes in flight on them end with an open outcome, and later writes go over
// HTTP. A Client that is not closed closes a stream that has been quiet for a
// minute. Close may be called more than once.
func (c *Client) Close() error {
	if c.conn.streams != nil {
		c.conn.streams.close()
	}
	return nil
}

// Endpoints returns the base URLs the Client knows, the one it prefers first.
func (c *Client) Endpoints() []string {
	cn := c.conn
	cn.mu.Lock()
	defer cn.mu.Unlock()
	out := make([]string, 0, len(cn.endpoints))
	for i := range cn.endpoints {
		out = append(out, cn.endpoints[(cn.preferred+i)%len(cn.endpoints)])
	}
	return out
}

// first returns the endpoint to try first: the preferred one unless it is
// down and another is not.
func (c *conn) first() (string, error) {
	c.mu.Lock()
	if len(c.endpoints) == 0 {
		c.mu.Unlock()
		return "", errors.New("api client: no endpoints")
	}
	p := c.endpoints[c.preferred]
	c.mu.Unlock()
	if c.isDown(p) {
		return c.next(p), nil
	}
	return p, nil
}

// isDown reports whether base's last exchange got no answer.
func (c *conn) isDown(base string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.down[base]
}

// next returns the endpoint after base that is not down, or the one after
// base when every other is down.
func (c *conn) next(base string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.Index(c.endpoints, base) // -1 starts at the first
	n := len(c.endpoints)
	for k := 1; k <= n; k++ {
		if e := c.endpoints[(i+k+n)%n]; e != base && !c.down[e] {
			return e
		}
	}
	return c.endpoints[(i+1)%n]
}

// setDown records whether base's last exchange got no answer.
func (c *conn) setDown(base string, down bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.down == nil {
		c.down = map[string]bool{}
	}
	if down {
		c.down[base] = true
		return
	}
	delete(c.down, base)
	if c.answered == nil {
		c.answered = map[string]bool{}
	}
	c.answered[base] = true
}

// Answered reports whether the endpoint base answered this Client at least
// once.
func (c *Client) Answered(base string) bool {
	cn := c.conn
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.answered[base]
}

// Down returns the endpoints whose last exchange with this Client got no
// answer (a refused or broken connection, or none within the time), so that
// a tool can try them last the next time.
func (c *Client) Down() []string {
	cn := c.conn
	cn.mu.Lock()
	defer cn.mu.Unlock()
	var out []string
	for _, e := range cn.endpoints {
		if cn.down[e] {
			out = append(out, e)
		}
	}
	return out
}

// prefer makes base the endpoint to try first, adding it when it is new.
func (c *conn) prefer(base string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.Index(c.endpoints, base)
	if i < 0 {
		c.endpoints = append(c.endpoints, base)
		i = len(c.endpoints) - 1
	}
	c.preferred = i
}

// kv are the calls of writes and reads of keys and transactions (submit.go:
// Submit, SubmitBatch).
type kv struct{ *conn }

// waitQuery is the query of a lookup that may wait.
func waitQuery(wait time.Duration) url.Values {
	q := url.Values{}
	if wait > 0 {
		q.Set("wait", wait.String())
	}
	return q
}

// readQuery adds the consistency of opts (the last given; the node's
// default, linearizable, when none sets it) to q, which it returns (a new
// one when q is nil). Only Consistency is read: a client never marks a
// read forwarded.
func readQuery(q url.Values, opts []wire.ReadOptions) url.Values {
	for _, o := range opts {
		if o.Consistency != "" {
			if q == nil {
				q = url.Values{}
			}
			q.Set("consistency", o.Consistency)
		}
	}
	return q
}

// Tx looks a transaction up by its ID on any node. With wait > 0 the server
// waits up to wait for a pending transaction to be resolved. An unknown ID
// gives ErrNotFound. It reads linearizably unless opts set another
// Consistency, as Get does (docs/api.md, "Consistency").
func (c *kv) Tx(ctx context.Context, id txid.ID, wait time.Duration, opts ...wire.ReadOptions) (wire.TxResult, error) {
	var res wire.TxResult
	err := c.call(ctx, request{method: http.MethodGet, path: "/v1/tx/" + id.String(), query: readQuery(waitQuery(wait), opts), serverTime: wait}, true, &res)
	return res, err
}

// TxByIdempotencyKey looks a transaction up by its idempotency key on any node;
// wait and opts as for Tx.
func (c *kv) TxByIdempotencyKey(ctx context.Context, key string, wait time.Duration, opts ...wire.ReadOptions) (wire.TxResult, error) {
	q := readQuery(waitQuery(wait), opts)
	q.Set("idempotency_key", key)
	var res wire.TxResult
	err := c.call(ctx, request{method: http.MethodGet, path: "/v1/tx", query: q, serverTime: wait}, true, &res)
	return res, err
}

// PendingKeyFrom asks the node at baseURL, as a node asks another (header
// X-Txlog-Forwarded), for the transaction under key that it accepted and has
// not resolved: pending with its txid, or ErrNotFound.
func (c *kv) PendingKeyFrom(ctx context.Context, baseURL, key string) (wire.TxResult, error) {
	req := request{method: http.MethodGet, path: "/v1/tx", query: url.Values{"idempotency_key": {key}}, header: http.Header{wire.HeaderForwarded: {"1"}}}
	var res wire.TxResult
	err := c.callAt(ctx, baseURL, req, &res)
	return res, err
}

// getRequest is the request of GET /v1/kv/{key}.
func getRequest(key string, opts wire.ReadOptions) request {
	req := request{method: http.MethodGet, path: "/v1/kv/" + url.PathEscape(key)}
	if opts.Consistency != "" {
		req.query = url.Values{"consistency": {opts.Consistency}}
	}
	if opts.Forwarded {
		req.header = http.Header{wire.HeaderForwarded: {"1"}}
	}
	return req
}

// Get reads key from any node. A missing key gives ErrNotFound.
func (c *kv) Get(ctx context.Context, key string, opts wire.ReadOptions) (wire.KV, error) {
	var kv wire.KV
	err := c.call(ctx, getRequest(key, opts), true, &kv)
	return kv, err
}

// GetFrom reads key from the node at baseURL only, once, marked as forwarded
// (header X-Txlog-Forwarded: 1) so that node does not forward it again. A node
// uses it to pass a read on to the leader.
func (c *kv) GetFrom(ctx context.Context, baseURL, key string, opts wire.ReadOptions) (wire.KV, error) {
	opts.Forwarded = true
	var kv wire.KV
	err := c.callAt(ctx, baseURL, getRequest(key, opts), &kv)
	return kv, err
}
