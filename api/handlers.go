package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/txid"
)

// statusOK is the body of answers that carry nothing else.
var statusOK = map[string]string{"status": "ok"}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	s.writeJSON(w, http.StatusOK, statusOK)
}

func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.DefaultTimeout)
	defer cancel()
	if err := s.b.Ready(ctx); err != nil {
		if errors.Is(err, wire.ErrRemoved) || errors.Is(err, wire.ErrNodeNumberClash) {
			s.writeError(w, err) // 503 with its own code: it will not pass by waiting
			return
		}
		msg := err.Error()
		if e, ok := errors.AsType[*wire.Error](err); ok {
			msg = e.Message
		}
		s.writeError(w, &wire.Error{Code: wire.CodeNotReady, Message: msg})
		return
	}
	s.writeJSON(w, http.StatusOK, statusOK)
}

// handleSubmit serves POST /v1/tx.
//
// The answer's status follows the transaction's: 200 committed, 409 rejected,
// 202 pending, and 503 unknown with the TxResult fields plus an error object.
func (s *Server) handleSubmit(w http.ResponseWriter, r *http.Request) {
	q, err := parseQuery(r, "timeout", "ack")
	if err != nil {
		s.writeError(w, err)
		return
	}
	opts, err := s.submitOptions(q)
	if err != nil {
		s.writeError(w, err)
		return
	}
	body, err := readBody(w, r, s.cfg.MaxBodyBytes, s.cfg.BodyTimeout)
	if err != nil {
		s.writeError(w, err)
		return
	}
	tx, err := decodeTxBody(body, s.lim)
	if err != nil {
		s.writeError(w, err)
		return
	}
	if err := mergeIdempotencyHeader(r, &tx); err != nil {
		s.writeError(w, err)
		return
	}
	s.submit(w, r, tx, opts)
}

// submit runs a decoded transaction and answers it as handleSubmit says.
func (s *Server) submit(w http.ResponseWriter, r *http.Request, tx wire.TxRequest, opts wire.SubmitOptions) {
	ctx, cancel := context.WithTimeout(r.Context(), opts.Timeout)
	defer cancel()
	res, err := s.b.Submit(ctx, tx, opts)
	if res.IdempotencyKey == "" {
		res.IdempotencyKey = tx.IdempotencyKey
	}
	if err != nil && !errors.Is(err, wire.ErrUnknownOutcome) {
		s.writeError(w, err)
		return
	}
	if err != nil || res.Status == wire.StatusUnknown {
		s.writeUnknown(w, res, err)
		return
	}
	switch res.Status {
	case wire.StatusCommitted:
		s.writeJSON(w, http.StatusOK, res)
	case wire.StatusRejected:
		s.writeJSON(w, http.StatusConflict, res)
	case wire.StatusPending:
		s.writeJSON(w, http.StatusAccepted, res)
	default:
		s.writeError(w, fmt.Errorf("backend: transaction %s has status %q", res.TxID, res.Status))
	}
}

// writeUnknown answers a transaction whose outcome is unknown: 503 with the
// fields of res, status "unknown" and an error object with code unknown_outcome.
func (s *Server) writeUnknown(w http.ResponseWriter, res wire.TxResult, err error) {
	if err == nil {
		err = wire.ErrUnknownOutcome
	}
	if rec, ok := w.(*recorder); ok {
		rec.err = err
	}
	res.Status = wire.StatusUnknown
	res.Error = &wire.ErrorBody{Code: wire.CodeUnknownOutcome, Message: err.Error(), TxID: res.TxID}
	w.Header().Set("Retry-After", "1")
	s.writeJSON(w, http.StatusServiceUnavailable, res)
}

// mergeIdempotencyHeader takes the idempotency key from the Idempotency-Key
// header when the body has none; both may be given only when they are equal.
func mergeIdempotencyHeader(r *http.Request, tx *wire.TxRequest) error {
	vs := r.Header.Values(HeaderIdempotencyKey)
	if len(vs) == 0 {
		return nil
	}
	if len(vs) > 1 {
		return &wire.Error{Code: wire.CodeInvalidParam, Message: fmt.Sprintf("%s header: given %d times", HeaderIdempotencyKey, len(vs))}
	}
	h := vs[0]
	if err := checkIdempotencyKey(h, HeaderIdempotencyKey+" header"); err != nil {
		return asError(err, wire.CodeInvalidParam)
	}
	switch {
	case h == "":
		return &wire.Error{Code: wire.CodeInvalidParam, Message: HeaderIdempotencyKey + " header: empty"}
	case tx.IdempotencyKey == "":
		tx.IdempotencyKey = strings.Clone(h) // not a part of the fast path's header string, which it would keep
	case tx.IdempotencyKey != h:
		return &wire.Error{Code: wire.CodeInvalidParam, Message: fmt.Sprintf("%s header %q differs from idempotency_key %q", HeaderIdempotencyKey, h, tx.IdempotencyKey)}
	}
	return nil
}

// handleSubmitBatch serves POST /v1/tx/batch: 200 with one result per
// transaction, each with its own status and, when it failed on its own, error.
func (s *Server) handleSubmitBatch(w http.ResponseWriter, r *http.Request) {
	q, err := parseQuery(r, "timeout", "ack")
	if err != nil {
		s.writeError(w, err)
		return
	}
	opts, err := s.submitOptions(q)
	if err != nil {
		s.writeError(w, err)
		return
	}
	if r.Header.Get(HeaderIdempotencyKey) != "" {
		s.writeError(w, &wire.Error{Code: wire.CodeInvalidParam, Message: HeaderIdempotencyKey + " header: not allowed on a batch; set idempotency_key in each transaction"})
		return
	}
	body, err := readBody(w, r, s.cfg.MaxBodyBytes, s.cfg.BodyTimeout)
	if err != nil {
		s.writeError(w, err)
		return
	}
	req, err := decodeBatchBody(body, s.lim)
	if err != nil {
		s.writeError(w, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), opts.Timeout)
	defer cancel()
	results, err := s.b.SubmitBatch(ctx, req.Txs, opts)
	if err != nil {
		s.writeError(w, err)
		return
	}
	if len(results) != len(req.Txs) {
		s.writeError(w, fmt.Errorf("backend: %d results for %d transactions", len(results), len(req.Txs)))
		return
	}
	for i := range results {
		if results[i].IdempotencyKey == "" {
			results[i].IdempotencyKey = req.Txs[i].IdempotencyKey
		}
	}
	s.writeJSON(w, http.StatusOK, wire.BatchResponse{Results: results})
}

// handlePropose serves POST /v1/internal/propose: frames of encoded
// transactions that another node accepted.
func (s *Server) handlePropose(w http.ResponseWriter, r *http.Request) {
	q, err := parseQuery(r, proposeParams...)
	if err != nil {
		s.writeError(w, err)
		return
	}
	body, err := readBody(w, r, s.cfg.MaxInternalBodyBytes, s.cfg.BodyTimeout)
	if err != nil {
		s.writeError(w, err)
		return
	}
	results, err := s.propose(r.Context(), q, body)
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.writeJSON(w, http.StatusOK, wire.BatchResponse{Results: results})
}

// proposeParams are the query parameters of an internal proposal.
var proposeParams = []string{"timeout", "ack", "fresh"}

// propose runs an internal proposal, from POST /v1/internal/propose or a
// propose stream: q holds its proposeParams, body its frames.
func (s *Server) propose(ctx context.Context, q query, body []byte) ([]wire.TxResult, error) {
	opts, err := s.submitOptions(q)
	if err != nil {
		return nil, err
	}
	fresh, err := q.choice("fresh", "false", "true")
	if err != nil {
		return nil, err
	}
	opts.Fresh = fresh == "true"
	payloads, err := wire.DecodeFrames(body, s.cfg.MaxBatchTxs)
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
	results, err := s.b.Propose(ctx, payloads, opts)
	if err != nil {
		return nil, err
	}
	if len(results) != len(payloads) {
		return nil, fmt.Errorf("backend: %d results for %d payloads", len(results), len(payloads))
	}
	return results, nil
}

// handleTx serves GET /v1/tx/{txid}.
func (s *Server) handleTx(w http.ResponseWriter, r *http.Request) {
	q, err := parseQuery(r, "wait")
	if err != nil {
		s.writeError(w, err)
		return
	}
	wait, err := q.duration("wait", 0, s.cfg.MaxTimeout, true)
	if err != nil {
		s.writeError(w, err)
		return
	}
	text, err := pathVar(r, "txid")
	if err != nil {
		s.writeError(w, err)
		return
	}
	id, err := txid.Parse(text)
	if err != nil {
		s.writeError(w, &wire.Error{Code: wire.CodeInvalidParam, Message: "txid: " + err.Error()})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), wait+s.cfg.DefaultTimeout)
	defer cancel()
	res, err := s.b.Tx(ctx, id, wait)
	s.writeLookup(w, res, err)
}

// handleTxByIdempotencyKey serves GET /v1/tx?idempotency_key=….
func (s *Server) handleTxByIdempotencyKey(w http.ResponseWriter, r *http.Request) {
	q, err := parseQuery(r, "idempotency_key", "wait")
	if err != nil {
		s.writeError(w, err)
		return
	}
	wait, err := q.duration("wait", 0, s.cfg.MaxTimeout, true)
	if err != nil {
		s.writeError(w, err)
		return
	}
	key, _ := q.get("idempotency_key")
	if key == "" {
		s.writeError(w, &wire.Error{Code: wire.CodeInvalidParam, Message: "idempotency_key: missing or empty"})
		return
	}
	if err := checkIdempotencyKey(key, "idempotency_key"); err != nil {
		s.writeError(w, asError(err, wire.CodeInvalidParam))
		return
	}
	forwarded, err := forwardedHeader(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), wait+s.cfg.DefaultTimeout)
	defer cancel()
	res, err := s.b.TxByIdempotencyKey(ctx, key, wait, forwarded)
	s.writeLookup(w, res, err)
}

// forwardedHeader reads the header HeaderForwarded: absent, or "1".
func forwardedHeader(r *http.Request) (bool, error) {
	switch fwd := r.Header.Values(wire.HeaderForwarded); {
	case len(fwd) == 0:
		return false, nil
	case len(fwd) == 1 && fwd[0] == "1":
		return true, nil
	default:
		return false, &wire.Error{Code: wire.CodeInvalidParam, Message: fmt.Sprintf("%s header: %q, want 1", wire.HeaderForwarded, strings.Join(fwd, ","))}
	}
}

// writeLookup answers a transaction lookup: 200 with the result whatever its
// status, or the error.
func (s *Server) writeLookup(w http.ResponseWriter, res wire.TxResult, err error) {
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.writeJSON(w, http.StatusOK, res)
}

// handleGet serves GET /v1/kv/{key}.
func (s *Server) handleGet(w http.ResponseWriter, r *http.Request) {
	q, err := parseQuery(r, "consistency")
	if err != nil {
		s.writeError(w, err)
		return
	}
	var opts wire.ReadOptions
	if opts.Consistency, err = q.choice("consistency", wire.ConsistencyLinearizable, wire.ConsistencyLeader, wire.ConsistencyStale); err != nil {
		s.writeError(w, err)
		return
	}
	if opts.Forwarded, err = forwardedHeader(r); err != nil {
		s.writeError(w, err)
		return
	}
	key, err := pathVar(r, "key")
	if err != nil {
		s.writeError(w, err)
		return
	}
	if err := checkKey(key, "key", s.cfg.MaxKeyBytes); err != nil {
		s.writeError(w, asError(err, wire.CodeInvalidParam))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.DefaultTimeout)
	defer cancel()
	kv, err := s.b.Get(ctx, key, opts)
	if err != nil {
		s.writeError(w, err)
		return
	}
	if kv.Value == nil {
		kv.Value = []byte("null")
	}
	s.writeJSON(w, http.StatusOK, kv)
}

func (s *Server) handleCluster(w http.ResponseWriter, r *http.Request) {
	if _, err := parseQuery(r); err != nil {
		s.writeError(w, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.DefaultTimeout)
	defer cancel()
	st, err := s.b.Cluster(ctx)
	if err != nil {
		s.writeError(w, err)
		return
	}
	if st.Members == nil {
		st.Members = []wire.Member{}
	}
	s.writeJSON(w, http.StatusOK, st)
}

func (s *Server) handleJoin(w http.ResponseWriter, r *http.Request) {
	if _, err := parseQuery(r); err != nil {
		s.writeError(w, err)
		return
	}
	body, err := readBody(w, r, s.cfg.MaxBodyBytes, s.cfg.BodyTimeout)
	if err != nil {
		s.writeError(w, err)
		return
	}
	req, err := decodeJoinBody(body)
	if err != nil {
		s.writeError(w, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.DefaultTimeout)
	defer cancel()
	res, err := s.b.Join(ctx, req)
	if err != nil {
		s.writeError(w, err)
		return
	}
	res.Status = "ok"
	s.writeJSON(w, http.StatusOK, res)
}

func (s *Server) handleRemove(w http.ResponseWriter, r *http.Request) {
	if _, err := parseQuery(r); err != nil {
		s.writeError(w, err)
		return
	}
	id, err := pathVar(r, "id")
	if err != nil {
		s.writeError(w, err)
		return
	}
	if id == "" || !utf8.ValidString(id) {
		s.writeError(w, &wire.Error{Code: wire.CodeInvalidParam, Message: fmt.Sprintf("id %q: want a non-empty UTF-8 server ID", id)})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.DefaultTimeout)
	defer cancel()
	if err := s.b.Remove(ctx, id); err != nil {
		s.writeError(w, err)
		return
	}
	s.writeJSON(w, http.StatusOK, statusOK)
}

func (s *Server) handleTransferLeadership(w http.ResponseWriter, r *http.Request) {
	if _, err := parseQuery(r); err != nil {
		s.writeError(w, err)
		return
	}
	body, err := readBody(w, r, s.cfg.MaxBodyBytes, s.cfg.BodyTimeout)
	if err != nil {
		s.writeError(w, err)
		return
	}
	req, err := decodeTransferBody(body)
	if err != nil {
		s.writeError(w, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.DefaultTimeout)
	defer cancel()
	res, err := s.b.TransferLeadership(ctx, req)
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.writeJSON(w, http.StatusOK, res)
}
