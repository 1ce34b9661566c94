package api

// Strict decoding of request bodies.
//
// encoding/json is lenient in ways that would change a request silently: it
// replaces invalid UTF-8 and lone surrogate escapes with U+FFFD, matches field
// names case-insensitively, keeps the last of two fields with the same name, and
// reads -1 into nothing but an error without a path. So the decoders here walk
// objects and arrays themselves, with encoding/json doing only the tokens, and
// report every problem as "<path>: <why>", for example "txs[3].ops[0].key: empty".
//
// That slow path splits the body into json.RawMessage pieces and reads each with
// its own json.Decoder, which made decoding a visible share of a node's CPU. So
// the bodies of POST /v1/tx and /v1/tx/batch first take a fast path (fastTxBody,
// fastBatchBody) that reads the bytes once and can only accept: on anything it
// does not accept it gives up, and the slow path decodes the body again and
// either accepts it or writes the error. The fast path must therefore never
// accept a body that the slow path refuses, nor decode one differently.
// FuzzDecodeDiff checks that.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/notify"
	"github.com/txlog/txlog/txid"
)

// limits are the bounds the decoders check.
type limits struct {
	maxKeyBytes int
	maxOps      int
	maxTxs      int
	notify      *notify.AllowList // the hosts a notify url may name; nil: none
}

// fieldError is a body that is valid JSON but breaks the schema or a rule. The
// entry points turn it into an *Error with the code of the body they decode.
// Its wording is m of wire's messages table with parts, formatted only when
// the error is written (Error), never on the decoders' way to an accepted
// body.
type fieldError struct {
	path  string
	m     wire.Msg
	parts []any
}

func (e *fieldError) Error() string { return e.path + ": " + wire.Text(e.m, e.parts...) }

func fieldErr(path string, m wire.Msg, parts ...any) error {
	return &fieldError{path: path, m: m, parts: parts}
}

// asError gives err, from a decoder of this file, the wire code schemaCode when
// it is a schema error.
func asError(err error, schemaCode string) error {
	if fe, ok := errors.AsType[*fieldError](err); ok {
		return &wire.Error{Code: schemaCode, Message: fe.Error()}
	}
	return err
}

// decodeTxBody decodes and validates the body of POST /v1/tx. The values of
// the result may alias body, which the caller must not change afterwards.
func decodeTxBody(body []byte, lim limits) (wire.TxRequest, error) {
	if tx, ok := fastTxBody(body, lim); ok {
		return tx, nil
	}
	return slowTxBody(body, lim)
}

// decodeBatchBody decodes and validates the body of POST /v1/tx/batch. Two
// transactions of one batch may not share an idempotency key. The values of
// the result may alias body, which the caller must not change afterwards.
func decodeBatchBody(body []byte, lim limits) (wire.BatchRequest, error) {
	if req, ok := fastBatchBody(body, lim); ok {
		return req, nil
	}
	return slowBatchBody(body, lim)
}

// slowTxBody is decodeTxBody on the slow path.
func slowTxBody(body []byte, lim limits) (wire.TxRequest, error) {
	raw, err := jsonBody(body)
	if err != nil {
		return wire.TxRequest{}, err
	}
	tx, err := decodeTx(raw, "", lim)
	return tx, asError(err, wire.CodeInvalidTx)
}

// slowBatchBody is decodeBatchBody on the slow path.
func slowBatchBody(body []byte, lim limits) (wire.BatchRequest, error) {
	raw, err := jsonBody(body)
	if err != nil {
		return wire.BatchRequest{}, err
	}
	req, err := decodeBatch(raw, lim)
	return req, asError(err, wire.CodeInvalidTx)
}

func decodeBatch(raw json.RawMessage, lim limits) (wire.BatchRequest, error) {
	var req wire.BatchRequest
	fields, err := objectFields(raw, "")
	if err != nil {
		return req, err
	}
	var txs json.RawMessage
	for _, f := range fields {
		switch f.name {
		case "txs":
			txs = f.raw
		default:
			return req, fieldErr(f.name, wire.MsgFieldUnknown)
		}
	}
	if txs == nil {
		return req, fieldErr("txs", wire.MsgFieldMissing)
	}
	elems, err := arrayElems(txs, "txs", lim.maxTxs)
	if err != nil {
		return req, err
	}
	if len(elems) == 0 {
		return req, fieldErr("txs", wire.MsgFieldEmpty)
	}
	req.Txs = make([]wire.TxRequest, len(elems))
	first := make(map[string]int) // idempotency key → index of the first tx with it
	for i, e := range elems {
		path := fmt.Sprintf("txs[%d]", i)
		if req.Txs[i], err = decodeTx(e, path, lim); err != nil {
			return req, err
		}
		if k := req.Txs[i].IdempotencyKey; k != "" {
			if j, ok := first[k]; ok {
				return req, fieldErr(path+".idempotency_key", wire.MsgFieldSameKey, j)
			}
			first[k] = i
		}
	}
	return req, nil
}

// decodeTx decodes one transaction object found at path ("" for the body).
func decodeTx(raw json.RawMessage, path string, lim limits) (wire.TxRequest, error) {
	var tx wire.TxRequest
	fields, err := objectFields(raw, path)
	if err != nil {
		return tx, err
	}
	var ops json.RawMessage
	for _, f := range fields {
		fp := join(path, f.name)
		switch f.name {
		case "idempotency_key":
			if tx.IdempotencyKey, err = stringValue(f.raw, fp); err != nil {
				return tx, err
			}
			if err := checkIdempotencyKey(tx.IdempotencyKey, fp); err != nil {
				return tx, err
			}
		case "ops":
			ops = f.raw
		case "fence":
			if tx.Fence, err = decodeFence(f.raw, fp, lim); err != nil {
				return tx, err
			}
		case "notify":
			if tx.Notify, err = decodeNotify(f.raw, fp, lim); err != nil {
				return tx, err
			}
		default:
			return tx, fieldErr(fp, wire.MsgFieldUnknown)
		}
	}
	opsPath := join(path, "ops")
	if ops == nil {
		return tx, fieldErr(opsPath, wire.MsgFieldMissing)
	}
	elems, err := arrayElems(ops, opsPath, lim.maxOps)
	if err != nil {
		return tx, err
	}
	if len(elems) == 0 {
		return tx, fieldErr(opsPath, wire.MsgFieldEmpty)
	}
	tx.Ops = make([]wire.Op, len(elems))
	for i, e := range elems {
		if tx.Ops[i], err = decodeOp(e, fmt.Sprintf("%s[%d]", opsPath, i), lim); err != nil {
			return tx, err
		}
	}
	if i, j := dupGroup(tx.Ops); j >= 0 {
		return tx, fieldErr(fmt.Sprintf("%s[%d].group", opsPath, j), wire.MsgFieldGroupTwice, tx.Ops[j].Group, i)
	}
	return tx, nil
}

// decodeFence decodes a transaction's fence found at path:
// {"lease":"name","token":N}, the name with the rules of a key, N positive.
func decodeFence(raw json.RawMessage, path string, lim limits) (*wire.Fence, error) {
	fields, err := objectFields(raw, path)
	if err != nil {
		return nil, err
	}
	f := &wire.Fence{}
	var hasLease, hasToken bool
	for _, fl := range fields {
		fp := join(path, fl.name)
		switch fl.name {
		case "lease":
			hasLease = true
			if f.Lease, err = stringValue(fl.raw, fp); err != nil {
				return nil, err
			}
		case "token":
			hasToken = true
			if f.Token, err = uintValue(fl.raw, fp); err != nil {
				return nil, err
			}
		default:
			return nil, fieldErr(fp, wire.MsgFieldUnknown)
		}
	}
	switch {
	case !hasLease:
		return nil, fieldErr(join(path, "lease"), wire.MsgFieldMissing)
	case !hasToken:
		return nil, fieldErr(join(path, "token"), wire.MsgFieldMissing)
	case f.Token == 0:
		return nil, fieldErr(join(path, "token"), wire.MsgFieldNotPositive)
	}
	if err := checkKey(f.Lease, join(path, "lease"), lim.maxKeyBytes); err != nil {
		return nil, err
	}
	return f, nil
}

// decodeNotify decodes a transaction's callback found at path: {"url":"…"}.
// A url that is not http(s) or whose host the allow-list refuses is a
// *wire.Error with code notify_not_allowed.
func decodeNotify(raw json.RawMessage, path string, lim limits) (*wire.Notify, error) {
	fields, err := objectFields(raw, path)
	if err != nil {
		return nil, err
	}
	n := &wire.Notify{}
	var hasURL bool
	for _, fl := range fields {
		fp := join(path, fl.name)
		switch fl.name {
		case "url":
			hasURL = true
			if n.URL, err = stringValue(fl.raw, fp); err != nil {
				return nil, err
			}
		default:
			return nil, fieldErr(fp, wire.MsgFieldUnknown)
		}
	}
	if !hasURL {
		return nil, fieldErr(join(path, "url"), wire.MsgFieldMissing)
	}
	if err := lim.notify.Check(n.URL); err != nil {
		return nil, wire.New(wire.MsgNotifyRefused, join(path, "url"), err)
	}
	return n, nil
}

// decodeOp decodes one operation object found at path.
//
// A put needs a value, and the JSON null is a value: it is stored as null. A
// delete must not have one. The value is kept as raw JSON, compacted.
func decodeOp(raw json.RawMessage, path string, lim limits) (wire.Op, error) {
	var op wire.Op
	fields, err := objectFields(raw, path)
	if err != nil {
		return op, err
	}
	var hasOp, hasKey bool
	var of offsetFields
	for _, f := range fields {
		fp := join(path, f.name)
		switch f.name {
		case "group", "offset", "reset":
			if err := of.decode(&op, f, fp); err != nil {
				return op, err
			}
		case "op":
			hasOp = true
			if op.Op, err = stringValue(f.raw, fp); err != nil {
				return op, err
			}
		case "key":
			hasKey = true
			if op.Key, err = stringValue(f.raw, fp); err != nil {
				return op, err
			}
		case "value":
			var buf bytes.Buffer
			if err := json.Compact(&buf, f.raw); err != nil {
				return op, fieldErr(fp, wire.MsgFieldInvalid, err) // unreachable: raw is valid JSON
			}
			op.Value = buf.Bytes()
		case "if_version":
			v, err := uintValue(f.raw, fp)
			if err != nil {
				return op, err
			}
			op.IfVersion = &v
		default:
			return op, fieldErr(fp, wire.MsgFieldUnknown)
		}
	}
	switch {
	case !hasOp:
		return op, fieldErr(join(path, "op"), wire.MsgFieldMissing)
	case op.Op == wire.OpCommitOffset:
		return op, checkOffsetOp(op, of, path, lim)
	case op.Op != wire.OpPut && op.Op != wire.OpDelete:
		return op, fieldErr(join(path, "op"), wire.MsgFieldOpUnknown, op.Op, wire.OpPut, wire.OpDelete, wire.OpCommitOffset)
	case of.first != "":
		return op, fieldErr(join(path, of.first), wire.MsgFieldOnlyOn, wire.OpCommitOffset)
	case !hasKey:
		return op, fieldErr(join(path, "key"), wire.MsgFieldMissing)
	}
	if err := checkKey(op.Key, join(path, "key"), lim.maxKeyBytes); err != nil {
		return op, err
	}
	if op.Op == wire.OpPut && op.Value == nil {
		return op, fieldErr(join(path, "value"), wire.MsgFieldPutValue)
	}
	if op.Op == wire.OpDelete && op.Value != nil {
		return op, fieldErr(join(path, "value"), wire.MsgFieldNotAllowedOn, wire.OpDelete)
	}
	return op, nil
}

// checkKey checks a key: not empty, at most max bytes, valid UTF-8 and without
// U+FFFD. encoding/json turns a lone surrogate escape such as "\udc00" into
// U+FFFD, so a key with U+FFFD is refused rather than stored as something the
// client did not send.
func checkKey(key, path string, max int) error {
	switch {
	case key == "":
		return fieldErr(path, wire.MsgFieldEmpty)
	case len(key) > max:
		return fieldErr(path, wire.MsgFieldTooLong, len(key), max)
	}
	return checkText(key, path)
}

// checkIdempotencyKey checks an idempotency key; empty means none.
func checkIdempotencyKey(key, path string) error {
	if len(key) > MaxIdempotencyKeyBytes {
		return fieldErr(path, wire.MsgFieldTooLong, len(key), MaxIdempotencyKeyBytes)
	}
	return checkText(key, path)
}

// checkText refuses invalid UTF-8 and U+FFFD with code invalid_utf8.
func checkText(s, path string) error {
	if !utf8.ValidString(s) {
		return wire.New(wire.MsgNotUTF8, path)
	}
	if strings.ContainsRune(s, utf8.RuneError) {
		return wire.New(wire.MsgHasReplacement, path)
	}
	return nil
}

// jsonBody checks that body is valid UTF-8 holding exactly one JSON value, and
// returns that value.
func jsonBody(body []byte) (json.RawMessage, error) {
	if !utf8.Valid(body) {
		return nil, wire.New(wire.MsgNotUTF8, "body")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, syntaxError(err)
	}
	off := dec.InputOffset()
	if _, err := dec.Token(); err != io.EOF {
		return nil, wire.New(wire.MsgBodyTrailing, off)
	}
	return raw, nil
}

func syntaxError(err error) error {
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return wire.New(wire.MsgBodySyntax, se.Offset, se)
	}
	switch {
	case errors.Is(err, io.EOF):
		return wire.New(wire.MsgBodyEmpty)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return wire.New(wire.MsgBodyTruncated)
	}
	return wire.New(wire.MsgBodyBadJSON, err)
}

// field is one member of a JSON object, in the order of the text.
type field struct {
	name string
	raw  json.RawMessage
}

// objectFields splits raw, a valid JSON value found at path ("" for the body),
// into the members of an object, refusing any other kind of value and a name
// that comes twice.
func objectFields(raw json.RawMessage, path string) ([]field, error) {
	if k := kind(raw); k != "object" {
		return nil, fieldErr(orBody(path), wire.MsgFieldKind, "object", k)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // {
		return nil, syntaxError(err)
	}
	var fields []field
	seen := make(map[string]bool)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, syntaxError(err)
		}
		name, _ := tok.(string) // object keys are always strings
		if seen[name] {
			return nil, fieldErr(join(path, name), wire.MsgFieldTwice)
		}
		seen[name] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, syntaxError(err)
		}
		fields = append(fields, field{name: name, raw: v})
	}
	return fields, nil
}

// arrayElems splits raw, a valid JSON value, into the elements of an array of
// at most max elements.
func arrayElems(raw json.RawMessage, path string, max int) ([]json.RawMessage, error) {
	if k := kind(raw); k != "array" {
		return nil, fieldErr(path, wire.MsgFieldKind, "array", k)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // [
		return nil, syntaxError(err)
	}
	var elems []json.RawMessage
	for dec.More() {
		if len(elems) == max {
			return nil, fieldErr(path, wire.MsgFieldTooMany, max)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, syntaxError(err)
		}
		elems = append(elems, v)
	}
	return elems, nil
}

// stringValue decodes a JSON string.
func stringValue(raw json.RawMessage, path string) (string, error) {
	if k := kind(raw); k != "string" {
		return "", fieldErr(path, wire.MsgFieldKind, "string", k)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fieldErr(path, wire.MsgFieldInvalid, err) // unreachable: raw is a valid string
	}
	return s, nil
}

// uintValue decodes a JSON number that is a non-negative integer of 64 bits,
// written without fraction or exponent.
func uintValue(raw json.RawMessage, path string) (uint64, error) {
	if k := kind(raw); k != "number" {
		return 0, fieldErr(path, wire.MsgFieldKind, "non-negative integer", k)
	}
	s := string(raw)
	if strings.HasPrefix(s, "-") {
		return 0, fieldErr(path, wire.MsgFieldNegative, s)
	}
	if strings.ContainsAny(s, ".eE") {
		return 0, fieldErr(path, wire.MsgFieldKind, "non-negative integer", s)
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fieldErr(path, wire.MsgFieldOverflow, s)
	}
	return v, nil
}

// boolValue reads the JSON boolean raw at path.
func boolValue(raw json.RawMessage, path string) (bool, error) {
	if k := kind(raw); k != "boolean" {
		return false, fieldErr(path, wire.MsgFieldKind, "boolean", k)
	}
	return raw[0] == 't', nil
}

// kind names the kind of the valid JSON value raw.
func kind(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// join appends a field name to a path.
func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// orBody names the body when path is empty.
func orBody(path string) string {
	if path == "" {
		return "body"
	}
	return path
}

// decodeJoinBody decodes and validates the body of POST /v1/cluster/join: id
// and raft_addr are required; voter, node_number and replace are optional.
func decodeJoinBody(body []byte) (wire.JoinRequest, error) {
	var req wire.JoinRequest
	err := decodeObject(body, func(f field) error {
		var err error
		switch f.name {
		case "id":
			req.ID, err = stringValue(f.raw, f.name)
		case "raft_addr":
			req.RaftAddr, err = stringValue(f.raw, f.name)
		case "http_addr":
			req.HTTPAddr, err = stringValue(f.raw, f.name)
		case "voter":
			var v bool
			if v, err = boolValue(f.raw, f.name); err == nil {
				req.Voter = &v
			}
		case "replace":
			req.Replace, err = boolValue(f.raw, f.name)
		case "node_number":
			var v uint64
			if v, err = uintValue(f.raw, f.name); err == nil && (v < 1 || v > txid.MaxNode) {
				err = fieldErr(f.name, wire.MsgFieldNodeNumber, v, txid.MaxNode)
			}
			req.NodeNumber = int(v)
		default:
			err = fieldErr(f.name, wire.MsgFieldUnknown)
		}
		return err
	})
	if err != nil {
		return req, err
	}
	return req, asError(checkJoin(req), wire.CodeBadRequest)
}

// checkJoin checks a decoded join body: id and raft_addr given, the
// addresses and id valid text, and raft_addr one other nodes can dial.
func checkJoin(req wire.JoinRequest) error {
	for _, c := range []struct{ name, v string }{{"id", req.ID}, {"raft_addr", req.RaftAddr}, {"http_addr", req.HTTPAddr}} {
		if c.v == "" && c.name != "http_addr" {
			return fieldErr(c.name, wire.MsgFieldMissingOrEmpty)
		}
		if err := checkText(c.v, c.name); err != nil {
			return err
		}
	}
	return checkPeerAddr(req.RaftAddr, "raft_addr")
}

// checkPeerAddr refuses an address other nodes cannot dial: anything but
// host:port with a host that is not unspecified (0.0.0.0, ::) and a port in
// 1..65535. A voter added at such an address could never be reached, and a
// few of them would take the quorum away.
func checkPeerAddr(addr, name string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fieldErr(name, wire.MsgFieldAddrForm, addr)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		return fieldErr(name, wire.MsgFieldAddrHost, addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fieldErr(name, wire.MsgFieldAddrPort, addr)
	}
	return nil
}

// decodeTransferBody decodes the optional body of POST
// /v1/cluster/transfer-leadership; an empty body means "let Raft choose".
func decodeTransferBody(body []byte) (wire.TransferRequest, error) {
	var req wire.TransferRequest
	if len(bytes.TrimSpace(body)) == 0 {
		return req, nil
	}
	err := decodeObject(body, func(f field) error {
		if f.name != "id" {
			return fieldErr(f.name, wire.MsgFieldUnknown)
		}
		var err error
		req.ID, err = stringValue(f.raw, "id")
		return err
	})
	if err != nil {
		return req, err
	}
	return req, asError(checkText(req.ID, "id"), wire.CodeBadRequest)
}

// decodeObject decodes body, which must hold one JSON object, calling each
// with its members in order until one is refused: the decoding of a body
// that is not a transaction (its schema errors are bad_request).
func decodeObject(body []byte, each func(f field) error) error {
	raw, err := jsonBody(body)
	if err != nil {
		return err
	}
	fields, err := objectFields(raw, "")
	for i := 0; err == nil && i < len(fields); i++ {
		err = each(fields[i])
	}
	return asError(err, wire.CodeBadRequest)
}
