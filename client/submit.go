package client

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/txid"
)

// newIdempotencyKey returns a random idempotency key of 26 characters.
func newIdempotencyKey() string { return rand.Text() }

// answerMargin is the least time the Client keeps between the timeout it asks
// a server for and the end of its own ctx, so that the server's answer (say
// "no leader") arrives before the Client stops listening. A request cut off by
// the Client's own deadline leaves its outcome open.
const answerMargin = 50 * time.Millisecond

// ErrNoTimeLeft ends a call that has too little time left for another attempt.
var ErrNoTimeLeft = fmt.Errorf("too little time left: %w", context.DeadlineExceeded)

// fit returns d, shortened so that a server working for that long answers a
// margin before ctx ends; false when too little time is left to try at all.
func fit(ctx context.Context, d time.Duration) (time.Duration, bool) {
	dl, ok := ctx.Deadline()
	return fitBy(dl, ok, d)
}

// fitBy is fit for a deadline dl (none when hasDL is false).
func fitBy(dl time.Time, hasDL bool, d time.Duration) (time.Duration, bool) {
	if !hasDL {
		return d, true
	}
	left := time.Until(dl)
	left -= max(left/10, answerMargin)
	if left < time.Millisecond {
		return 0, false
	}
	return min(d, left), true
}

// writeQuery returns the query text of a write and the time it asks the
// server for: opts.Timeout (none: the server's default), fitted to ctx; false
// when too little time is left to try. The text is what url.Values.Encode
// writes for ack and timeout, built without a map per write.
func writeQuery(ctx context.Context, opts wire.SubmitOptions) (string, time.Duration, bool) {
	dl, ok := ctx.Deadline()
	return writeQueryBy(dl, ok, opts)
}

// writeQueryBy is writeQuery for a deadline dl (none when hasDL is false).
func writeQueryBy(dl time.Time, hasDL bool, opts wire.SubmitOptions) (string, time.Duration, bool) {
	want := opts.Timeout
	if want <= 0 {
		want = wire.DefaultTimeout
	}
	d, ok := fitBy(dl, hasDL, want)
	if !ok {
		return "", 0, false
	}
	q := ackQuery(opts.Ack)
	if opts.Timeout > 0 || d < want {
		if q != "" {
			q += "&"
		}
		q += "timeout=" + url.QueryEscape(d.String())
	}
	return q, d, true
}

// ackQuery returns the query text of ack, "" for none.
func ackQuery(ack string) string {
	switch ack {
	case "":
		return ""
	case wire.AckQuorum:
		return "ack=" + wire.AckQuorum
	case wire.AckAll:
		return "ack=" + wire.AckAll
	case wire.AckAccepted:
		return "ack=" + wire.AckAccepted
	}
	return "ack=" + url.QueryEscape(ack)
}

// serverTimeout is the timeout a write asks the server for at most.
func serverTimeout(opts wire.SubmitOptions) time.Duration {
	if opts.Timeout > 0 {
		return opts.Timeout
	}
	return wire.DefaultTimeout
}

// Submit runs one transaction on any node and returns its result: committed,
// rejected by a failed if_version (not an error), or pending with its txid
// (with ack=accepted, or parked by a node that had no leader within the
// timeout; Tx waits for its outcome).
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
func (c *kv) Submit(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error) {
	req, err := writeRequest(&tx)
	if err != nil {
		return wire.TxResult{}, err
	}
	ctx, cancel := c.callContext(ctx, serverTimeout(opts))
	defer cancel()
	base, err := c.firstWrite()
	if err != nil {
		return wire.TxResult{}, err
	}
	return c.submit(ctx, base, req, opts, tx.IdempotencyKey, nil)
}

// writeRequest gives tx an idempotency key if it has none and returns the
// request of POST /v1/tx with its body.
func writeRequest(tx *wire.TxRequest) (request, error) {
	if tx.IdempotencyKey == "" {
		tx.IdempotencyKey = newIdempotencyKey()
	}
	body, err := wire.AppendTxRequestJSON(make([]byte, 0, txRequestSize(tx)), tx)
	if err != nil {
		return request{}, fmt.Errorf("encode transaction: %w", err)
	}
	return request{method: http.MethodPost, path: "/v1/tx", body: body}, nil
}

// attemptOutcome is what one attempt of a write to a node got: an answer or
// an error.
type attemptOutcome struct {
	a   answer
	err error
}

// submit runs Submit's attempts of req, the write of the transaction with
// idempotency key, starting at base, within ctx (the call's bound). first,
// when not nil, is the outcome of the first attempt, already sent to base
// (SubmitAsync's): the loop goes on from there.
func (c *kv) submit(ctx context.Context, base string, req request, opts wire.SubmitOptions, key string, first *attemptOutcome) (wire.TxResult, error) {
	s := submission{key: key}
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
			case found && (res.Status == wire.StatusCommitted || res.Status == wire.StatusRejected):
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
		var a answer
		var err error
		if first != nil {
			a, err, first = first.a, first.err, nil
		} else {
			var ok bool
			if req.rawQuery, req.serverTime, ok = writeQuery(ctx, opts); !ok {
				return s.giveUp(ErrNoTimeLeft)
			}
			a, err = c.writeTrip(ctx, base, req)
		}
		if te, ok := errors.AsType[*TransportError](err); ok {
			s.ambiguous = s.ambiguous || te.sent
			if ctx.Err() != nil {
				return s.giveUp(ctx.Err())
			}
			s.last, base = err, c.next(base)
			continue
		}
		if err != nil {
			return wire.TxResult{}, err
		}
		switch a.status {
		case http.StatusOK, http.StatusAccepted, http.StatusConflict:
			var res wire.TxResult
			if !wire.DecodeTxResultJSON(a.body, &res) {
				if err := decodeAnswer(a, &res); err != nil {
					return wire.TxResult{}, err
				}
			}
			if a.status != http.StatusConflict || res.Status == wire.StatusRejected {
				c.prefer(base)
				return res, nil
			}
		}
		code, aerr := classify(a)
		switch {
		case code == wire.CodeUnknownOutcome:
			var res wire.TxResult
			if json.Unmarshal(a.body, &res) == nil && res.TxID != 0 {
				s.id = res.TxID
			}
			s.ambiguous, s.last = true, aerr // look it up where it was accepted
		case ambiguousCode(code):
			s.ambiguous, s.last, base = true, aerr, c.next(base)
		case refused(code):
			s.last, base = aerr, c.afterRefusal(ctx, base, code)
		default:
			return wire.TxResult{}, aerr
		}
	}
}

// txRequestSize is about the length of tx's JSON, to size its buffer once.
func txRequestSize(tx *wire.TxRequest) int {
	n := 64 + len(tx.IdempotencyKey)
	for i := range tx.Ops {
		n += 48 + len(tx.Ops[i].Key) + len(tx.Ops[i].Value)
	}
	return n
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
func (s *submission) giveUp(ctxErr error) (wire.TxResult, error) {
	if !s.ambiguous {
		return wire.TxResult{}, giveUp(s.last, ctxErr)
	}
	res := wire.TxResult{TxID: s.id, Status: wire.StatusUnknown, IdempotencyKey: s.key}
	return res, fmt.Errorf("%w: idempotency key %q%s: %w", wire.ErrUnknownOutcome, s.key, lastError(s.last), ctxErr)
}

// lastError describes the last failure of an ambiguous call for its error
// message; it is not wrapped, so that errors.Is does not mistake an open
// outcome for, say, "no leader".
func lastError(err error) string {
	if err == nil {
		return ""
	}
	text := err.Error()
	if errors.Is(err, wire.ErrUnknownOutcome) {
		// The error this one wraps says it already.
		text = strings.TrimPrefix(strings.TrimPrefix(text, wire.ErrUnknownOutcome.Error()), ": ")
		if text == "" {
			return ""
		}
	}
	return fmt.Sprintf(" (last error: %s)", text)
}

// retryable reports whether err, from a request that changes nothing, may go
// away on another node or later.
func retryable(err error) bool {
	if _, ok := errors.AsType[*TransportError](err); ok {
		return true
	}
	for _, code := range []string{wire.CodeNoLeader, wire.CodeNotLeader, wire.CodeShuttingDown, wire.CodeOverloaded, wire.CodeTimeout} {
		if errors.Is(err, wire.Sentinel(code)) {
			return true
		}
	}
	if e, ok := errors.AsType[*wire.Error](err); ok {
		return refused(e.Code) || ambiguousCode(e.Code)
	}
	return false
}

// resolve looks up at base a transaction whose outcome is open: by id when it
// is not zero, else by idempotency key. found is false when base does not know
// it.
func (c *kv) resolve(ctx context.Context, base string, id txid.ID, key string) (res wire.TxResult, found bool, err error) {
	wait, ok := fit(ctx, c.cfg.LookupWait)
	if !ok {
		return wire.TxResult{}, false, ErrNoTimeLeft
	}
	req := request{method: http.MethodGet, query: waitQuery(wait), serverTime: wait}
	if id != 0 {
		req.path = "/v1/tx/" + id.String()
	} else {
		req.path = "/v1/tx"
		req.query.Set("idempotency_key", key)
	}
	err = c.callAt(ctx, base, req, &res)
	if errors.Is(err, wire.ErrNotFound) {
		return wire.TxResult{}, false, nil
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
func (c *kv) SubmitBatch(ctx context.Context, txs []wire.TxRequest, opts wire.SubmitOptions) ([]wire.TxResult, error) {
	txs = slices.Clone(txs)
	for i := range txs {
		if txs[i].IdempotencyKey == "" {
			txs[i].IdempotencyKey = newIdempotencyKey()
		}
	}
	body, err := wire.MarshalJSON(wire.BatchRequest{Txs: txs})
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
	unknown := func(ctxErr error) ([]wire.TxResult, error) {
		if !ambiguous {
			return nil, giveUp(last, ctxErr)
		}
		res := make([]wire.TxResult, len(txs))
		for i, tx := range txs {
			res[i] = wire.TxResult{Status: wire.StatusUnknown, IdempotencyKey: tx.IdempotencyKey}
		}
		return res, fmt.Errorf("%w: batch of %d%s: %w", wire.ErrUnknownOutcome, len(txs), lastError(last), ctxErr)
	}
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if err := c.pause(ctx, attempt); err != nil {
				return unknown(err)
			}
		}
		var ok bool
		if req.rawQuery, req.serverTime, ok = writeQuery(ctx, opts); !ok {
			return unknown(ErrNoTimeLeft)
		}
		a, err := c.roundTrip(ctx, base, req)
		if te, ok := errors.AsType[*TransportError](err); ok {
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
			var br wire.BatchResponse
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
		case ambiguousCode(code) || code == wire.CodeUnknownOutcome:
			ambiguous, last, base = true, aerr, c.next(base)
		case refused(code):
			last, base = aerr, c.afterRefusal(ctx, base, code)
		default:
			return nil, aerr
		}
	}
}
