package api

// The fast path of decodeTxBody and decodeBatchBody: a one-pass scanner that
// only ever accepts. It takes the bodies txlog's clients send (valid JSON,
// field names without escapes, values nested at most maxFastDepth deep) and
// gives up on anything else, which then takes the slow path in decode.go, the
// one place that words the errors.

import (
	"bytes"
	"encoding/json"
	"math"
	"unicode/utf8"

	"github.com/txlog/txlog/api/wire"
)

// maxFastDepth bounds the nesting of a value on the fast path; deeper values
// take the slow path, which allows the 10000 levels of encoding/json.
const maxFastDepth = 100

// fastTxBody decodes the body of POST /v1/tx if it is valid and simple enough;
// ok is false otherwise. Values alias body.
func fastTxBody(body []byte, lim limits) (tx wire.TxRequest, ok bool) {
	if !utf8.Valid(body) {
		return wire.TxRequest{}, false
	}
	d := fastDecoder{b: body, lim: lim}
	if tx, ok = d.tx(); !ok || !d.end() {
		return wire.TxRequest{}, false
	}
	return tx, true
}

// fastBatchBody decodes the body of POST /v1/tx/batch if it is valid and
// simple enough; ok is false otherwise. Values alias body.
func fastBatchBody(body []byte, lim limits) (req wire.BatchRequest, ok bool) {
	if !utf8.Valid(body) {
		return wire.BatchRequest{}, false
	}
	d := fastDecoder{b: body, lim: lim}
	if req, ok = d.batch(); !ok || !d.end() {
		return wire.BatchRequest{}, false
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
	// offsetOps counts the commit_offset ops of the transaction read last.
	offsetOps int
}

func (d *fastDecoder) batch() (req wire.BatchRequest, ok bool) {
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

func (d *fastDecoder) tx() (tx wire.TxRequest, ok bool) {
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
			d.offsetOps = 0
			if tx.Ops, ok = d.ops(); !ok {
				return tx, false
			}
			if d.offsetOps > 1 {
				if _, j := dupGroup(tx.Ops); j >= 0 {
					return tx, false
				}
			}
		case "fence":
			if tx.Fence != nil {
				return tx, false
			}
			if tx.Fence, ok = d.fence(); !ok {
				return tx, false
			}
		case "notify":
			if tx.Notify != nil {
				return tx, false
			}
			if tx.Notify, ok = d.notify(); !ok {
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
func (d *fastDecoder) ops() ([]wire.Op, bool) {
	if !d.next('[') {
		return nil, false
	}
	var buf [4]wire.Op
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
	return append([]wire.Op(nil), ops...), true
}

func (d *fastDecoder) op() (op wire.Op, ok bool) {
	if !d.next('{') {
		return op, false
	}
	var hasKey bool
	var of offsetFields
	for more := true; more; {
		name, ok := d.name()
		if !ok {
			return op, false
		}
		switch string(name) {
		case "group", "offset", "reset":
			ok = d.offsetField(&op, &of, string(name))
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
	case op.Op == wire.OpCommitOffset:
		d.offsetOps++
		return op, checkOffsetOp(op, of, "", d.lim) == nil
	case of.first != "":
		return op, false
	case op.Op == "" || !hasKey || checkKey(op.Key, "", d.lim.maxKeyBytes) != nil:
		return op, false
	case op.Op == wire.OpPut && op.Value == nil, op.Op == wire.OpDelete && op.Value != nil:
		return op, false
	}
	return op, true
}

// notify reads a transaction's callback, {"url":"…"}, the url allowed.
func (d *fastDecoder) notify() (*wire.Notify, bool) {
	if !d.next('{') {
		return nil, false
	}
	name, ok := d.name()
	if !ok || string(name) != "url" {
		return nil, false
	}
	var n wire.Notify
	if n.URL, ok = d.text(); !ok {
		return nil, false
	}
	if more, ok := d.more('}'); !ok || more || d.lim.notify.Check(n.URL) != nil {
		return nil, false
	}
	return &n, true
}

// fence reads a transaction's fence, {"lease":"name","token":N}.
func (d *fastDecoder) fence() (*wire.Fence, bool) {
	if !d.next('{') {
		return nil, false
	}
	var f wire.Fence
	var hasLease, hasToken bool
	for more := true; more; {
		name, ok := d.name()
		if !ok {
			return nil, false
		}
		switch string(name) {
		case "lease":
			if hasLease {
				return nil, false
			}
			hasLease = true
			f.Lease, ok = d.text()
		case "token":
			if hasToken {
				return nil, false
			}
			hasToken = true
			f.Token, ok = d.uint()
		default:
			return nil, false
		}
		if !ok {
			return nil, false
		}
		if more, ok = d.more('}'); !ok {
			return nil, false
		}
	}
	if !hasLease || !hasToken || f.Token == 0 || checkKey(f.Lease, "", d.lim.maxKeyBytes) != nil {
		return nil, false
	}
	return &f, true
}

// opName reads the string "put", "delete" or "commit_offset".
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
	case wire.OpPut:
		return wire.OpPut, true
	case wire.OpDelete:
		return wire.OpDelete, true
	case wire.OpCommitOffset:
		return wire.OpCommitOffset, true
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
