package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/auth"
)

// Range reads: GET /v1/kv?prefix=P&after=K&limit=N&keys_only=true lists the
// keys under P strictly after K in key order, a page at a time, each page
// as of one applied index (wire.KVPage), at the consistency of any read.
//
// With auth on, the read covers only the keys the credential sees: the
// handler cuts P's span to the credential's prefixes and leaves out the
// reserved ones (rangeSpans) before the Backend looks at a key, so a page
// holds no hidden key, its More and Next speak only of keys it sees, and
// nothing counts the others. A read another node forwards to the leader
// carries those spans (POST /v1/internal/range).

// rangeRead is the argument of a range read.
type rangeRead struct {
	req wire.RangeRequest
}

// handleRange serves GET /v1/kv.
func (h *txHandlers) handleRange(w http.ResponseWriter, r *http.Request) {
	serveRead(h.answers, w, r, []string{"prefix", "after", "limit", "keys_only"}, h.rangeArg,
		func(ctx context.Context, x rangeRead, opts wire.ReadOptions) (rangeAnswer, error) {
			page, err := h.b.Range(ctx, x.req, opts)
			return rangeAnswer{page: page, keysOnly: x.req.KeysOnly}, err
		})
}

// rangeArg reads the prefix, after, limit and keys_only of GET /v1/kv.
func (h *txHandlers) rangeArg(r *http.Request, q query) (rangeRead, time.Duration, error) {
	var x rangeRead
	prefix, _ := q.get("prefix")
	if err := h.checkRangeKey(prefix, "prefix"); err != nil {
		return x, 0, err
	}
	x.req.After, _ = q.get("after")
	if err := h.checkRangeKey(x.req.After, "after"); err != nil {
		return x, 0, err
	}
	limit, err := q.integer("limit", wire.DefaultRangeLimit, 1, wire.MaxRangeLimit)
	if err != nil {
		return x, 0, err
	}
	x.req.Limit = int(limit)
	keysOnly, err := q.choice("keys_only", "false", "true")
	if err != nil {
		return x, 0, err
	}
	x.req.KeysOnly = keysOnly == "true"
	x.req.Spans = rangeSpans(seer(r.Context()), prefix)
	return x, 0, nil
}

// checkRangeKey checks a prefix or after: empty, or no longer than a key.
func (h *txHandlers) checkRangeKey(s, name string) error {
	if s == "" {
		return nil
	}
	if len(s) > h.cfg.MaxKeyBytes {
		return &wire.Error{Code: wire.CodeInvalidParam, Message: fmt.Sprintf("%s: %d bytes, want at most %d (a key's limit)", name, len(s), h.cfg.MaxKeyBytes)}
	}
	return asError(checkText(s, name), wire.CodeInvalidParam)
}

// handleInternalRange serves POST /v1/internal/range: a range read another
// node forwarded to this one, the leader, with the spans its credential
// allowed (wire.RangeRequest). Only the peer router has it.
func (h *txHandlers) handleInternalRange(w http.ResponseWriter, r *http.Request) {
	if _, err := parseQuery(r); err != nil {
		h.writeError(w, err)
		return
	}
	req, ok := readDecoded(h.answers, w, r, decodeRangeRequest)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.cfg.DefaultTimeout)
	defer cancel()
	page, err := h.b.Range(ctx, req, wire.ReadOptions{Consistency: req.Consistency, Forwarded: true})
	if err != nil {
		h.writeError(w, err)
		return
	}
	h.writeJSON(w, http.StatusOK, rangeAnswer{page: page, keysOnly: req.KeysOnly})
}

// decodeRangeRequest decodes and checks the body of POST /v1/internal/range.
func decodeRangeRequest(b []byte) (wire.RangeRequest, error) {
	var req wire.RangeRequest
	// Strict as a public body: unknown fields and trailing data are refused
	// (another node sends it, but a byte from the network is checked before
	// it is trusted).
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, &wire.Error{Code: wire.CodeBadRequest, Message: "range request body: " + err.Error()}
	}
	if dec.More() {
		return req, &wire.Error{Code: wire.CodeBadRequest, Message: "range request body: data after the JSON object"}
	}
	if req.Consistency != "" && !slices.Contains(consistencies, req.Consistency) {
		return req, &wire.Error{Code: wire.CodeInvalidParam, Message: fmt.Sprintf("body field consistency=%q: want one of %s", req.Consistency, strings.Join(consistencies, ", "))}
	}
	if req.Limit < 1 || req.Limit > wire.MaxRangeLimit {
		return req, &wire.Error{Code: wire.CodeInvalidParam, Message: fmt.Sprintf("body field limit=%d: want an integer from 1 to %d", req.Limit, wire.MaxRangeLimit)}
	}
	for i, s := range req.Spans {
		if (s.End != "" && s.End <= s.Start) || (i > 0 && (req.Spans[i-1].End == "" || req.Spans[i-1].End > s.Start)) {
			return req, &wire.Error{Code: wire.CodeInvalidParam, Message: fmt.Sprintf("body field spans[%d]: empty, out of order or overlapping", i)}
		}
	}
	return req, nil
}

// rangeSpans returns the spans of the keys under prefix that p sees, in key
// order and not overlapping: prefix's span, cut to p's prefixes when it has
// some, without the reserved names (auth.ReservedPrefix) unless p sees them.
// A nil p (seer: auth off, or an admin without prefixes) sees every key.
func rangeSpans(p *auth.Principal, prefix string) []wire.KeySpan {
	all := wire.PrefixSpan(prefix)
	if p == nil {
		return []wire.KeySpan{all}
	}
	spans := []wire.KeySpan{all}
	if len(p.Prefixes) > 0 {
		spans = spans[:0]
		for _, pre := range p.Prefixes {
			if s, ok := intersect(all, wire.PrefixSpan(pre)); ok {
				spans = append(spans, s)
			}
		}
		spans = union(spans)
	}
	if !p.Sees(auth.ReservedPrefix) {
		spans = subtract(spans, wire.PrefixSpan(auth.ReservedPrefix))
	}
	return spans
}

// endBefore orders span ends, "" (no end) last.
func endBefore(a, b string) bool { return a != "" && (b == "" || a < b) }

// intersect returns the keys in both a and b.
func intersect(a, b wire.KeySpan) (wire.KeySpan, bool) {
	s := wire.KeySpan{Start: max(a.Start, b.Start), End: a.End}
	if endBefore(b.End, a.End) {
		s.End = b.End
	}
	return s, s.End == "" || s.Start < s.End
}

// union sorts spans and merges those that overlap or touch.
func union(spans []wire.KeySpan) []wire.KeySpan {
	slices.SortFunc(spans, func(a, b wire.KeySpan) int { return strings.Compare(a.Start, b.Start) })
	var out []wire.KeySpan
	for _, s := range spans {
		if n := len(out); n > 0 && (out[n-1].End == "" || s.Start <= out[n-1].End) {
			if endBefore(out[n-1].End, s.End) {
				out[n-1].End = s.End
			}
			continue
		}
		out = append(out, s)
	}
	return out
}

// subtract returns the keys of spans not in cut, in order.
func subtract(spans []wire.KeySpan, cut wire.KeySpan) []wire.KeySpan {
	var out []wire.KeySpan
	for _, s := range spans {
		if _, ok := intersect(s, cut); !ok {
			out = append(out, s)
			continue
		}
		if s.Start < cut.Start {
			out = append(out, wire.KeySpan{Start: s.Start, End: cut.Start})
		}
		if cut.End != "" && endBefore(cut.End, s.End) {
			out = append(out, wire.KeySpan{Start: cut.End, End: s.End})
		}
	}
	return out
}

// rangeAnswer is a page of a range read as it is answered: with keys_only,
// its keys without a "value" field.
type rangeAnswer struct {
	page     wire.KVPage
	keysOnly bool
}

// keyVersion is a key of a keys_only page.
type keyVersion struct {
	Key        string `json:"key"`
	Version    uint64 `json:"version"`
	Index      uint64 `json:"index"`
	Unreadable bool   `json:"unreadable,omitempty"`
}

// rangeJSON encodes a page; a value that is not JSON goes out raw, as
// GET /v1/kv/{key} answers it (kvJSON).
func (a *answers) rangeJSON(ra rangeAnswer) ([]byte, error) {
	p := ra.page
	if p.KVs == nil {
		p.KVs = []wire.KV{}
	}
	if ra.keysOnly {
		keys := make([]keyVersion, len(p.KVs))
		for i, kv := range p.KVs {
			keys[i] = keyVersion{Key: kv.Key, Version: kv.Version, Index: kv.Index, Unreadable: kv.Unreadable}
		}
		return wire.MarshalJSON(struct {
			Index uint64       `json:"index"`
			KVs   []keyVersion `json:"kvs"`
			More  bool         `json:"more"`
			Next  string       `json:"next"`
		}{p.Index, keys, p.More, p.Next})
	}
	for _, kv := range p.KVs {
		if kv.Unreadable {
			a.unreadableRecord(kv.Index, kv.Key)
		}
	}
	b, err := wire.MarshalJSON(p)
	if err == nil {
		return b, nil
	}
	p.KVs = slices.Clone(p.KVs)
	for i, kv := range p.KVs {
		r, raw := kv.Readable()
		if raw {
			a.unreadableRecord(kv.Index, kv.Key)
		}
		p.KVs[i] = r
	}
	return wire.MarshalJSON(p)
}
