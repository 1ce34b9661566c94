package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/auth"
)

// LeaseBackend is what the lease handlers need from a node; a Backend that
// does not implement it answers the lease paths 404.
//
// Errors as for Backend, plus *LeaseError. Lease writes go through the log:
// a node that is not the leader passes them on (forwarded false) or, asked
// by another node (forwarded true), answers ErrNotLeader.
type LeaseBackend interface {
	// AcquireLease acquires (req.Token 0) or renews the lease.
	AcquireLease(ctx context.Context, req wire.LeaseRequest, forwarded bool) (wire.LeaseResult, error)
	// ReleaseLease releases the lease that holder holds with token.
	ReleaseLease(ctx context.Context, name, holder string, token uint64, forwarded bool) error
	// Lease reads a live lease, ErrNotFound when it is free or expired. With
	// wait > 0 it waits up to wait: with afterToken 0 for the lease to be
	// held, else until it is held with a token above afterToken or free;
	// after wait it answers as it is. It reads at the consistency of opts,
	// as Backend.Get reads a key.
	Lease(ctx context.Context, name string, wait time.Duration, afterToken uint64, opts wire.ReadOptions) (wire.Lease, error)
	// Leases lists the live leases in name order, as Lease reads one.
	Leases(ctx context.Context, opts wire.ReadOptions) ([]wire.Lease, error)
}

// leaseHandlers serve /v1/leases. Without a LeaseBackend (lb nil) the
// Server routes those paths to 404 instead.
type leaseHandlers struct {
	*answers
	lb LeaseBackend
}

// leaseName reads and checks the {name} of a lease path.
func (h *leaseHandlers) leaseName(r *http.Request) (string, error) {
	name, err := pathVar(r, "name")
	if err != nil {
		return "", err
	}
	if err := checkKey(name, "name", h.cfg.MaxKeyBytes); err != nil {
		return "", asError(err, wire.CodeInvalidParam)
	}
	return name, nil
}

// checkHolder checks a lease holder: 1 to MaxLeaseHolderBytes bytes of text.
func checkHolder(h, path string) error {
	switch {
	case h == "":
		return fieldErr(path, wire.MsgFieldEmpty)
	case len(h) > wire.MaxLeaseHolderBytes:
		return fieldErr(path, wire.MsgFieldTooLong, len(h), wire.MaxLeaseHolderBytes)
	}
	return checkText(h, path)
}

// decodeLeaseBody decodes and checks the body of PUT /v1/leases/{name}.
func decodeLeaseBody(body []byte) (wire.LeaseRequest, error) {
	var req wire.LeaseRequest
	var hasHolder, hasTTL bool
	err := decodeObject(body, func(f field) error {
		var err error
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
				err = fieldErr(f.name, wire.MsgFieldTokenNotPositive)
			}
		default:
			err = fieldErr(f.name, wire.MsgFieldUnknown)
		}
		return err
	})
	switch {
	case err != nil:
		return req, err
	case !hasHolder:
		return req, asError(fieldErr("holder", wire.MsgFieldMissing), wire.CodeBadRequest)
	case !hasTTL:
		return req, asError(fieldErr("ttl", wire.MsgFieldMissing), wire.CodeBadRequest)
	}
	return req, nil
}

// leaseTTL parses a TTL within MinLeaseTTL..MaxLeaseTTL.
func leaseTTL(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return 0, fieldErr("ttl", wire.MsgFieldDuration, s)
	case d < wire.MinLeaseTTL || d > wire.MaxLeaseTTL:
		return 0, fieldErr("ttl", wire.MsgFieldBetween, s, wire.MinLeaseTTL, wire.MaxLeaseTTL)
	}
	return d, nil
}

// changeTarget reads what PUT and DELETE /v1/leases/{name} both take, in
// this order: the query, with the parameters allowed; the forwarded header;
// the lease's name, which the credential must be allowed to touch.
func (h *leaseHandlers) changeTarget(r *http.Request, allowed ...string) (q query, name string, forwarded bool, err error) {
	if q, err = parseQuery(r, allowed...); err != nil {
		return nil, "", false, err
	}
	if forwarded, err = forwardedHeader(r); err != nil {
		return nil, "", false, err
	}
	if name, err = h.leaseName(r); err != nil {
		return nil, "", false, err
	}
	return q, name, forwarded, checkTouches(auth.FromContext(r.Context()), "name", name)
}

// handlePut serves PUT /v1/leases/{name}.
func (h *leaseHandlers) handlePut(w http.ResponseWriter, r *http.Request) {
	_, name, forwarded, err := h.changeTarget(r)
	if err != nil {
		h.writeError(w, err)
		return
	}
	req, ok := readDecoded(h.answers, w, r, decodeLeaseBody)
	if !ok {
		return
	}
	req.Name = name
	ctx, cancel := context.WithTimeout(r.Context(), h.cfg.DefaultTimeout)
	defer cancel()
	res, err := h.lb.AcquireLease(ctx, req, forwarded)
	if err != nil {
		h.writeLeaseError(w, err)
		return
	}
	h.writeJSON(w, http.StatusOK, res)
}

// handleDelete serves DELETE /v1/leases/{name}?holder=H&token=N.
func (h *leaseHandlers) handleDelete(w http.ResponseWriter, r *http.Request) {
	q, name, forwarded, err := h.changeTarget(r, "holder", "token")
	if err != nil {
		h.writeError(w, err)
		return
	}
	holder, ok := q.get("holder")
	if !ok {
		h.writeError(w, wire.New(wire.MsgParamMissing, "holder", "the holder that took the lease"))
		return
	}
	if err := checkHolder(holder, "holder"); err != nil {
		h.writeError(w, paramError("holder", holder, err))
		return
	}
	token, err := positiveParam(q, "token")
	if err != nil {
		h.writeError(w, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.cfg.DefaultTimeout)
	defer cancel()
	if err := h.lb.ReleaseLease(ctx, name, holder, token, forwarded); err != nil {
		h.writeLeaseError(w, err)
		return
	}
	h.writeJSON(w, http.StatusOK, wire.LeaseReleased{Name: name, Released: true})
}

// positiveParam reads a required query parameter of a positive integer.
func positiveParam(q query, name string) (uint64, error) {
	v, ok := q.get(name)
	if !ok {
		return 0, wire.New(wire.MsgParamMissing, name, "a positive integer")
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n == 0 {
		return 0, wire.New(wire.MsgParamValue, name, v, "a positive integer")
	}
	return n, nil
}

// handleGet serves GET /v1/leases/{name}[?wait=D&after_token=N].
func (h *leaseHandlers) handleGet(w http.ResponseWriter, r *http.Request) {
	serveRead(h.answers, w, r, []string{"wait", "after_token"}, h.getArg, func(ctx context.Context, x leaseRead, opts wire.ReadOptions) (wire.Lease, error) {
		l, err := h.lb.Lease(ctx, x.name, x.wait, x.after, opts)
		return scopeLease(seer(ctx), l), named(err, wire.MsgLeaseNotFound, x.name)
	})
}

// leaseRead is the argument of GET /v1/leases/{name}.
type leaseRead struct {
	name  string
	wait  time.Duration
	after uint64
}

// getArg reads the {name}, the wait and the after_token of
// GET /v1/leases/{name}.
func (h *leaseHandlers) getArg(r *http.Request, q query) (leaseRead, time.Duration, error) {
	var x leaseRead
	var err error
	if x.name, err = h.leaseName(r); err != nil {
		return x, 0, err
	}
	if err = checkSees(seer(r.Context()), "name", x.name); err != nil {
		return x, 0, err
	}
	if x.wait, err = q.duration("wait", 0, h.cfg.MaxTimeout, true); err != nil {
		return x, 0, err
	}
	if v, ok := q.get("after_token"); ok {
		if x.after, err = strconv.ParseUint(v, 10, 64); err != nil {
			return x, 0, wire.New(wire.MsgParamValue, "after_token", v, "an integer of 0 or more")
		}
	}
	return x, x.wait, nil
}

// handleList serves GET /v1/leases.
func (h *leaseHandlers) handleList(w http.ResponseWriter, r *http.Request) {
	serveRead(h.answers, w, r, nil, noArg, func(ctx context.Context, _ struct{}, opts wire.ReadOptions) (wire.LeaseList, error) {
		ls, err := h.lb.Leases(ctx, opts)
		ls = scopeLeases(seer(ctx), ls)
		if ls == nil {
			ls = []wire.Lease{}
		}
		return wire.LeaseList{Leases: ls}, err
	})
}

// writeLeaseError answers err; a *LeaseError gets its lease in the body.
func (h *leaseHandlers) writeLeaseError(w http.ResponseWriter, err error) {
	le, ok := errors.AsType[*wire.LeaseError](err)
	if !ok {
		h.writeError(w, err)
		return
	}
	if rec, ok := w.(*recorder); ok {
		rec.err = err
	}
	h.writeJSON(w, http.StatusConflict, wire.LeaseErrorAnswer{Error: wire.ErrorBody{Code: le.Code, Message: le.Message}, Lease: &le.Lease})
}
