package api

import (
	"context"
	"net/http"
	"time"

	"github.com/txlog/txlog/api/wire"
)

// serveRead answers a read the way every read handler does: it parses the
// query, allowing only params and consistency; readOptions reads the
// consistency and the forwarded header that every read takes; arg reads the
// read's argument from the request and its query, and the wait that extends
// the read's deadline past Config.DefaultTimeout; call asks the backend. An
// error from any of them is answered through the code table (writeError), a
// result as 200 JSON.
func serveRead[A, R any](a *answers, w http.ResponseWriter, r *http.Request, params []string,
	arg func(r *http.Request, q query) (A, time.Duration, error), call func(ctx context.Context, x A, opts wire.ReadOptions) (R, error)) {
	q, err := parseQuery(r, append(params, paramConsistency)...)
	if err != nil {
		a.writeError(w, err)
		return
	}
	opts, err := readOptions(r, q)
	if err != nil {
		a.writeError(w, err)
		return
	}
	x, wait, err := arg(r, q)
	if err == nil && wait > 0 {
		if err = a.streams.take(); err == nil {
			defer a.streams.give()
		}
	}
	if err != nil {
		a.writeError(w, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), wait+a.cfg.DefaultTimeout)
	defer cancel()
	res, err := call(ctx, x, opts)
	if err == nil && wait > 0 && !a.credentialHolds(r) {
		err = errCredentialGone()
	}
	if err != nil {
		a.writeError(w, err)
		return
	}
	a.writeJSON(w, http.StatusOK, res)
}

// paramConsistency is the query parameter of every read's consistency
// level (docs/api.md, "Consistency").
const paramConsistency = "consistency"

// consistencies are the consistency levels a read takes, its default
// first; the range a node forwards (range.go) takes the same.
var consistencies = []string{wire.ConsistencyLinearizable, wire.ConsistencyLeader, wire.ConsistencyStale}

// readOptions reads what every read takes: its consistency level
// (linearizable when absent) and the forwarded header.
func readOptions(r *http.Request, q query) (wire.ReadOptions, error) {
	var opts wire.ReadOptions
	var err error
	if opts.Consistency, err = q.choice(paramConsistency, consistencies...); err != nil {
		return opts, err
	}
	opts.Forwarded, err = forwardedHeader(r)
	return opts, err
}

// noArg is the arg of serveRead for a read without arguments.
func noArg(*http.Request, query) (struct{}, time.Duration, error) { return struct{}{}, 0, nil }

// readDecoded reads the request's body within Config.MaxBodyBytes and
// Config.BodyTimeout and decodes it with decode. On an error it has answered
// it (writeError) and returns false.
func readDecoded[T any](a *answers, w http.ResponseWriter, r *http.Request, decode func([]byte) (T, error)) (T, bool) {
	var x T
	body, err := readBody(w, r, a.cfg.MaxBodyBytes, a.cfg.BodyTimeout)
	if err == nil {
		x, err = decode(body)
	}
	if err != nil {
		a.writeError(w, err)
		return x, false
	}
	return x, true
}
