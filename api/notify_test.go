package api

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/txlog/txlog/api/wire"
)

// TestDecodeNotify checks a transaction's notify on both decoders: an allowed
// url is kept, and a bad or refused one is 400 notify_not_allowed, also when
// no allow-list is set.
func TestDecodeNotify(t *testing.T) {
	const ops = `"ops":[{"op":"delete","key":"k"}]`
	allow := limits{maxKeyBytes: 64, maxOps: 8, maxTxs: 4, notify: testAllow}
	none := allow
	none.notify = nil

	body := `{"notify":{"url":"http://127.0.0.1:8080/cb"},` + ops + `}`
	want := &wire.Notify{URL: "http://127.0.0.1:8080/cb"}
	if tx, ok := fastTxBody([]byte(body), allow); !ok || !reflect.DeepEqual(tx.Notify, want) {
		t.Fatalf("fastTxBody() = %+v, %v; want the notify on the fast path", tx, ok)
	}
	if tx, err := slowTxBody([]byte(body), allow); err != nil || !reflect.DeepEqual(tx.Notify, want) {
		t.Fatalf("slowTxBody() = %+v, %v; want the notify", tx, err)
	}
	batch := `{"txs":[{` + ops + `},{"notify":{"url":"https://hooks.example.com/x"},` + ops + `}]}`
	if req, err := decodeBatchBody([]byte(batch), allow); err != nil || req.Txs[0].Notify != nil || req.Txs[1].Notify.URL != "https://hooks.example.com/x" {
		t.Fatalf("decodeBatchBody() = %+v, %v", req, err)
	}

	for _, c := range []struct {
		name, url string
		lim       limits
		code      string
	}{
		{"ftp", "ftp://127.0.0.1/cb", allow, wire.CodeNotifyNotAllowed},
		{"no host", "http:///cb", allow, wire.CodeNotifyNotAllowed},
		{"relative", "/cb", allow, wire.CodeNotifyNotAllowed},
		{"host not allowed", "http://169.254.169.254/latest", allow, wire.CodeNotifyNotAllowed},
		{"port of another host", "http://localhost:8080/", allow, wire.CodeNotifyNotAllowed},
		{"no list", "http://127.0.0.1:8080/cb", none, wire.CodeNotifyNotAllowed},
		{"too long", "http://127.0.0.1/" + strings.Repeat("a", 2100), allow, wire.CodeNotifyNotAllowed},
	} {
		body := `{"notify":{"url":"` + c.url + `"},` + ops + `}`
		if _, ok := fastTxBody([]byte(body), c.lim); ok {
			t.Errorf("%s: fast path accepted %s", c.name, body)
		}
		for _, b := range []string{body, `{"txs":[` + body + `]}`} {
			var err error
			if strings.HasPrefix(b, `{"txs"`) {
				_, err = decodeBatchBody([]byte(b), c.lim)
			} else {
				_, err = decodeTxBody([]byte(b), c.lim)
			}
			var e *wire.Error
			if !errors.As(err, &e) || e.Code != c.code || !strings.Contains(e.Message, "notify.url") {
				t.Errorf("%s: decode %s = %v; want code %s naming notify.url", c.name, b, err, c.code)
			} else if st, _ := wire.Status(e.Code); st != 400 {
				t.Errorf("%s: status %d; want 400", c.name, st)
			}
		}
	}
	for _, b := range []string{
		`{"notify":{},` + ops + `}`,
		`{"notify":{"url":"http://127.0.0.1/","x":1},` + ops + `}`,
		`{"notify":"http://127.0.0.1/",` + ops + `}`,
		`{"notify":{"url":1},` + ops + `}`,
	} {
		var e *wire.Error
		if _, err := decodeTxBody([]byte(b), allow); !errors.As(err, &e) || e.Code != wire.CodeInvalidTx {
			t.Errorf("decode %s = %v; want invalid_transaction", b, err)
		}
	}
}
