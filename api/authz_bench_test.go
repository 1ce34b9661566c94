package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/txlog/txlog/api/wire"
)

// BenchmarkAuthOverhead: a POST /v1/tx as the fast path runs it (Serve and
// FastHandler), with auth off and with a scoped write token: the cost of
// the Host and Origin checks, the credential's lookup (a map here), the
// request copy that carries the Principal and the scope check of the ops.
// Compare the two medians of -count runs.
func BenchmarkAuthOverhead(b *testing.B) {
	be := &fakeBackend{SubmitFunc: func(context.Context, wire.TxRequest, wire.SubmitOptions) (wire.TxResult, error) {
		return wire.TxResult{TxID: testID, Status: wire.StatusCommitted, Index: 1, Versions: map[string]uint64{"al/x": 1}}, nil
	}}
	const body = `{"ops":[{"op":"put","key":"al/x","value":1},{"op":"put","key":"al/y","value":2}]}`
	for _, on := range []bool{false, true} {
		cfg := Config{AdvertiseHost: "node1.example"}
		name := "off"
		if on {
			cfg.Auth, name = testAuth, "on"
		}
		s := NewServer(cfg, be)
		h := s.FastHandler("/v1/tx")
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, "/v1/tx", strings.NewReader(body))
				req.Host = testHost
				req.Header.Set("Authorization", "Bearer wal")
				rec := httptest.NewRecorder()
				s.Serve(rec, req, h)
				if rec.Code != 200 {
					b.Fatalf("= %d %s", rec.Code, rec.Body)
				}
			}
		})
	}
}
