package api

import (
	"context"
	"net/http"
	"time"
)

// serveRead answers a read the way every read handler does: it parses the
// query, allowing only params; arg reads the read's argument from the
// request and its query, and the wait that extends the read's deadline past
// Config.DefaultTimeout; call asks the backend. An error from any of them is
// answered through the code table (writeError), a result as 200 JSON.
func serveRead[A, R any](a *answers, w http.ResponseWriter, r *http.Request, params []string,
	arg func(r *http.Request, q query) (A, time.Duration, error), call func(ctx context.Context, x A) (R, error)) {
	q, err := parseQuery(r, params...)
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
	res, err := call(ctx, x)
	if err == nil && wait > 0 && !a.credentialHolds(r) {
		err = errCredentialGone()
	}
	if err != nil {
		a.writeError(w, err)
		return
	}
	a.writeJSON(w, http.StatusOK, res)
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
