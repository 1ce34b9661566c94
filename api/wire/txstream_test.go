package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// TestTxStreamRoundTrip: requests and answers decode to what was encoded,
// and Append* appends after what b holds.
func TestTxStreamRoundTrip(t *testing.T) {
	payload := []byte(`{"ops":[{"op":"put","key":"k","value":1}]}`)
	b := AppendTxStreamRequest([]byte("x"), 300, "timeout=2s", payload)
	if !bytes.Equal(b[1:], EncodeTxStreamRequest(300, "timeout=2s", payload)) {
		t.Fatalf("AppendTxStreamRequest and EncodeTxStreamRequest differ")
	}
	l, n := binary.Uvarint(b[1:])
	id, q, p, err := DecodeTxStreamRequest(b[1+n:])
	if err != nil || uint64(len(b)-1-n) != l || id != 300 || q != "timeout=2s" || !bytes.Equal(p, payload) {
		t.Fatalf("DecodeTxStreamRequest() = %d %q %q %v", id, q, p, err)
	}
	a := AppendTxStreamAnswer(nil, 7, 409, []byte(`{}`))
	_, n = binary.Uvarint(a)
	aid, st, body, err := DecodeTxStreamAnswer(a[n:])
	if err != nil || aid != 7 || st != 409 || string(body) != `{}` || IsGoaway(aid, st) {
		t.Fatalf("DecodeTxStreamAnswer() = %d %d %q %v", aid, st, body, err)
	}
	if !IsGoaway(PingID, 503) || IsGoaway(PingID, 200) {
		t.Fatalf("IsGoaway: wrong")
	}
}

// TestTxStreamDecodeRefuses: bodies a stream must not take.
func TestTxStreamDecodeRefuses(t *testing.T) {
	for name, body := range map[string][]byte{
		"empty":              {},
		"id not minimal":     {0x81, 0x00, 0},
		"no query length":    {1},
		"query past the end": {1, 5, 'a'},
		"query too long":     binary.AppendUvarint([]byte{1}, MaxStreamHeadBytes+1),
	} {
		if _, _, _, err := DecodeTxStreamRequest(body); !errors.Is(err, ErrStreamMessage) {
			t.Errorf("DecodeTxStreamRequest(%s) = %v, want ErrStreamMessage", name, err)
		}
	}
	for name, body := range map[string][]byte{
		"empty":          {},
		"no status":      {1},
		"status 99":      {1, 99},
		"status 600":     binary.AppendUvarint([]byte{1}, 600),
		"id not minimal": {0x81, 0x00, 200, 1},
	} {
		if _, _, _, err := DecodeTxStreamAnswer(body); !errors.Is(err, ErrStreamMessage) {
			t.Errorf("DecodeTxStreamAnswer(%s) = %v, want ErrStreamMessage", name, err)
		}
	}
}

// FuzzDecodeTxStreamRequest: any body decodes to a request that encodes back
// to the same body, or to an error; never a panic.
func FuzzDecodeTxStreamRequest(f *testing.F) {
	for _, m := range [][]byte{
		EncodeTxStreamRequest(1, "", []byte(`{"ops":[{"op":"put","key":"k","value":1}]}`)),
		EncodeTxStreamRequest(PingID, "", nil),
		EncodeTxStreamRequest(1<<40, "timeout=2s&ack=all", []byte(`{}`)),
	} {
		_, n := binary.Uvarint(m)
		f.Add(m[n:])
	}
	f.Add([]byte{0x81, 0x00, 0})
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, body []byte) {
		id, q, payload, err := DecodeTxStreamRequest(body)
		if err != nil {
			if !errors.Is(err, ErrStreamMessage) {
				t.Fatalf("error %v does not wrap ErrStreamMessage", err)
			}
			return
		}
		m := EncodeTxStreamRequest(id, q, payload)
		_, n := binary.Uvarint(m)
		if !bytes.Equal(m[n:], body) {
			t.Fatalf("request %x decodes to %d %q %x, which encodes as %x", body, id, q, payload, m[n:])
		}
	})
}

// FuzzDecodeTxStreamAnswer: any body decodes to an answer that encodes back
// to the same body, or to an error; never a panic.
func FuzzDecodeTxStreamAnswer(f *testing.F) {
	for _, m := range [][]byte{
		AppendTxStreamAnswer(nil, 1, 200, []byte(`{"txid":"0000000000001","status":"committed"}`+"\n")),
		AppendTxStreamAnswer(nil, PingID, 200, []byte(`{"node":"n1","leader":""}`)),
		AppendTxStreamAnswer(nil, PingID, 503, []byte(`{"error":{"code":"shutting_down","message":"x"}}`+"\n")),
		AppendTxStreamAnswer(nil, 9, 429, nil),
	} {
		_, n := binary.Uvarint(m)
		f.Add(m[n:])
	}
	f.Add([]byte{1, 0x80, 0x00})
	f.Fuzz(func(t *testing.T, body []byte) {
		id, status, json, err := DecodeTxStreamAnswer(body)
		if err != nil {
			if !errors.Is(err, ErrStreamMessage) {
				t.Fatalf("error %v does not wrap ErrStreamMessage", err)
			}
			return
		}
		if status < 100 || status > 599 {
			t.Fatalf("status %d", status)
		}
		m := AppendTxStreamAnswer(nil, id, status, json)
		_, n := binary.Uvarint(m)
		if !bytes.Equal(m[n:], body) {
			t.Fatalf("answer %x decodes to %d %d %x, which encodes as %x", body, id, status, json, m[n:])
		}
	})
}
