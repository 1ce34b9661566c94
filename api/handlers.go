package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/auth"
	"github.com/txlog/txlog/txid"
)

// txHandlers serve the writes and their lookups, the reads of keys, and the
// internal proposals (POST /v1/internal/propose and its propose streams,
// stream.go).
type txHandlers struct {
	*answers
	b Backend
}

// handleSubmit serves POST /v1/tx.
//
// The answer's status follows the transaction's: 200 committed, 409 rejected,
// 202 pending, and 503 unknown with the TxResult fields plus an error object.
func (h *txHandlers) handleSubmit(w http.ResponseWriter, r *http.Request) {
	q, err := parseQuery(r, "timeout", "ack")
	if err != nil {
		h.writeError(w, err)
		return
	}
	opts, err := h.submitOptions(q)
	if err != nil {
		h.writeError(w, err)
		return
	}
	body, err := readBody(w, r, h.cfg.MaxBodyBytes, h.cfg.BodyTimeout)
	if err != nil {
		h.writeError(w, err)
		return
	}
	tx, err := decodeTxBody(body, h.lim)
	if err != nil {
		h.writeError(w, err)
		return
	}
	if err := mergeIdempotencyHeader(r, &tx); err != nil {
		h.writeError(w, err)
		return
	}
	h.submit(w, r, tx, opts)
}

// submit runs a decoded transaction and answers it as handleSubmit says.
func (h *txHandlers) submit(w http.ResponseWriter, r *http.Request, tx wire.TxRequest, opts wire.SubmitOptions) {
	h.writeSubmitted(w, h.submitTx(r.Context(), tx, opts))
}

// submitted is the outcome of a write, as POST /v1/tx answers it: res with
// status (200, 409, 202, or 503 when the outcome is unknown: res then carries
// the error object, and err is its cause, for the request log), or, when
// status is 0, the error answer of err.
type submitted struct {
	status int
	res    wire.TxResult
	err    error
}

// submitTx runs a decoded transaction, on behalf of the credential of ctx:
// the core of POST /v1/tx, of POST /v1/consumers/{group}/offset and of the
// client stream's requests (txstream.go).
//
// With auth on, a transaction that touches a key, group or lease outside the
// credential's scope, or a reserved one, is refused 403 (scope.go).
func (h *txHandlers) submitTx(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) submitted {
	if err := checkTxScope(auth.FromContext(ctx), &tx, ""); err != nil {
		return submitted{err: err}
	}
	sctx, cancel := submitContext(ctx, h.b, opts.Timeout)
	defer cancel()
	res, err := h.b.Submit(sctx, tx, opts)
	sp := seer(ctx)
	res, err = scopeResult(sp, res), scopeSubmitErr(sp, tx.IdempotencyKey, err)
	if res.IdempotencyKey == "" {
		res.IdempotencyKey = tx.IdempotencyKey
	}
	if err != nil && !errors.Is(err, wire.ErrUnknownOutcome) {
		return submitted{err: err}
	}
	if err != nil || res.Status == wire.StatusUnknown {
		// The outcome is unknown: 503 with the fields of res, status
		// "unknown" and an error object with code unknown_outcome.
		if err == nil {
			err = wire.ErrUnknownOutcome
		}
		res.Status = wire.StatusUnknown
		res.Error = &wire.ErrorBody{Code: wire.CodeUnknownOutcome, Message: err.Error(), TxID: res.TxID}
		return submitted{status: http.StatusServiceUnavailable, res: res, err: err}
	}
	switch res.Status {
	case wire.StatusCommitted:
		return submitted{status: http.StatusOK, res: res}
	case wire.StatusRejected:
		return submitted{status: http.StatusConflict, res: res}
	case wire.StatusPending:
		return submitted{status: http.StatusAccepted, res: res}
	}
	return submitted{err: fmt.Errorf("backend: transaction %s has status %q", res.TxID, res.Status)}
}

// writeSubmitted writes the answer of a write.
func (a *answers) writeSubmitted(w http.ResponseWriter, s submitted) {
	switch s.status {
	case 0:
		a.writeError(w, s.err)
		return
	case http.StatusServiceUnavailable:
		if rec, ok := w.(*recorder); ok {
			rec.err = s.err
		}
		w.Header().Set("Retry-After", "1")
	}
	// writeJSON's bytes, without boxing res.
	status, b := a.submittedBody(s)
	w.WriteHeader(status)
	if _, err := w.Write(b); err != nil {
		a.log.Debug("write answer", "err", err)
	}
}

// submittedBody returns the status and the body (its last byte a newline)
// that writeSubmitted would write for s.
func (a *answers) submittedBody(s submitted) (int, []byte) {
	if s.status == 0 {
		status, b := a.errorAnswer(s.err)
		return status, append(b, '\n')
	}
	return s.status, append(wire.AppendTxResultJSON(make([]byte, 0, 256), &s.res), '\n')
}

// submitMessage runs the request of a client stream with query text q and
// payload: handleSubmit's steps on the message's parts, without an
// http.Request, a copy of the payload or an Idempotency-Key header, so that
// it is answered as the same POST /v1/tx would be (TestTxStreamSameAnswers).
func (h *txHandlers) submitMessage(ctx context.Context, q string, payload []byte) submitted {
	qp, err := parseRawQuery(q, "timeout", "ack")
	if err != nil {
		return submitted{err: err}
	}
	opts, err := h.submitOptions(qp)
	if err != nil {
		return submitted{err: err}
	}
	if int64(len(payload)) > h.cfg.MaxBodyBytes {
		return submitted{err: bodyTooLarge(h.cfg.MaxBodyBytes)}
	}
	tx, err := decodeTxBody(payload, h.lim)
	if err != nil {
		return submitted{err: err}
	}
	return h.submitTx(ctx, tx, opts)
}

// bodyTooLarge is the error of a body of more than limit bytes.
func bodyTooLarge(limit int64) error {
	return wire.New(wire.MsgBodyTooLarge, limit)
}

// mergeIdempotencyHeader takes the idempotency key from the Idempotency-Key
// header when the body has none; both may be given only when they are equal.
func mergeIdempotencyHeader(r *http.Request, tx *wire.TxRequest) error {
	vs := r.Header.Values(HeaderIdempotencyKey)
	if len(vs) == 0 {
		return nil
	}
	if len(vs) > 1 {
		return wire.New(wire.MsgHeaderRepeated, HeaderIdempotencyKey, len(vs))
	}
	h := vs[0]
	if err := checkIdempotencyKey(h, HeaderIdempotencyKey+" header"); err != nil {
		return asError(err, wire.CodeInvalidParam)
	}
	switch {
	case h == "":
		return wire.New(wire.MsgHeaderEmpty, HeaderIdempotencyKey)
	case tx.IdempotencyKey == "":
		tx.IdempotencyKey = strings.Clone(h) // not a part of the fast path's header string, which it would keep
	case tx.IdempotencyKey != h:
		return wire.New(wire.MsgHeaderDiffers, HeaderIdempotencyKey, h, tx.IdempotencyKey)
	}
	return nil
}

// handleSubmitBatch serves POST /v1/tx/batch: 200 with one result per
// transaction, each with its own status and, when it failed on its own, error.
// With auth on, a batch with a transaction outside the credential's scope is
// refused whole, 403 naming it (scope.go): none of it is submitted.
func (h *txHandlers) handleSubmitBatch(w http.ResponseWriter, r *http.Request) {
	q, err := parseQuery(r, "timeout", "ack")
	if err != nil {
		h.writeError(w, err)
		return
	}
	opts, err := h.submitOptions(q)
	if err != nil {
		h.writeError(w, err)
		return
	}
	if r.Header.Get(HeaderIdempotencyKey) != "" {
		h.writeError(w, wire.New(wire.MsgHeaderOnBatch, HeaderIdempotencyKey))
		return
	}
	body, err := readBody(w, r, h.cfg.MaxBodyBytes, h.cfg.BodyTimeout)
	if err != nil {
		h.writeError(w, err)
		return
	}
	req, err := decodeBatchBody(body, h.lim)
	if err != nil {
		h.writeError(w, err)
		return
	}
	p := auth.FromContext(r.Context())
	for i := range req.Txs {
		if err := checkTxScope(p, &req.Txs[i], fmt.Sprintf("txs[%d].", i)); err != nil {
			h.writeError(w, err)
			return
		}
	}
	ctx, cancel := submitContext(r.Context(), h.b, opts.Timeout)
	defer cancel()
	results, err := h.b.SubmitBatch(ctx, req.Txs, opts)
	if err != nil {
		h.writeError(w, err)
		return
	}
	if len(results) != len(req.Txs) {
		h.writeError(w, fmt.Errorf("backend: %d results for %d transactions", len(results), len(req.Txs)))
		return
	}
	sp := seer(r.Context())
	for i := range results {
		results[i] = scopeBatchError(sp, req.Txs[i].IdempotencyKey, scopeResult(sp, results[i]))
		if results[i].IdempotencyKey == "" {
			results[i].IdempotencyKey = req.Txs[i].IdempotencyKey
		}
	}
	h.writeJSON(w, http.StatusOK, wire.BatchResponse{Results: results})
}

// handlePropose serves POST /v1/internal/propose: frames of encoded
// transactions that another node accepted.
func (h *txHandlers) handlePropose(w http.ResponseWriter, r *http.Request) {
	q, err := parseQuery(r, proposeParams...)
	if err != nil {
		h.writeError(w, err)
		return
	}
	body, err := readBody(w, r, h.cfg.MaxInternalBodyBytes, h.cfg.BodyTimeout)
	if err != nil {
		h.writeError(w, err)
		return
	}
	results, err := h.propose(r.Context(), q, body)
	if err != nil {
		h.writeError(w, err)
		return
	}
	h.writeJSON(w, http.StatusOK, wire.BatchResponse{Results: results})
}

// proposeParams are the query parameters of an internal proposal.
var proposeParams = []string{"timeout", "ack", "fresh", "from", "handoff"}

// propose runs an internal proposal, from POST /v1/internal/propose or a
// propose stream: q holds its proposeParams, body its frames.
func (h *txHandlers) propose(ctx context.Context, q query, body []byte) ([]wire.TxResult, error) {
	opts, err := h.submitOptions(q)
	if err != nil {
		return nil, err
	}
	fresh, err := q.choice("fresh", "false", "true")
	if err != nil {
		return nil, err
	}
	opts.Fresh = fresh == "true"
	handOff, err := q.choice("handoff", "false", "true")
	if err != nil {
		return nil, err
	}
	opts.HandOff = handOff == "true"
	// The forwarding node, as it names itself. The peer link sets it from
	// its connection header instead (wire.SubmitOptions.From).
	if from, ok := q.get("from"); ok {
		if err := checkKey(from, "from", wire.MaxNodeIDBytes); err != nil {
			return nil, paramError("from", from, err)
		}
		opts.From = from
	}
	payloads, err := wire.DecodeFrames(body, h.cfg.MaxBatchTxs)
	if err != nil {
		return nil, &wire.Error{Code: wire.CodeBadRequest, Message: "body: " + err.Error()}
	}
	if len(payloads) == 0 {
		return nil, &wire.Error{Code: wire.CodeBadRequest, Message: "body: no frames"}
	}
	for i, p := range payloads {
		if len(p) == 0 {
			return nil, &wire.Error{Code: wire.CodeBadRequest, Message: fmt.Sprintf("body: frame %d: empty", i)}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	results, err := h.b.Propose(ctx, payloads, opts)
	if err != nil {
		return nil, err
	}
	if len(results) != len(payloads) {
		return nil, fmt.Errorf("backend: %d results for %d payloads", len(results), len(payloads))
	}
	return results, nil
}

// handleTx serves GET /v1/tx/{txid}; with auth on, a transaction outside
// the credential's scope is not found (scopeTx).
func (h *txHandlers) handleTx(w http.ResponseWriter, r *http.Request) {
	serveRead(h.answers, w, r, []string{"wait"}, h.txArg, func(ctx context.Context, x txLookup, opts wire.ReadOptions) (wire.TxResult, error) {
		res, err := h.b.Tx(ctx, x.id, x.wait, opts)
		if err == nil {
			res, err = scopeTx(ctx, h.b, seer(ctx), res)
		}
		return res, named(err, wire.MsgTxNotFound, x.id)
	})
}

// txLookup is the argument of a transaction lookup.
type txLookup struct {
	id   txid.ID
	key  string // by idempotency key
	wait time.Duration
	// pendingAsk is a lookup by key that another node forwarded without a
	// consistency level: it asks for this node's pending transaction only
	// (Backend.TxByIdempotencyKey).
	pendingAsk bool
}

// txArg reads the wait and the {txid} of GET /v1/tx/{txid}.
func (h *txHandlers) txArg(r *http.Request, q query) (txLookup, time.Duration, error) {
	wait, err := q.duration("wait", 0, h.cfg.MaxTimeout, true)
	if err != nil {
		return txLookup{}, 0, err
	}
	text, err := pathVar(r, "txid")
	if err != nil {
		return txLookup{}, 0, err
	}
	id, err := txid.Parse(text)
	if err != nil {
		return txLookup{}, 0, &wire.Error{Code: wire.CodeInvalidParam, Message: fmt.Sprintf("path: %v", err)} // it names the txid
	}
	return txLookup{id: id, wait: wait}, wait, nil
}

// handleTxByIdempotencyKey serves GET /v1/tx?idempotency_key=…, scoped as
// handleTx is.
func (h *txHandlers) handleTxByIdempotencyKey(w http.ResponseWriter, r *http.Request) {
	serveRead(h.answers, w, r, []string{"idempotency_key", "wait"}, h.keyArg, func(ctx context.Context, x txLookup, opts wire.ReadOptions) (wire.TxResult, error) {
		if x.pendingAsk {
			opts.Consistency = "" // as Backend.TxByIdempotencyKey reads it
		}
		res, err := h.b.TxByIdempotencyKey(ctx, x.key, x.wait, opts)
		if err == nil {
			res, err = scopeTx(ctx, h.b, seer(ctx), res)
		}
		return res, named(err, wire.MsgIdempotencyKeyNotFound, x.key)
	})
}

// keyArg reads the wait and the idempotency_key of
// GET /v1/tx?idempotency_key=….
func (h *txHandlers) keyArg(r *http.Request, q query) (txLookup, time.Duration, error) {
	wait, err := q.duration("wait", 0, h.cfg.MaxTimeout, true)
	if err != nil {
		return txLookup{}, 0, err
	}
	key, _ := q.get("idempotency_key")
	if key == "" {
		return txLookup{}, 0, wire.New(wire.MsgParamMissing, "idempotency_key", "the key the transaction was submitted under")
	}
	if err := checkIdempotencyKey(key, "idempotency_key"); err != nil {
		return txLookup{}, 0, paramError("idempotency_key", key, err)
	}
	forwarded, err := forwardedHeader(r)
	if err != nil {
		return txLookup{}, 0, err
	}
	return txLookup{key: key, wait: wait, pendingAsk: forwarded && !q.has(paramConsistency)}, wait, nil
}

// forwardedHeader reads the header HeaderForwarded: absent, or "1".
func forwardedHeader(r *http.Request) (bool, error) {
	switch fwd := r.Header.Values(wire.HeaderForwarded); {
	case len(fwd) == 0:
		return false, nil
	case len(fwd) == 1 && fwd[0] == "1":
		return true, nil
	default:
		return false, wire.New(wire.MsgHeaderValue, wire.HeaderForwarded, strings.Join(fwd, ","), "1")
	}
}

// handleGet serves GET /v1/kv/{key}.
func (h *txHandlers) handleGet(w http.ResponseWriter, r *http.Request) {
	serveRead(h.answers, w, r, nil, h.getArg, func(ctx context.Context, key string, opts wire.ReadOptions) (wire.KV, error) {
		kv, err := h.b.Get(ctx, key, opts)
		if kv.Value == nil {
			kv.Value = []byte("null")
		}
		return kv, named(err, wire.MsgKeyNotFound, key)
	})
}

// getArg reads the {key} of GET /v1/kv/{key}.
func (h *txHandlers) getArg(r *http.Request, _ query) (string, time.Duration, error) {
	key, err := pathVar(r, "key")
	if err != nil {
		return "", 0, err
	}
	if err := checkKey(key, "key", h.cfg.MaxKeyBytes); err != nil {
		return "", 0, asError(err, wire.CodeInvalidParam)
	}
	return key, 0, checkSees(seer(r.Context()), "key", key)
}
