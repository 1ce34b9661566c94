package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Leases on the wire (docs/leases.md):
//
//	PUT    /v1/leases/{name}   {"holder","ttl"[,"token"]}  acquire, or renew with token
//	DELETE /v1/leases/{name}?holder=H&token=N               release
//	GET    /v1/leases/{name}[?wait=30s&after_token=N]       read, or long-poll
//	GET    /v1/leases                                       every live lease
//
// The name is the rest of the path, with the rules of a key.

// TTL bounds of a lease: part of the contract, like the store's.
const (
	MinLeaseTTL         = time.Second
	MaxLeaseTTL         = time.Hour
	MaxLeaseHolderBytes = 128
)

// Wire codes of the lease answers, both 409.
const (
	// CodeLeaseHeld: another holder has the lease.
	CodeLeaseHeld = "lease_held"
	// CodeFenced: the token is not the lease's current one, the lease
	// expired, or another holder has it: a renewal, release or fenced
	// transaction refused.
	CodeFenced = "fenced"
)

// Sentinels of the lease answers; a *LeaseError is one of them (errors.Is).
var (
	ErrLeaseHeld = errors.New("lease held by another holder")
	ErrFenced    = errors.New("fenced: not the lease's current token")
)

// Lease is a lease as the API shows it. TTL and ExpiresIn are Go durations
// ("5s", "4.2s").
type Lease struct {
	Name      string `json:"name"`
	Holder    string `json:"holder"`
	Token     uint64 `json:"token"`
	TTL       string `json:"ttl,omitempty"`
	ExpiresIn string `json:"expires_in"`
}

// Remaining returns ExpiresIn as a duration, 0 if it does not parse.
func (l Lease) Remaining() time.Duration {
	d, _ := time.ParseDuration(l.ExpiresIn)
	return d
}

// LeaseResult is the answer of PUT /v1/leases/{name}. Acquired is true when
// this request granted the lease (a new token); false for a renewal and for
// an acquire by the holder that already held it (nothing changed).
type LeaseResult struct {
	Lease
	Acquired bool `json:"acquired"`
}

// LeaseList is the answer of GET /v1/leases.
type LeaseList struct {
	Leases []Lease `json:"leases"`
}

// LeaseReleased is the answer of DELETE /v1/leases/{name}.
type LeaseReleased struct {
	Name     string `json:"name"`
	Released bool   `json:"released"`
}

// LeaseRequest is an acquire (Token 0) or a renewal of the lease Name.
type LeaseRequest struct {
	Name   string
	Holder string
	TTL    time.Duration
	Token  uint64
}

// leaseBody is the body of PUT /v1/leases/{name}.
type leaseBody struct {
	Holder string `json:"holder"`
	TTL    string `json:"ttl"`
	Token  uint64 `json:"token,omitempty"`
}

// LeaseError is a lease_held or fenced answer, with the lease as it is.
type LeaseError struct {
	Code    string // CodeLeaseHeld or CodeFenced
	Message string
	Lease   Lease
}

func (e *LeaseError) Error() string { return e.Code + ": " + e.Message }

// Unwrap gives the *Error of the code, which maps the answer through the
// code table.
func (e *LeaseError) Unwrap() error { return &Error{Code: e.Code, Message: e.Message} }

// Is makes errors.Is(err, ErrLeaseHeld) or (err, ErrFenced) true by code.
func (e *LeaseError) Is(target error) bool {
	return (target == ErrLeaseHeld && e.Code == CodeLeaseHeld) || (target == ErrFenced && e.Code == CodeFenced)
}

// leaseErrorAnswer is the body of a lease_held or fenced answer.
type leaseErrorAnswer struct {
	Error ErrorBody `json:"error"`
	Lease *Lease    `json:"lease,omitempty"`
}

// LeaseBackend is what the lease handlers need from a node; a Backend that
// does not implement it answers the lease paths 404.
//
// Errors as for Backend, plus *LeaseError. Lease writes go through the log:
// a node that is not the leader passes them on (forwarded false) or, asked
// by another node (forwarded true), answers ErrNotLeader.
type LeaseBackend interface {
	// AcquireLease acquires (req.Token 0) or renews the lease.
	AcquireLease(ctx context.Context, req LeaseRequest, forwarded bool) (LeaseResult, error)
	// ReleaseLease releases the lease that holder holds with token.
	ReleaseLease(ctx context.Context, name, holder string, token uint64, forwarded bool) error
	// Lease reads a live lease, ErrNotFound when it is free or expired. With
	// wait > 0 it waits up to wait: with afterToken 0 for the lease to be
	// held, else until it is held with a token above afterToken or free;
	// after wait it answers as it is.
	Lease(ctx context.Context, name string, wait time.Duration, afterToken uint64) (Lease, error)
	// Leases lists the live leases in name order.
	Leases(ctx context.Context) ([]Lease, error)
}

// leases returns the LeaseBackend, or answers 404 and returns nil.
func (s *Server) leases(w http.ResponseWriter, r *http.Request) LeaseBackend {
	lb, ok := s.b.(LeaseBackend)
	if !ok {
		s.handleNotFound(w, r)
		return nil
	}
	return lb
}

// leaseName reads and checks the {name} of a lease path.
func (s *Server) leaseName(r *http.Request) (string, error) {
	name, err := pathVar(r, "name")
	if err != nil {
		return "", err
	}
	if err := checkKey(name, "name", s.cfg.MaxKeyBytes); err != nil {
		return "", asError(err, CodeInvalidParam)
	}
	return name, nil
}

// checkHolder checks a lease holder: 1 to MaxLeaseHolderBytes bytes of text.
func checkHolder(h, path string) error {
	switch {
	case h == "":
		return fieldErr(path, "empty")
	case len(h) > MaxLeaseHolderBytes:
		return fieldErr(path, "%d bytes, limit %d", len(h), MaxLeaseHolderBytes)
	}
	return checkText(h, path)
}

// decodeLeaseBody decodes and checks the body of PUT /v1/leases/{name}.
func decodeLeaseBody(body []byte) (LeaseRequest, error) {
	var req LeaseRequest
	raw, err := jsonBody(body)
	if err != nil {
		return req, err
	}
	fields, err := objectFields(raw, "")
	if err != nil {
		return req, asError(err, CodeBadRequest)
	}
	var hasHolder, hasTTL bool
	for _, f := range fields {
		switch f.name {
		case "holder":
			if req.Holder, err = stringValue(f.raw, f.name); err == nil {
				err = checkHolder(req.Holder, f.name)
			}
			hasHolder = true
		case "ttl":
			var s string
			if s, err = stringValue(f.raw, f.name); err == nil {
				req.TTL, err = leaseTTL(s)
			}
			hasTTL = true
		case "token":
			if req.Token, err = uintValue(f.raw, f.name); err == nil && req.Token == 0 {
				err = fieldErr(f.name, "must be positive (leave it out to acquire)")
			}
		default:
			err = fieldErr(f.name, "unknown field")
		}
		if err != nil {
			return req, asError(err, CodeBadRequest)
		}
	}
	switch {
	case !hasHolder:
		return req, &Error{Code: CodeBadRequest, Message: "holder: missing"}
	case !hasTTL:
		return req, &Error{Code: CodeBadRequest, Message: "ttl: missing"}
	}
	return req, nil
}

// leaseTTL parses a TTL within MinLeaseTTL..MaxLeaseTTL.
func leaseTTL(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return 0, fieldErr("ttl", "%q: want a duration such as 5s", s)
	case d < MinLeaseTTL || d > MaxLeaseTTL:
		return 0, fieldErr("ttl", "%s: want %s to %s", s, MinLeaseTTL, MaxLeaseTTL)
	}
	return d, nil
}

// handleLeasePut serves PUT /v1/leases/{name}.
func (s *Server) handleLeasePut(w http.ResponseWriter, r *http.Request) {
	lb := s.leases(w, r)
	if lb == nil {
		return
	}
	if _, err := parseQuery(r); err != nil {
		s.writeError(w, err)
		return
	}
	forwarded, err := forwardedHeader(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	name, err := s.leaseName(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	body, err := readBody(w, r, s.cfg.MaxBodyBytes, s.cfg.BodyTimeout)
	if err != nil {
		s.writeError(w, err)
		return
	}
	req, err := decodeLeaseBody(body)
	if err != nil {
		s.writeError(w, err)
		return
	}
	req.Name = name
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.DefaultTimeout)
	defer cancel()
	res, err := lb.AcquireLease(ctx, req, forwarded)
	if err != nil {
		s.writeLeaseError(w, err)
		return
	}
	s.writeJSON(w, http.StatusOK, res)
}

// handleLeaseDelete serves DELETE /v1/leases/{name}?holder=H&token=N.
func (s *Server) handleLeaseDelete(w http.ResponseWriter, r *http.Request) {
	lb := s.leases(w, r)
	if lb == nil {
		return
	}
	q, err := parseQuery(r, "holder", "token")
	if err != nil {
		s.writeError(w, err)
		return
	}
	forwarded, err := forwardedHeader(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	name, err := s.leaseName(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	holder, ok := q.get("holder")
	if !ok {
		s.writeError(w, &Error{Code: CodeInvalidParam, Message: "holder: missing"})
		return
	}
	if err := checkHolder(holder, "holder"); err != nil {
		s.writeError(w, asError(err, CodeInvalidParam))
		return
	}
	token, err := positiveParam(q, "token")
	if err != nil {
		s.writeError(w, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.DefaultTimeout)
	defer cancel()
	if err := lb.ReleaseLease(ctx, name, holder, token, forwarded); err != nil {
		s.writeLeaseError(w, err)
		return
	}
	s.writeJSON(w, http.StatusOK, LeaseReleased{Name: name, Released: true})
}

// positiveParam reads a required query parameter of a positive integer.
func positiveParam(q query, name string) (uint64, error) {
	v, ok := q.get(name)
	if !ok {
		return 0, &Error{Code: CodeInvalidParam, Message: name + ": missing"}
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n == 0 {
		return 0, &Error{Code: CodeInvalidParam, Message: fmt.Sprintf("%s=%q: want a positive integer", name, v)}
	}
	return n, nil
}

// handleLeaseGet serves GET /v1/leases/{name}[?wait=D&after_token=N].
func (s *Server) handleLeaseGet(w http.ResponseWriter, r *http.Request) {
	lb := s.leases(w, r)
	if lb == nil {
		return
	}
	q, err := parseQuery(r, "wait", "after_token")
	if err != nil {
		s.writeError(w, err)
		return
	}
	name, err := s.leaseName(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	wait, err := q.duration("wait", 0, s.cfg.MaxTimeout, true)
	if err != nil {
		s.writeError(w, err)
		return
	}
	var after uint64
	if v, ok := q.get("after_token"); ok {
		if after, err = strconv.ParseUint(v, 10, 64); err != nil {
			s.writeError(w, &Error{Code: CodeInvalidParam, Message: fmt.Sprintf("after_token=%q: want an integer", v)})
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), wait+s.cfg.DefaultTimeout)
	defer cancel()
	l, err := lb.Lease(ctx, name, wait, after)
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.writeJSON(w, http.StatusOK, l)
}

// handleLeaseList serves GET /v1/leases.
func (s *Server) handleLeaseList(w http.ResponseWriter, r *http.Request) {
	lb := s.leases(w, r)
	if lb == nil {
		return
	}
	if _, err := parseQuery(r); err != nil {
		s.writeError(w, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.DefaultTimeout)
	defer cancel()
	ls, err := lb.Leases(ctx)
	if err != nil {
		s.writeError(w, err)
		return
	}
	if ls == nil {
		ls = []Lease{}
	}
	s.writeJSON(w, http.StatusOK, LeaseList{Leases: ls})
}

// writeLeaseError answers err; a *LeaseError gets its lease in the body.
func (s *Server) writeLeaseError(w http.ResponseWriter, err error) {
	le, ok := errors.AsType[*LeaseError](err)
	if !ok {
		s.writeError(w, err)
		return
	}
	if rec, ok := w.(*recorder); ok {
		rec.err = err
	}
	s.writeJSON(w, http.StatusConflict, leaseErrorAnswer{Error: ErrorBody{Code: le.Code, Message: le.Message}, Lease: &le.Lease})
}

// leaseError returns the *LeaseError of an error answer's body, if it is one.
func leaseError(code string, body []byte) (*LeaseError, bool) {
	if code != CodeLeaseHeld && code != CodeFenced {
		return nil, false
	}
	var a leaseErrorAnswer
	if json.Unmarshal(body, &a) != nil || a.Lease == nil {
		return nil, false
	}
	return &LeaseError{Code: code, Message: a.Error.Message, Lease: *a.Lease}, true
}

// leasePath is the escaped path of a lease.
func leasePath(name string) string { return "/v1/leases/" + url.PathEscape(name) }

func acquireRequest(req LeaseRequest, forwarded bool) (request, error) {
	body, err := marshalJSON(leaseBody{Holder: req.Holder, TTL: req.TTL.String(), Token: req.Token})
	if err != nil {
		return request{}, fmt.Errorf("encode lease request: %w", err)
	}
	r := request{method: http.MethodPut, path: leasePath(req.Name), body: body}
	if forwarded {
		r.header = http.Header{HeaderForwarded: {"1"}}
	}
	return r, nil
}

// AcquireLease acquires the lease name for holder with ttl through any node:
// the lease, whose Token fences holder's writes, or a *LeaseError
// (ErrLeaseHeld) naming the current holder. An acquire by the holder that
// has it answers the current lease (Acquired false), so a retry is safe.
func (c *Client) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (LeaseResult, error) {
	return c.putLease(ctx, LeaseRequest{Name: name, Holder: holder, TTL: ttl})
}

// RenewLease extends the lease that holder holds with token by ttl from the
// time the leader applies it; a *LeaseError (ErrFenced) when the token is not
// current or the lease expired.
func (c *Client) RenewLease(ctx context.Context, name, holder string, token uint64, ttl time.Duration) (LeaseResult, error) {
	return c.putLease(ctx, LeaseRequest{Name: name, Holder: holder, TTL: ttl, Token: token})
}

func (c *Client) putLease(ctx context.Context, req LeaseRequest) (LeaseResult, error) {
	r, err := acquireRequest(req, false)
	if err != nil {
		return LeaseResult{}, err
	}
	var res LeaseResult
	err = c.call(ctx, r, true, &res)
	return res, err
}

// AcquireLeaseVia sends an acquire or renewal to the node at baseURL once,
// marked as forwarded: a node passes one on to the leader with it.
func (c *Client) AcquireLeaseVia(ctx context.Context, baseURL string, req LeaseRequest) (LeaseResult, error) {
	r, err := acquireRequest(req, true)
	if err != nil {
		return LeaseResult{}, err
	}
	var res LeaseResult
	err = c.callAt(ctx, baseURL, r, &res)
	return res, err
}

func releaseRequest(name, holder string, token uint64, forwarded bool) request {
	r := request{method: http.MethodDelete, path: leasePath(name), query: url.Values{"holder": {holder}, "token": {strconv.FormatUint(token, 10)}}}
	if forwarded {
		r.header = http.Header{HeaderForwarded: {"1"}}
	}
	return r
}

// ReleaseLease releases the lease that holder holds with token, through any
// node; a free lease stays free (nil). A *LeaseError (ErrFenced) means
// another token holds it, which the release left alone.
func (c *Client) ReleaseLease(ctx context.Context, name, holder string, token uint64) error {
	return c.call(ctx, releaseRequest(name, holder, token, false), true, nil)
}

// ReleaseLeaseVia is ReleaseLease sent to the node at baseURL once, marked
// as forwarded.
func (c *Client) ReleaseLeaseVia(ctx context.Context, baseURL, name, holder string, token uint64) error {
	return c.callAt(ctx, baseURL, releaseRequest(name, holder, token, true), nil)
}

// Lease reads a live lease from any node (ErrNotFound when free). With wait
// > 0 it long-polls as LeaseBackend.Lease says.
func (c *Client) Lease(ctx context.Context, name string, wait time.Duration, afterToken uint64) (Lease, error) {
	q := waitQuery(wait)
	if afterToken > 0 {
		q.Set("after_token", strconv.FormatUint(afterToken, 10))
	}
	var l Lease
	err := c.call(ctx, request{method: http.MethodGet, path: leasePath(name), query: q, serverTime: wait}, true, &l)
	return l, err
}

// Leases lists the live leases, from any node.
func (c *Client) Leases(ctx context.Context) ([]Lease, error) {
	var ls LeaseList
	err := c.call(ctx, request{method: http.MethodGet, path: "/v1/leases"}, true, &ls)
	return ls.Leases, err
}
