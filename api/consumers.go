package api

import (
	"context"
	"net/http"
	"time"

	"github.com/txlog/txlog/api/wire"
)

// ConsumerBackend is what the consumer-group reads need from a node; a
// Backend that does not implement it answers those paths 404. Offsets are
// committed by transactions (Backend.Submit with a commit_offset op).
type ConsumerBackend interface {
	// Consumer reads a group's committed offset at the consistency of opts
	// (as Backend.Get reads a key), ErrNotFound when the group has none; Lag
	// is the last applied index of the node that read it minus the offset.
	Consumer(ctx context.Context, group string, opts wire.ReadOptions) (wire.ConsumerGroup, error)
	// Consumers lists the groups in name order, as Consumer reads one.
	Consumers(ctx context.Context, opts wire.ReadOptions) ([]wire.ConsumerGroup, error)
}

// offsetFields records which of a commit_offset's fields an op object has.
type offsetFields struct {
	first                string // the name of the first of them, "" if none
	group, offset, reset bool
}

// seen marks name as present; false if it was already.
func (of *offsetFields) seen(name string) bool {
	if of.first == "" {
		of.first = name
	}
	p := &of.group
	switch name {
	case "offset":
		p = &of.offset
	case "reset":
		p = &of.reset
	}
	if *p {
		return false
	}
	*p = true
	return true
}

// decode reads the member f of an op object, one of group, offset and reset,
// on the slow path. objectFields has refused a name given twice.
func (of *offsetFields) decode(op *wire.Op, f field, path string) error {
	of.seen(f.name)
	var err error
	switch f.name {
	case "group":
		op.Group, err = stringValue(f.raw, path)
	case "offset":
		op.Offset, err = uintValue(f.raw, path)
	case "reset":
		if k := kind(f.raw); k != "boolean" {
			return fieldErr(path, wire.MsgFieldKind, "boolean", k)
		}
		op.Reset = f.raw[0] == 't'
	}
	return err
}

// offsetField reads the value of member name of an op object, one of group,
// offset and reset, on the fast path.
func (d *fastDecoder) offsetField(op *wire.Op, of *offsetFields, name string) (ok bool) {
	if !of.seen(name) {
		return false
	}
	switch name {
	case "group":
		op.Group, ok = d.text()
	case "offset":
		op.Offset, ok = d.uint()
	case "reset":
		if op.Reset = d.literal("true"); !op.Reset {
			ok = d.literal("false")
		} else {
			ok = true
		}
	}
	return ok
}

// checkOffsetOp checks a commit_offset op found at path: a group by the rules
// of a key, an offset above 0 unless reset, and no key (an empty one, which
// encoding/json writes for wire.Op, counts as none), value or if_version.
func checkOffsetOp(op wire.Op, of offsetFields, path string, lim limits) error {
	switch {
	case op.Key != "":
		return fieldErr(join(path, "key"), wire.MsgFieldKeyOnCommit, wire.OpCommitOffset)
	case op.Value != nil:
		return fieldErr(join(path, "value"), wire.MsgFieldNotAllowedOn, wire.OpCommitOffset)
	case op.IfVersion != nil:
		return fieldErr(join(path, "if_version"), wire.MsgFieldNotAllowedOn, wire.OpCommitOffset)
	case !of.group:
		return fieldErr(join(path, "group"), wire.MsgFieldMissing)
	case !of.offset && !op.Reset:
		return fieldErr(join(path, "offset"), wire.MsgFieldMissing)
	case op.Offset == 0 && !op.Reset:
		return fieldErr(join(path, "offset"), wire.MsgFieldOffsetNotPositive)
	}
	return checkKey(op.Group, join(path, "group"), lim.maxKeyBytes)
}

// dupGroup returns the indexes i < j of two commit_offset ops of one group,
// or -1, -1: a transaction commits a group's offset at most once.
func dupGroup(ops []wire.Op) (int, int) {
	var first map[string]int // group → index of its first op
	for j, op := range ops {
		if op.Op != wire.OpCommitOffset {
			continue
		}
		if first == nil {
			first = make(map[string]int)
		}
		if i, ok := first[op.Group]; ok {
			return i, j
		}
		first[op.Group] = j
	}
	return -1, -1
}

// decodeOffsetBody decodes and checks the body of POST
// /v1/consumers/{group}/offset into the transaction it stands for.
func decodeOffsetBody(body []byte, group string, lim limits) (wire.TxRequest, error) {
	raw, err := jsonBody(body)
	if err != nil {
		return wire.TxRequest{}, err
	}
	fields, err := objectFields(raw, "")
	if err != nil {
		return wire.TxRequest{}, asError(err, wire.CodeInvalidTx)
	}
	op := wire.Op{Op: wire.OpCommitOffset, Group: group}
	of := offsetFields{group: true}
	var tx wire.TxRequest
	for _, f := range fields {
		switch f.name {
		case "offset", "reset":
			err = of.decode(&op, f, f.name)
		case "fence":
			tx.Fence, err = decodeFence(f.raw, f.name, lim)
		default:
			err = fieldErr(f.name, wire.MsgFieldUnknown)
		}
		if err != nil {
			return wire.TxRequest{}, asError(err, wire.CodeInvalidTx)
		}
	}
	if err := checkOffsetOp(op, of, "", lim); err != nil {
		return wire.TxRequest{}, asError(err, wire.CodeInvalidTx)
	}
	tx.Ops = []wire.Op{op}
	return tx, nil
}

// consumerHandlers serve /v1/consumers: the offset commits, which are
// transactions (tx), and the reads. Without a ConsumerBackend (cb nil) the
// Server routes the reads to 404 instead.
type consumerHandlers struct {
	*answers
	cb ConsumerBackend
	tx *txHandlers
}

// groupName reads and checks the {group} of a consumer path.
func (h *consumerHandlers) groupName(r *http.Request) (string, error) {
	group, err := pathVar(r, "group")
	if err != nil {
		return "", err
	}
	if err := checkKey(group, "group", h.cfg.MaxKeyBytes); err != nil {
		return "", asError(err, wire.CodeInvalidParam)
	}
	return group, nil
}

// handleCommitOffset serves POST /v1/consumers/{group}/offset: the
// transaction whose one op commits the group's offset, answered as POST
// /v1/tx answers.
func (h *consumerHandlers) handleCommitOffset(w http.ResponseWriter, r *http.Request) {
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
	group, err := h.groupName(r)
	if err != nil {
		h.writeError(w, err)
		return
	}
	tx, ok := readDecoded(h.answers, w, r, func(b []byte) (wire.TxRequest, error) { return decodeOffsetBody(b, group, h.lim) })
	if !ok {
		return
	}
	if err := mergeIdempotencyHeader(r, &tx); err != nil {
		h.writeError(w, err)
		return
	}
	h.tx.submit(w, r, tx, opts)
}

// handleGet serves GET /v1/consumers/{group}.
func (h *consumerHandlers) handleGet(w http.ResponseWriter, r *http.Request) {
	serveRead(h.answers, w, r, nil, h.groupArg, func(ctx context.Context, group string, opts wire.ReadOptions) (wire.ConsumerGroup, error) {
		g, err := h.cb.Consumer(ctx, group, opts)
		return g, named(err, wire.MsgConsumerNotFound, group)
	})
}

// groupArg reads the {group} of GET /v1/consumers/{group}.
func (h *consumerHandlers) groupArg(r *http.Request, _ query) (string, time.Duration, error) {
	group, err := h.groupName(r)
	if err == nil {
		err = checkSees(seer(r.Context()), "group", group)
	}
	return group, 0, err
}

// handleList serves GET /v1/consumers.
func (h *consumerHandlers) handleList(w http.ResponseWriter, r *http.Request) {
	serveRead(h.answers, w, r, nil, noArg, func(ctx context.Context, _ struct{}, opts wire.ReadOptions) (wire.ConsumerList, error) {
		cs, err := h.cb.Consumers(ctx, opts)
		cs = scopeGroups(seer(ctx), cs)
		if cs == nil {
			cs = []wire.ConsumerGroup{}
		}
		return wire.ConsumerList{Consumers: cs}, err
	})
}
