package wire

import (
	"bytes"
	"strconv"
	"unicode/utf8"

	"github.com/txlog/txlog/txid"
)

// The client's side of a write, TxRequest out and TxResult in, is encoded and
// decoded by hand too (the Go client spent about a third of its CPU per write
// in encoding/json's reflection). AppendTxRequestJSON writes byte for byte
// what MarshalJSON writes; DecodeTxResultJSON accepts only the canonical
// answer AppendTxResultJSON writes and declines everything else, so that
// encoding/json decides whatever is unusual and no strictness is lost.
// FuzzTxRequestJSON and FuzzDecodeTxResultJSON compare them with
// encoding/json; TestTxCodecFields fails when TxRequest, Op or TxResult gain
// a field, so that these learn it too.

// AppendTxRequestJSON appends the JSON of tx to b, exactly as MarshalJSON
// writes it. A value that is not valid JSON gives MarshalJSON's error.
func AppendTxRequestJSON(b []byte, tx *TxRequest) ([]byte, error) {
	start := len(b)
	b = append(b, '{')
	if tx.IdempotencyKey != "" {
		b = append(b, `"idempotency_key":`...)
		b = appendJSONString(b, tx.IdempotencyKey)
		b = append(b, ',')
	}
	if tx.Ops == nil {
		b = append(b, `"ops":null`...)
	} else {
		b = append(b, `"ops":[`...)
		for i := range tx.Ops {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendOpJSON(b, &tx.Ops[i]); !ok {
				// A value to compact or check: encoding/json does it
				// (and reports what is wrong with it).
				out, err := MarshalJSON(tx)
				if err != nil {
					return b[:start], err
				}
				return append(b[:start], out...), nil
			}
		}
		b = append(b, ']')
	}
	if f := tx.Fence; f != nil {
		b = append(b, `,"fence":{"lease":`...)
		b = appendJSONString(b, f.Lease)
		b = append(b, `,"token":`...)
		b = strconv.AppendUint(b, f.Token, 10)
		b = append(b, '}')
	}
	if n := tx.Notify; n != nil {
		b = append(b, `,"notify":{"url":`...)
		b = appendJSONString(b, n.URL)
		b = append(b, '}')
	}
	return append(b, '}'), nil
}

// appendOpJSON appends the JSON of op; false when its value is not a plain
// JSON string or literal that needs neither compacting nor a closer check.
func appendOpJSON(b []byte, op *Op) ([]byte, bool) {
	b = append(b, `{"op":`...)
	b = appendJSONString(b, op.Op)
	b = append(b, `,"key":`...)
	b = appendJSONString(b, op.Key)
	if len(op.Value) > 0 {
		if !plainJSONValue(op.Value) {
			return b, false
		}
		b = append(b, `,"value":`...)
		b = append(b, op.Value...)
	}
	if op.IfVersion != nil {
		b = append(b, `,"if_version":`...)
		b = strconv.AppendUint(b, *op.IfVersion, 10)
	}
	if op.Group != "" {
		b = append(b, `,"group":`...)
		b = appendJSONString(b, op.Group)
	}
	if op.Offset != 0 {
		b = append(b, `,"offset":`...)
		b = strconv.AppendUint(b, op.Offset, 10)
	}
	if op.Reset {
		b = append(b, `,"reset":true`...)
	}
	if op.Raw != "" {
		b = append(b, `,"raw":`...)
		b = appendJSONString(b, op.Raw)
	}
	return append(b, '}'), true
}

// plainJSONValue reports whether v is a JSON value that encoding/json copies
// unchanged: a string without escapes or control characters, true, false,
// null, or an integer without sign, leading zero or exponent.
func plainJSONValue(v []byte) bool {
	switch c := v[0]; {
	case c == '"':
		if len(v) < 2 || v[len(v)-1] != '"' {
			return false
		}
		for _, c := range v[1 : len(v)-1] {
			if c < 0x20 || c == '"' || c == '\\' {
				return false
			}
		}
		return true
	case c >= '1' && c <= '9':
		for _, c := range v[1:] {
			if c < '0' || c > '9' {
				return false
			}
		}
		return true
	}
	s := string(v) // no allocation: compared only
	return s == "0" || s == "true" || s == "false" || s == "null"
}

// DecodeTxResultJSON decodes b, the body of an answer to a write, into r
// when b is the canonical answer of AppendTxResultJSON (an optional final
// newline): the fields txid, status, idempotency_key, index, term, versions,
// duplicate and durability, in that order, strings without escapes in valid
// UTF-8, versions in ascending order of key. It returns false, with r
// untouched, for anything else (a conflict, an error, held_by, escapes,
// spaces, another order): then decode b with encoding/json. Whenever it
// returns true, r is what json.Unmarshal gives into a zero TxResult.
func DecodeTxResultJSON(b []byte, r *TxResult) bool {
	d := resultDecoder{b: bytes.TrimSuffix(b, []byte("\n"))}
	var out TxResult
	if !d.byte('{') {
		return false
	}
	if d.field("txid") {
		s, ok := d.str()
		if !ok || s == "" {
			return false
		}
		id, err := txid.Parse(s)
		if err != nil || id == 0 {
			return false
		}
		out.TxID = id
		if !d.byte(',') {
			return false
		}
	}
	if !d.field("status") {
		return false
	}
	var ok bool
	if out.Status, ok = d.word(); !ok {
		return false
	}
	if d.next("idempotency_key") {
		if out.IdempotencyKey, ok = d.str(); !ok {
			return false
		}
	}
	if d.next("index") {
		if out.Index, ok = d.uint(); !ok {
			return false
		}
	}
	if d.next("term") {
		if out.Term, ok = d.uint(); !ok {
			return false
		}
	}
	if d.next("versions") {
		if out.Versions, ok = d.versions(); !ok {
			return false
		}
	}
	if d.next("duplicate") {
		if !d.literal("true") {
			return false
		}
		out.Duplicate = true
	}
	if d.next("durability") {
		if out.Durability, ok = d.word(); !ok {
			return false
		}
	}
	if !d.byte('}') || d.i != len(d.b) {
		return false
	}
	*r = out
	return true
}

// resultDecoder reads the canonical answer of a write.
type resultDecoder struct {
	b []byte
	i int
}

// byte consumes c.
func (d *resultDecoder) byte(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// literal consumes s.
func (d *resultDecoder) literal(s string) bool {
	if len(d.b)-d.i >= len(s) && string(d.b[d.i:d.i+len(s)]) == s {
		d.i += len(s)
		return true
	}
	return false
}

// field consumes `"name":`.
func (d *resultDecoder) field(name string) bool {
	if len(d.b)-d.i < len(name)+3 || d.b[d.i] != '"' || string(d.b[d.i+1:d.i+1+len(name)]) != name ||
		d.b[d.i+1+len(name)] != '"' || d.b[d.i+2+len(name)] != ':' {
		return false
	}
	d.i += len(name) + 3
	return true
}

// next consumes `,"name":`.
func (d *resultDecoder) next(name string) bool {
	if d.i < len(d.b) && d.b[d.i] == ',' {
		d.i++
		if d.field(name) {
			return true
		}
		d.i--
	}
	return false
}

// str consumes a string without escapes or control characters, in valid
// UTF-8.
func (d *resultDecoder) str() (string, bool) {
	b, ok := d.strBytes()
	return string(b), ok
}

// word is str for a status or an acknowledgement level: the known ones are
// the constants, without a copy.
func (d *resultDecoder) word() (string, bool) {
	b, ok := d.strBytes()
	switch string(b) {
	case StatusCommitted:
		return StatusCommitted, ok
	case StatusPending:
		return StatusPending, ok
	case StatusRejected:
		return StatusRejected, ok
	case AckQuorum:
		return AckQuorum, ok
	case AckAll:
		return AckAll, ok
	case AckAccepted:
		return AckAccepted, ok
	}
	return string(b), ok
}

// strBytes is str's text, aliasing the input.
func (d *resultDecoder) strBytes() ([]byte, bool) {
	if !d.byte('"') {
		return nil, false
	}
	start := d.i
	ascii := true
	for ; d.i < len(d.b); d.i++ {
		c := d.b[d.i]
		switch {
		case c == '"':
			s := d.b[start:d.i]
			d.i++
			if !ascii && !utf8.Valid(s) {
				return nil, false
			}
			return s, true
		case c < 0x20 || c == '\\':
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false
}

// uint consumes an unsigned integer without leading zeros that fits 64 bits.
func (d *resultDecoder) uint() (uint64, bool) {
	start := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	s := d.b[start:d.i]
	if len(s) == 0 || len(s) > 1 && s[0] == '0' {
		return 0, false
	}
	v, err := strconv.ParseUint(string(s), 10, 64)
	return v, err == nil
}

// versions consumes the object of versions, its keys ascending.
func (d *resultDecoder) versions() (map[string]uint64, bool) {
	if !d.byte('{') {
		return nil, false
	}
	m := map[string]uint64{}
	if d.byte('}') {
		return m, true
	}
	last := ""
	for n := 0; ; n++ {
		k, ok := d.str()
		if !ok || n > 0 && k <= last || !d.byte(':') {
			return nil, false
		}
		v, ok := d.uint()
		if !ok {
			return nil, false
		}
		m[k], last = v, k
		if d.byte('}') {
			return m, true
		}
		if !d.byte(',') {
			return nil, false
		}
	}
}
