package api

import (
	"fmt"
	"strconv"
	"testing"
)

// benchBody returns a body the way `txlog bench` builds it (cmd/txlog/bench.go,
// workload.body): n transactions of one put each, with a 256-byte JSON string
// value and an idempotency key; a batch when n > 1.
func benchBody(n int) []byte {
	value := make([]byte, 256)
	for i := range value {
		value[i] = 'a' + byte(i%26)
	}
	value[0], value[len(value)-1] = '"', '"'
	var b []byte
	if n > 1 {
		b = append(b, `{"txs":[`...)
	}
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"idempotency_key":"bench-1a2b3c4d-0-`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `","ops":[{"op":"put","key":"`...)
		b = fmt.Appendf(b, "bench/%08d", i*7919%100000)
		b = append(b, `","value":`...)
		b = append(b, value...)
		b = append(b, "}]}"...)
	}
	if n > 1 {
		b = append(b, "]}"...)
	}
	return b
}

var benchLimits = limits{maxKeyBytes: DefaultMaxKeyBytes, maxOps: DefaultMaxOpsPerTx, maxTxs: DefaultMaxBatchTxs}

// BenchmarkDecode measures the body decoders of POST /v1/tx (tx) and POST
// /v1/tx/batch with 100 transactions (batch100): new is the decoder the
// handlers call, old the slow path alone, which is what they called before the
// fast path. -count repeats each sub-benchmark in a row; to interleave old
// and new on a noisy machine, run the test binary several times instead.
func BenchmarkDecode(b *testing.B) {
	tx, batch := benchBody(1), benchBody(100)
	for _, c := range []struct {
		name string
		body []byte
		dec  func([]byte, limits) error
	}{
		{"tx/old", tx, func(b []byte, l limits) error { _, err := slowTxBody(b, l); return err }},
		{"tx/new", tx, func(b []byte, l limits) error { _, err := decodeTxBody(b, l); return err }},
		{"batch100/old", batch, func(b []byte, l limits) error { _, err := slowBatchBody(b, l); return err }},
		{"batch100/new", batch, func(b []byte, l limits) error { _, err := decodeBatchBody(b, l); return err }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.body)))
			b.ReportAllocs()
			for b.Loop() {
				if err := c.dec(c.body, benchLimits); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
