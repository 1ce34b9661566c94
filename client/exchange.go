package client

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/txlog/txlog/api/wire"
)

// MaxAnswerBytes bounds the body of an answer the Client reads.
const MaxAnswerBytes = 256 << 20

// request is one HTTP request the Client sends, maybe several times.
type request struct {
	method string
	path   string // escaped, starting with "/"
	query  url.Values
	// rawQuery is the query text when query is empty (writes build theirs
	// as text: writeQuery).
	rawQuery string
	header   http.Header
	body     []byte
	// serverTime is the timeout or wait the request asks the server for; the
	// attempt and call deadlines are extended by it.
	serverTime time.Duration
}

// queryText returns req's query as the text of a URL.
func (req *request) queryText() string {
	if len(req.query) > 0 {
		return req.query.Encode()
	}
	return req.rawQuery
}

// attemptContext bounds one attempt by d from now, unless ctx ends earlier
// anyway: then ctx itself does, without a timer of its own.
func attemptContext(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && !dl.After(time.Now().Add(d)) {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}

// answer is a complete HTTP answer.
type answer struct {
	status int
	body   []byte
}

// TransportError is an HTTP exchange that got no answer.
type TransportError struct {
	endpoint string
	err      error
	// sent is false only when the request certainly did not reach the server
	// (the connection was never made).
	sent bool
}

func (e *TransportError) Error() string { return e.endpoint + ": " + e.err.Error() }

func (e *TransportError) Unwrap() error { return e.err }

// roundTrip sends req to base once and reads the whole answer.
func (c *conn) roundTrip(ctx context.Context, base string, req request) (answer, error) {
	parent := ctx
	ctx, cancel := attemptContext(ctx, c.cfg.AttemptTimeout+req.serverTime)
	defer cancel()
	u := base + req.path
	if q := req.queryText(); q != "" {
		u += "?" + q
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
	c.authorize(hr)
	resp, err := c.hc.Do(hr)
	if err != nil {
		err = transportError(base, err)
		if _, ok := errors.AsType[*TransportError](err); ok && parent.Err() == nil {
			c.setDown(base, true) // not when the caller gave up first
		}
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswerBytes+1))
	if err != nil {
		if parent.Err() == nil {
			c.setDown(base, true)
		}
		return answer{}, &TransportError{endpoint: base, err: fmt.Errorf("read answer: %w", err), sent: true}
	}
	c.setDown(base, false)
	if len(b) > MaxAnswerBytes {
		return answer{}, &TransportError{endpoint: base, err: fmt.Errorf("answer longer than %d bytes", MaxAnswerBytes), sent: true}
	}
	return answer{status: resp.StatusCode, body: b}, nil
}

// authorize adds the Client's token, if any, to hr.
func (c *conn) authorize(hr *http.Request) {
	if c.cfg.Token != "" {
		hr.Header.Set("Authorization", "Bearer "+c.cfg.Token)
	}
}

// HandshakeError is a TLS handshake with a node that failed: the node's
// certificate is not trusted, or the node refused the Client's (or its lack of
// one). The request was not carried out, and retrying does not help: the
// Client returns it at once.
type HandshakeError struct {
	Endpoint string
	Err      error
}

func (e *HandshakeError) Error() string {
	return e.Endpoint + ": TLS handshake: " + e.Err.Error()
}

func (e *HandshakeError) Unwrap() error { return e.Err }

// transportError classifies err, the failure of an exchange with base that got
// no answer: a *HandshakeError or a *TransportError.
func transportError(base string, err error) error {
	var (
		verify    *tls.CertificateVerificationError
		alert     tls.AlertError
		authority x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
	)
	// crypto/tls reports an alert from the node (bad_certificate,
	// certificate_required, unknown_ca, ...) as a *net.OpError "remote error".
	oe, remote := errors.AsType[*net.OpError](err)
	remote = remote && oe.Op == "remote error"
	if remote || errors.As(err, &verify) || errors.As(err, &alert) || errors.As(err, &authority) || errors.As(err, &hostname) || errors.As(err, &invalid) {
		return &HandshakeError{Endpoint: base, Err: err}
	}
	return &TransportError{endpoint: base, err: err, sent: !dialFailed(err)}
}

// dialFailed reports whether err happened before a connection was made.
func dialFailed(err error) bool {
	oe, ok := errors.AsType[*net.OpError](err)
	return ok && oe.Op == "dial"
}

// classify turns a non-2xx answer into its wire code and error. An answer
// without an error object (from a proxy, say) gets the code "http_<status>",
// but unauthenticated for a 401 and forbidden for a 403.
func classify(a answer) (string, error) {
	var body struct {
		Error *wire.ErrorBody `json:"error"`
	}
	if json.Unmarshal(a.body, &body) == nil && body.Error != nil && body.Error.Code != "" {
		if le, ok := leaseError(body.Error.Code, a.body); ok {
			return body.Error.Code, le
		}
		if ce, ok := compactedError(body.Error.Code, a.body); ok {
			return body.Error.Code, ce
		}
		return body.Error.Code, body.Error.Err()
	}
	code := "http_" + strconv.Itoa(a.status)
	switch a.status {
	case http.StatusUnauthorized: // from a proxy or a handler without the table
		code = wire.CodeUnauthenticated
	case http.StatusForbidden:
		code = wire.CodeForbidden
	}
	msg := strings.TrimSpace(string(a.body))
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	if msg == "" {
		msg = http.StatusText(a.status)
	}
	return code, &wire.Error{Code: code, Message: msg}
}

// refused reports whether code says the request was not carried out and may be
// carried out by another node or later.
func refused(code string) bool {
	return wire.RetryableCode(code) || code == "http_503"
}

// ambiguousCode reports whether code leaves open whether the request was
// carried out.
func ambiguousCode(code string) bool {
	return code == wire.CodeTimeout || code == "http_502" || code == "http_504"
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
func (c *conn) callContext(ctx context.Context, serverTime time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, max(c.cfg.Timeout, serverTime+c.cfg.AttemptTimeout))
}

// pause waits the backoff before retry number attempt (from 1), or until ctx
// ends.
func (c *conn) pause(ctx context.Context, attempt int) error {
	d := c.cfg.MaxBackoff
	if shift := attempt - 1; shift < 30 {
		d = min(c.cfg.MinBackoff<<shift, c.cfg.MaxBackoff)
	}
	d = d/2 + rand.N(d/2+1) // jitter: between half and all of d
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
func (c *conn) afterRefusal(ctx context.Context, base, code string) string {
	if code == wire.CodeNotLeader {
		if leader, ok := c.learnLeader(ctx, base); ok {
			return leader
		}
	}
	return c.next(base)
}

// learnLeader asks base for the leader's HTTP address and prefers it.
func (c *conn) learnLeader(ctx context.Context, base string) (string, bool) {
	st, err := c.ownView(ctx, base)
	if err != nil {
		return "", false
	}
	leader, ok := leaderURL(base, st.LeaderHTTPAddr)
	if ok {
		c.prefer(leader)
		if c.streams != nil {
			c.streams.setLeader(base, st.LeaderHTTPAddr)
		}
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
		u, err := NormalizeBaseURL(addr)
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
func (c *conn) call(ctx context.Context, req request, idempotent bool, out any) error {
	ctx, cancel := c.callContext(ctx, req.serverTime)
	defer cancel()
	base, err := c.first()
	if err != nil {
		return err
	}
	// last is the last failure; answered the last refusal a node answered
	// (no_leader, …), which says more than a node that did not answer: a
	// call that gives up reports it, when there is one.
	var last, answered error
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if err := c.pause(ctx, attempt); err != nil {
				return giveUp(cmp.Or(answered, last), err)
			}
		}
		a, err := c.roundTrip(ctx, base, req)
		if te, ok := errors.AsType[*TransportError](err); ok {
			if ctx.Err() != nil {
				return giveUp(cmp.Or(answered, last), ctx.Err())
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
			last, answered, base = aerr, aerr, c.afterRefusal(ctx, base, code)
		case idempotent && ambiguousCode(code):
			last, answered, base = aerr, aerr, c.next(base)
		default:
			return aerr
		}
	}
}

// callAt sends req to base once and decodes a 2xx answer into out.
func (c *conn) callAt(ctx context.Context, base string, req request, out any) error {
	b, err := NormalizeBaseURL(base)
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
