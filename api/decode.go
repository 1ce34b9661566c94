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
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// limits are the bounds the decoders check.
type limits struct {
	maxKeyBytes int
	maxOps      int
	maxTxs      int
}

// fieldError is a body that is valid JSON but breaks the schema or a rule. The
// entry points turn it into an *Error with the code of the body they decode.
type fieldError struct {
	path string
	msg  string
}

func (e *fieldError) Error() string { return e.path + ": " + e.msg }

func fieldErr(path, format string, args ...any) error {
	return &fieldError{path: path, msg: fmt.Sprintf(format, args...)}
}

// asError gives err, from a decoder of this file, the wire code schemaCode when
// it is a schema error.
func asError(err error, schemaCode string) error {
	if fe, ok := errors.AsType[*fieldError](err); ok {
		return &Error{Code: schemaCode, Message: fe.Error()}
	}
	return err
}

// decodeTxBody decodes and validates the body of POST /v1/tx. The values of
// the result may alias body, which the caller must not change afterwards.
func decodeTxBody(body []byte, lim limits) (TxRequest, error) {
	if tx, ok := fastTxBody(body, lim); ok {
		return tx, nil
	}
	return slowTxBody(body, lim)
}

// decodeBatchBody decodes and validates the body of POST /v1/tx/batch. Two
// transactions of one batch may not share an idempotency key. The values of
// the result may alias body, which the caller must not change afterwards.
func decodeBatchBody(body []byte, lim limits) (BatchRequest, error) {
	if req, ok := fastBatchBody(body, lim); ok {
		return req, nil
	}
	return slowBatchBody(body, lim)
}

// slowTxBody is decodeTxBody on the slow path.
func slowTxBody(body []byte, lim limits) (TxRequest, error) {
	raw, err := jsonBody(body)
	if err != nil {
		return TxRequest{}, err
	}
	tx, err := decodeTx(raw, "", lim)
	return tx, asError(err, CodeInvalidTx)
}

// slowBatchBody is decodeBatchBody on the slow path.
func slowBatchBody(body []byte, lim limits) (BatchRequest, error) {
	raw, err := jsonBody(body)
	if err != nil {
		return BatchRequest{}, err
	}
	req, err := decodeBatch(raw, lim)
	return req, asError(err, CodeInvalidTx)
}

func decodeBatch(raw json.RawMessage, lim limits) (BatchRequest, error) {
	var req BatchRequest
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
			return req, fieldErr(f.name, "unknown field")
		}
	}
	if txs == nil {
		return req, fieldErr("txs", "missing")
	}
	elems, err := arrayElems(txs, "txs", lim.maxTxs)
	if err != nil {
		return req, err
	}
	if len(elems) == 0 {
		return req, fieldErr("txs", "empty")
	}
	req.Txs = make([]TxRequest, len(elems))
	first := make(map[string]int) // idempotency key → index of the first tx with it
	for i, e := range elems {
		path := fmt.Sprintf("txs[%d]", i)
		if req.Txs[i], err = decodeTx(e, path, lim); err != nil {
			return req, err
		}
		if k := req.Txs[i].IdempotencyKey; k != "" {
			if j, ok := first[k]; ok {
				return req, fieldErr(path+".idempotency_key", "same as txs[%d]", j)
			}
			first[k] = i
		}
	}
	return req, nil
}

// decodeTx decodes one transaction object found at path ("" for the body).
func decodeTx(raw json.RawMessage, path string, lim limits) (TxRequest, error) {
	var tx TxRequest
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
		default:
			return tx, fieldErr(fp, "unknown field")
		}
	}
	opsPath := join(path, "ops")
	if ops == nil {
		return tx, fieldErr(opsPath, "missing")
	}
	elems, err := arrayElems(ops, opsPath, lim.maxOps)
	if err != nil {
		return tx, err
	}
	if len(elems) == 0 {
		return tx, fieldErr(opsPath, "empty")
	}
	tx.Ops = make([]Op, len(elems))
	for i, e := range elems {
		if tx.Ops[i], err = decodeOp(e, fmt.Sprintf("%s[%d]", opsPath, i), lim); err != nil {
			return tx, err
		}
	}
	return tx, nil
}

// decodeOp decodes one operation object found at path.
//
// A put needs a value, and the JSON null is a value: it is stored as null. A
// delete must not have one. The value is kept as raw JSON, compacted.
func decodeOp(raw json.RawMessage, path string, lim limits) (Op, error) {
	var op Op
	fields, err := objectFields(raw, path)
	if err != nil {
		return op, err
	}
	var hasOp, hasKey bool
	for _, f := range fields {
		fp := join(path, f.name)
		switch f.name {
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
				return op, fieldErr(fp, "%v", err) // unreachable: raw is valid JSON
			}
			op.Value = buf.Bytes()
		case "if_version":
			v, err := uintValue(f.raw, fp)
			if err != nil {
				return op, err
			}
			op.IfVersion = &v
		default:
			return op, fieldErr(fp, "unknown field")
		}
	}
	switch {
	case !hasOp:
		return op, fieldErr(join(path, "op"), "missing")
	case op.Op != OpPut && op.Op != OpDelete:
		return op, fieldErr(join(path, "op"), "unknown %q, want %q or %q", op.Op, OpPut, OpDelete)
	case !hasKey:
		return op, fieldErr(join(path, "key"), "missing")
	}
	if err := checkKey(op.Key, join(path, "key"), lim.maxKeyBytes); err != nil {
		return op, err
	}
	if op.Op == OpPut && op.Value == nil {
		return op, fieldErr(join(path, "value"), "missing; a put needs a value (null is a value)")
	}
	if op.Op == OpDelete && op.Value != nil {
		return op, fieldErr(join(path, "value"), "not allowed on a delete")
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
		return fieldErr(path, "empty")
	case len(key) > max:
		return fieldErr(path, "%d bytes, limit %d", len(key), max)
	}
	return checkText(key, path)
}

// checkIdempotencyKey checks an idempotency key; empty means none.
func checkIdempotencyKey(key, path string) error {
	if len(key) > MaxIdempotencyKeyBytes {
		return fieldErr(path, "%d bytes, limit %d", len(key), MaxIdempotencyKeyBytes)
	}
	return checkText(key, path)
}

// checkText refuses invalid UTF-8 and U+FFFD with code invalid_utf8.
func checkText(s, path string) error {
	if !utf8.ValidString(s) {
		return &Error{Code: CodeInvalidUTF8, Message: path + ": not valid UTF-8"}
	}
	if strings.ContainsRune(s, utf8.RuneError) {
		return &Error{Code: CodeInvalidUTF8, Message: path + ": contains U+FFFD (a lone surrogate escape or a replaced byte)"}
	}
	return nil
}

// jsonBody checks that body is valid UTF-8 holding exactly one JSON value, and
// returns that value.
func jsonBody(body []byte) (json.RawMessage, error) {
	if !utf8.Valid(body) {
		return nil, &Error{Code: CodeInvalidUTF8, Message: "body: not valid UTF-8"}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, syntaxError(err)
	}
	off := dec.InputOffset()
	if _, err := dec.Token(); err != io.EOF {
		return nil, &Error{Code: CodeInvalidJSON, Message: fmt.Sprintf("body: data after the JSON value at offset %d", off)}
	}
	return raw, nil
}

func syntaxError(err error) error {
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return &Error{Code: CodeInvalidJSON, Message: fmt.Sprintf("body: invalid JSON at offset %d: %v", se.Offset, se)}
	}
	switch {
	case errors.Is(err, io.EOF):
		return &Error{Code: CodeInvalidJSON, Message: "body: empty"}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &Error{Code: CodeInvalidJSON, Message: "body: truncated JSON"}
	}
	return &Error{Code: CodeInvalidJSON, Message: fmt.Sprintf("body: %v", err)}
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
		return nil, fieldErr(orBody(path), "want object, got %s", k)
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
			return nil, fieldErr(join(path, name), "given twice")
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
		return nil, fieldErr(path, "want array, got %s", k)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // [
		return nil, syntaxError(err)
	}
	var elems []json.RawMessage
	for dec.More() {
		if len(elems) == max {
			return nil, fieldErr(path, "more than %d elements", max)
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
		return "", fieldErr(path, "want string, got %s", k)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fieldErr(path, "%v", err) // unreachable: raw is a valid string
	}
	return s, nil
}

// uintValue decodes a JSON number that is a non-negative integer of 64 bits,
// written without fraction or exponent.
func uintValue(raw json.RawMessage, path string) (uint64, error) {
	if k := kind(raw); k != "number" {
		return 0, fieldErr(path, "want non-negative integer, got %s", k)
	}
	s := string(raw)
	if strings.HasPrefix(s, "-") {
		return 0, fieldErr(path, "negative (%s)", s)
	}
	if strings.ContainsAny(s, ".eE") {
		return 0, fieldErr(path, "want non-negative integer, got %s", s)
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fieldErr(path, "%s does not fit 64 bits", s)
	}
	return v, nil
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

// The fast path.

// maxFastDepth bounds the nesting of a value on the fast path; deeper values
// take the slow path, which allows the 10000 levels of encoding/json.
const maxFastDepth = 100

// fastTxBody decodes the body of POST /v1/tx if it is valid and simple enough;
// ok is false otherwise. Values alias body.
func fastTxBody(body []byte, lim limits) (tx TxRequest, ok bool) {
	if !utf8.Valid(body) {
		return TxRequest{}, false
	}
	d := fastDecoder{b: body, lim: lim}
	if tx, ok = d.tx(); !ok || !d.end() {
		return TxRequest{}, false
	}
	return tx, true
}

// fastBatchBody decodes the body of POST /v1/tx/batch if it is valid and
// simple enough; ok is false otherwise. Values alias body.
func fastBatchBody(body []byte, lim limits) (req BatchRequest, ok bool) {
	if !utf8.Valid(body) {
		return BatchRequest{}, false
	}
	d := fastDecoder{b: body, lim: lim}
	if req, ok = d.batch(); !ok || !d.end() {
		return BatchRequest{}, false
	}
	return req, true
}

// fastDecoder reads a body that is valid UTF-8 from the start. Every method
// returns ok false when the input is not what it accepts, and then the
// decoder's position means nothing.
//
// It accepts member names without escapes only, and values nested at most
// maxFastDepth deep. Everything else it checks the way the slow path does:
// the JSON grammar (RFC 8259, as encoding/json reads it), the schema, the
// limits and the rules on keys.
type fastDecoder struct {
	b      []byte
	i      int // the next byte to read
	spaces int // bytes of white space skipped so far
	lim    limits
}

func (d *fastDecoder) batch() (req BatchRequest, ok bool) {
	if !d.next('{') {
		return req, false
	}
	if name, ok := d.name(); !ok || string(name) != "txs" || !d.next('[') {
		return req, false
	}
	for more := true; more; {
		if len(req.Txs) == d.lim.maxTxs {
			return req, false
		}
		tx, ok := d.tx()
		if !ok {
			return req, false
		}
		req.Txs = append(req.Txs, tx)
		if more, ok = d.more(']'); !ok {
			return req, false
		}
	}
	// A second member would be "txs" again or unknown.
	if more, ok := d.more('}'); !ok || more {
		return req, false
	}
	if len(req.Txs) > 1 {
		seen := make(map[string]struct{}, len(req.Txs))
		for _, tx := range req.Txs {
			if k := tx.IdempotencyKey; k != "" {
				if _, dup := seen[k]; dup {
					return req, false
				}
				seen[k] = struct{}{}
			}
		}
	}
	return req, true
}

func (d *fastDecoder) tx() (tx TxRequest, ok bool) {
	if !d.next('{') {
		return tx, false
	}
	var hasKey bool
	for more := true; more; {
		name, ok := d.name()
		if !ok {
			return tx, false
		}
		switch string(name) {
		case "idempotency_key":
			if hasKey {
				return tx, false
			}
			hasKey = true
			if tx.IdempotencyKey, ok = d.text(); !ok || checkIdempotencyKey(tx.IdempotencyKey, "") != nil {
				return tx, false
			}
		case "ops":
			if tx.Ops != nil {
				return tx, false
			}
			if tx.Ops, ok = d.ops(); !ok {
				return tx, false
			}
		default:
			return tx, false
		}
		if more, ok = d.more('}'); !ok {
			return tx, false
		}
	}
	return tx, tx.Ops != nil
}

// ops reads a non-empty array of operations.
func (d *fastDecoder) ops() ([]Op, bool) {
	if !d.next('[') {
		return nil, false
	}
	var buf [4]Op
	ops := buf[:0]
	for more := true; more; {
		if len(ops) == d.lim.maxOps {
			return nil, false
		}
		op, ok := d.op()
		if !ok {
			return nil, false
		}
		ops = append(ops, op)
		if more, ok = d.more(']'); !ok {
			return nil, false
		}
	}
	return append([]Op(nil), ops...), true
}

func (d *fastDecoder) op() (op Op, ok bool) {
	if !d.next('{') {
		return op, false
	}
	var hasKey bool
	for more := true; more; {
		name, ok := d.name()
		if !ok {
			return op, false
		}
		switch string(name) {
		case "op":
			if op.Op != "" {
				return op, false
			}
			op.Op, ok = d.opName()
		case "key":
			if hasKey {
				return op, false
			}
			hasKey = true
			op.Key, ok = d.text()
		case "value":
			if op.Value != nil {
				return op, false
			}
			op.Value, ok = d.compactValue()
		case "if_version":
			if op.IfVersion != nil {
				return op, false
			}
			var v uint64
			v, ok = d.uint()
			op.IfVersion = &v
		default:
			return op, false
		}
		if !ok {
			return op, false
		}
		if more, ok = d.more('}'); !ok {
			return op, false
		}
	}
	switch {
	case op.Op == "" || !hasKey || checkKey(op.Key, "", d.lim.maxKeyBytes) != nil:
		return op, false
	case op.Op == OpPut && op.Value == nil, op.Op == OpDelete && op.Value != nil:
		return op, false
	}
	return op, true
}

// opName reads the string "put" or "delete".
func (d *fastDecoder) opName() (string, bool) {
	start := d.i
	text, escaped, ok := d.str()
	if !ok {
		return "", false
	}
	if escaped {
		var s string
		if json.Unmarshal(d.b[start:d.i], &s) != nil {
			return "", false
		}
		text = []byte(s)
	}
	switch string(text) {
	case OpPut:
		return OpPut, true
	case OpDelete:
		return OpDelete, true
	}
	return "", false
}

// text reads a string, unescaped the way stringValue does it.
func (d *fastDecoder) text() (string, bool) {
	start := d.i
	text, escaped, ok := d.str()
	if !ok {
		return "", false
	}
	if !escaped {
		return string(text), true // valid UTF-8: the body is
	}
	var s string
	if json.Unmarshal(d.b[start:d.i], &s) != nil {
		return "", false
	}
	return s, true
}

// uint reads a number that is a non-negative integer of 64 bits, written
// without fraction or exponent.
func (d *fastDecoder) uint() (uint64, bool) {
	start := d.i
	if !d.number() {
		return 0, false
	}
	var v uint64
	for _, c := range d.b[start:d.i] {
		if c < '0' || c > '9' {
			return 0, false
		}
		n := uint64(c - '0')
		if v > (math.MaxUint64-n)/10 {
			return 0, false
		}
		v = v*10 + n
	}
	return v, true
}

// compactValue reads any value and returns it compacted, as a slice of the
// body when it has no white space to drop. The slice's capacity ends with it,
// so an append to it cannot write over the rest of the body.
func (d *fastDecoder) compactValue() (json.RawMessage, bool) {
	start, spaces := d.i, d.spaces
	if !d.value(maxFastDepth) {
		return nil, false
	}
	v := d.b[start:d.i:d.i]
	if d.spaces == spaces {
		return v, true
	}
	var buf bytes.Buffer
	if json.Compact(&buf, v) != nil {
		return nil, false // unreachable: v is valid
	}
	return buf.Bytes(), true
}

// value reads any value nested at most depth deep, without the white space
// after it.
func (d *fastDecoder) value(depth int) bool {
	if d.i >= len(d.b) {
		return false
	}
	switch c := d.b[d.i]; {
	case c == '"':
		_, _, ok := d.str()
		return ok
	case c == '{', c == '[':
		if depth == 0 {
			return false
		}
		d.i++
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		if d.next(end) {
			return true
		}
		for more := true; more; {
			d.space()
			if c == '{' {
				if _, _, ok := d.str(); !ok || !d.next(':') {
					return false
				}
				d.space()
			}
			if !d.value(depth - 1) {
				return false
			}
			var ok bool
			if more, ok = d.more(end); !ok {
				return false
			}
		}
		return true
	case c == 't':
		return d.literal("true")
	case c == 'f':
		return d.literal("false")
	case c == 'n':
		return d.literal("null")
	}
	return d.number()
}

func (d *fastDecoder) literal(lit string) bool {
	if !bytes.HasPrefix(d.b[d.i:], []byte(lit)) {
		return false
	}
	d.i += len(lit)
	return true
}

// number reads a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *fastDecoder) number() bool {
	b, i := d.b, d.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = digits(b, i)
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		if i+1 >= len(b) || !isDigit(b[i+1]) {
			return false
		}
		i = digits(b, i+1)
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return false
		}
		i = digits(b, i)
	}
	d.i = i
	return true
}

// digits returns the index of the first byte at or after i in b that is not
// a digit.
func digits(b []byte, i int) int {
	for i < len(b) && isDigit(b[i]) {
		i++
	}
	return i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// strStop marks the bytes that end the plain run of a string: the quote, the
// backslash and the control characters.
var strStop = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// str reads a string and returns the bytes between its quotes, and whether
// they hold an escape.
func (d *fastDecoder) str() (text []byte, escaped, ok bool) {
	b := d.b
	if d.i >= len(b) || b[d.i] != '"' {
		return nil, false, false
	}
	start := d.i + 1
	for i := start; i < len(b); {
		for i < len(b) && !strStop[b[i]] {
			i++
		}
		if i == len(b) {
			break
		}
		switch b[i] {
		case '"':
			d.i = i + 1
			return b[start:i], escaped, true
		case '\\':
			escaped = true
			if i+1 >= len(b) {
				return nil, false, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return nil, false, false
				}
				i += 6
			default:
				return nil, false, false
			}
		default: // a control character
			return nil, false, false
		}
	}
	return nil, false, false
}

func isHex(c byte) bool {
	return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// name reads a member name without escapes, and the colon after it.
func (d *fastDecoder) name() ([]byte, bool) {
	d.space()
	name, escaped, ok := d.str()
	if !ok || escaped || !d.next(':') {
		return nil, false
	}
	d.space()
	return name, true
}

// more reads what follows a member or an element: more is true after a comma
// and false after end, the byte that closes the object or array.
func (d *fastDecoder) more(end byte) (more, ok bool) {
	d.space()
	if d.i < len(d.b) {
		switch d.b[d.i] {
		case ',':
			d.i++
			return true, true
		case end:
			d.i++
			return false, true
		}
	}
	return false, false
}

// next skips white space and reads c if it comes next.
func (d *fastDecoder) next(c byte) bool {
	d.space()
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// end reports whether only white space is left.
func (d *fastDecoder) end() bool {
	d.space()
	return d.i == len(d.b)
}

func (d *fastDecoder) space() {
	start := d.i
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
			continue
		}
		break
	}
	d.spaces += d.i - start
}

// decodeJoinBody decodes and validates the body of POST /v1/cluster/join: id
// and raft_addr are required.
func decodeJoinBody(body []byte) (JoinRequest, error) {
	var req JoinRequest
	raw, err := jsonBody(body)
	if err != nil {
		return req, err
	}
	err = func() error {
		fields, err := objectFields(raw, "")
		if err != nil {
			return err
		}
		for _, f := range fields {
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
				if k := kind(f.raw); k != "boolean" {
					return fieldErr(f.name, "want boolean, got %s", k)
				}
				v = f.raw[0] == 't'
				req.Voter = &v
			default:
				err = fieldErr(f.name, "unknown field")
			}
			if err != nil {
				return err
			}
		}
		for _, c := range []struct{ name, v string }{{"id", req.ID}, {"raft_addr", req.RaftAddr}, {"http_addr", req.HTTPAddr}} {
			if c.v == "" && c.name != "http_addr" {
				return fieldErr(c.name, "missing or empty")
			}
			if err := checkText(c.v, c.name); err != nil {
				return err
			}
		}
		return nil
	}()
	return req, asError(err, CodeBadRequest)
}

// decodeTransferBody decodes the optional body of POST
// /v1/cluster/transfer-leadership; an empty body means "let Raft choose".
func decodeTransferBody(body []byte) (TransferRequest, error) {
	var req TransferRequest
	if len(bytes.TrimSpace(body)) == 0 {
		return req, nil
	}
	raw, err := jsonBody(body)
	if err != nil {
		return req, err
	}
	err = func() error {
		fields, err := objectFields(raw, "")
		if err != nil {
			return err
		}
		for _, f := range fields {
			if f.name != "id" {
				return fieldErr(f.name, "unknown field")
			}
			if req.ID, err = stringValue(f.raw, "id"); err != nil {
				return err
			}
		}
		return checkText(req.ID, "id")
	}()
	return req, asError(err, CodeBadRequest)
}
