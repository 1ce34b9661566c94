package wire

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"unicode/utf8"
)

// A stored value that is not one JSON value (bytes a put stored without the
// API's checks) is answered as a JSON string holding its bytes, and the op or
// key says so in its raw field: RawText when the bytes are UTF-8 (the string
// is them), RawBase64 when they are not (the string is their standard base64).
// A reader is never stopped by such a value, nor by a record that cannot be
// decoded at all (LogEntry.Unreadable, KV.Unreadable): docs/api.md,
// "Unreadable records".
const (
	RawText   = "text"
	RawBase64 = "base64"
)

// StatusUnreadable is the status of a LogEntry whose stored record could not
// be decoded (LogEntry.Unreadable).
const StatusUnreadable = "unreadable"

// RawValue returns v as a JSON string, and how it is encoded: RawText or
// RawBase64.
func RawValue(v []byte) (json.RawMessage, string) {
	if utf8.Valid(v) {
		b, _ := json.Marshal(string(v)) // a string always encodes
		return b, RawText
	}
	b, _ := json.Marshal(base64.StdEncoding.EncodeToString(v))
	return b, RawBase64
}

// Readable returns e with each op value that is not one JSON value given as
// RawValue gives it, with its op's Raw set, and how many it changed. e's own
// Ops are not changed: a page may be shared.
func (e LogEntry) Readable() (LogEntry, int) {
	n := 0
	for i, op := range e.Ops {
		if op.Value == nil || op.Raw != "" || json.Valid(op.Value) {
			continue
		}
		if n == 0 {
			e.Ops = slices.Clone(e.Ops)
		}
		e.Ops[i].Value, e.Ops[i].Raw = RawValue(op.Value)
		n++
	}
	return e, n
}

// Readable returns kv with its value given as RawValue gives it, and Raw set,
// if the value is not one JSON value; the bool says whether it did.
func (kv KV) Readable() (KV, bool) {
	if kv.Value == nil || kv.Raw != "" || json.Valid(kv.Value) {
		return kv, false
	}
	kv.Value, kv.Raw = RawValue(kv.Value)
	return kv, true
}
