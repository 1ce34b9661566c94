package wire

import (
	"strconv"
	"unicode/utf8"

	"github.com/txlog/txlog/txid"
)

// The answers to writes, TxResult and BatchResponse, are encoded by hand:
// byte for byte what MarshalJSON (encoding/json without HTML escaping) writes
// for them, at a fraction of the cost (about 2% of a node's CPU went to
// encoding them through reflection at 64 clients). TestTxResultJSON and
// FuzzTxResultJSON compare the two, and TestResultsFields fails when TxResult
// gains a field, so that this encoder learns it too.

// AppendTxResultJSON appends the JSON object of r.
func AppendTxResultJSON(b []byte, r *TxResult) []byte {
	b = append(b, '{')
	if r.TxID != 0 {
		b = append(b, `"txid":`...)
		b = appendTxIDJSON(b, r.TxID)
		b = append(b, ',')
	}
	b = append(b, `"status":`...)
	b = appendJSONString(b, r.Status)
	if r.IdempotencyKey != "" {
		b = append(b, `,"idempotency_key":`...)
		b = appendJSONString(b, r.IdempotencyKey)
	}
	if r.Index != 0 {
		b = append(b, `,"index":`...)
		b = strconv.AppendUint(b, r.Index, 10)
	}
	if r.Term != 0 {
		b = append(b, `,"term":`...)
		b = strconv.AppendUint(b, r.Term, 10)
	}
	if len(r.Versions) > 0 {
		b = append(b, `,"versions":{`...)
		var one [1]string
		for i, k := range versionKeys(one[:0], r.Versions) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			b = strconv.AppendUint(b, r.Versions[k], 10)
		}
		b = append(b, '}')
	}
	if c := r.Conflict; c != nil {
		b = append(b, `,"conflict":{`...)
		if c.Key != "" {
			b = append(b, `"key":`...)
			b = appendJSONString(b, c.Key)
		}
		if c.Fence != "" {
			if c.Key != "" {
				b = append(b, ',')
			}
			b = append(b, `"fence":`...)
			b = appendJSONString(b, c.Fence)
		}
		if c.Group != "" {
			if c.Key != "" || c.Fence != "" {
				b = append(b, ',')
			}
			b = append(b, `"group":`...)
			b = appendJSONString(b, c.Group)
		}
		if c.Key != "" || c.Fence != "" || c.Group != "" {
			b = append(b, ',')
		}
		b = append(b, `"expected":`...)
		b = strconv.AppendUint(b, c.Expected, 10)
		b = append(b, `,"actual":`...)
		b = strconv.AppendUint(b, c.Actual, 10)
		b = append(b, '}')
	}
	if r.Duplicate {
		b = append(b, `,"duplicate":true`...)
	}
	if r.Durability != "" {
		b = append(b, `,"durability":`...)
		b = appendJSONString(b, r.Durability)
	}
	if len(r.HeldBy) > 0 {
		b = append(b, `,"held_by":[`...)
		for i, h := range r.HeldBy {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, h)
		}
		b = append(b, ']')
	}
	if e := r.Error; e != nil {
		b = append(b, `,"error":{"code":`...)
		b = appendJSONString(b, e.Code)
		b = append(b, `,"message":`...)
		b = appendJSONString(b, e.Message)
		if e.TxID != 0 {
			b = append(b, `,"txid":`...)
			b = appendTxIDJSON(b, e.TxID)
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

// AppendBatchJSON appends the JSON object of BatchResponse{Results: rs}.
func AppendBatchJSON(b []byte, rs []TxResult) []byte {
	if rs == nil {
		return append(b, `{"results":null}`...)
	}
	b = append(b, `{"results":[`...)
	for i := range rs {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendTxResultJSON(b, &rs[i])
	}
	return append(b, "]}"...)
}

// appendTxIDJSON appends id's text form as a JSON string; it needs no escaping.
func appendTxIDJSON(b []byte, id txid.ID) []byte {
	b = append(b, '"')
	b = append(b, id.String()...)
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as encoding/json writes a string with HTML
// escaping off: quotes, backslashes and control characters escaped, invalid
// UTF-8 as U+FFFD, and U+2028 and U+2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
