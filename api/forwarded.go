package api

// The rules of a request body, for a transaction that did not come as one: a
// frame another node forwards to the leader (node/framecheck.go). Each
// function applies the rule the body's decoders apply to the same part, so a
// forwarded transaction passes only if a client could have written it, and
// answers with the same code and a message that names the part.

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/notify"
)

// CheckKey checks a key, a fence's lease name or a consumer group as the
// decoders do: not empty, at most max bytes, valid UTF-8 without U+FFFD.
// path names the part in the error (code invalid_transaction or
// invalid_utf8).
func CheckKey(key, path string, max int) error {
	return asError(checkKey(key, path, max), wire.CodeInvalidTx)
}

// CheckIdempotencyKey checks an idempotency key as the decoders do: at most
// MaxIdempotencyKeyBytes, valid UTF-8 without U+FFFD; empty means none.
func CheckIdempotencyKey(key, path string) error {
	return asError(checkIdempotencyKey(key, path), wire.CodeInvalidTx)
}

// CheckNotify checks a notify url against allow, as the decoders do (code
// notify_not_allowed).
func CheckNotify(url, path string, allow *notify.AllowList) error {
	if err := allow.Check(url); err != nil {
		return wire.New(wire.MsgNotifyRefused, path, err)
	}
	return nil
}

// CheckValue checks a put's value as the decoders leave it: one JSON value,
// valid UTF-8, compact (the decoders compact every value), of at most max
// bytes (the body that carries a value is at most Config.MaxBodyBytes). The
// one-pass scanner of the fast path reads it; a value it gives up on
// (nested deeper than it goes, or not valid) is read again with
// encoding/json, which words the error. It allocates nothing for a value the
// scanner accepts.
func CheckValue(v []byte, path string, max int) error {
	if len(v) > max {
		return asError(fieldErr(path, wire.MsgFieldTooLong, len(v), max), wire.CodeInvalidTx)
	}
	if !utf8.Valid(v) {
		return wire.New(wire.MsgNotUTF8, path)
	}
	d := fastDecoder{b: v}
	if d.value(maxFastDepth) && d.i == len(v) && d.spaces == 0 {
		return nil
	}
	if !json.Valid(v) {
		return wire.New(wire.MsgNotJSONValue, path)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, v); err != nil || !bytes.Equal(buf.Bytes(), v) {
		return wire.New(wire.MsgJSONSpaced, path)
	}
	return nil
}
