package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/txid"
)

// The benchmarks of a write over the stream measure the Client's side: the
// node is benchNode, which answers every request at once with one fixed
// canonical result, reading and writing in bulk, so that most of the CPU of
// an op is the Client's (the node shares the process: compare ns/op of two
// versions of the Client, not with a real node).

// benchNode serves the write stream and answers each request with result.
func benchNode(b *testing.B) string {
	res := wire.TxResult{TxID: txid.ID(0x0123456789AB), Status: wire.StatusCommitted, Index: 123456, Term: 3,
		Versions: map[string]uint64{"bench/00012345": 17}, Durability: wire.AckQuorum}
	body := append(wire.AppendTxResultJSON(nil, &res), '\n')
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != wire.TxStreamPath {
			http.NotFound(w, r)
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\n%s: \r\n\r\n", wire.TxStreamProtocol, wire.HeaderLeader)
		brw.Flush()
		br := bufio.NewReaderSize(brw.Reader, 64<<10)
		var out []byte
		for {
			msg, err := wire.ReadStreamMessage(br, 1<<20)
			if err != nil {
				return
			}
			id, _, _, err := wire.DecodeStreamRequest(msg)
			if err != nil {
				return
			}
			if id == wire.PingID {
				out = wire.AppendTxStreamAnswer(out, 0, 200, []byte(`{"node":"n","leader":""}`))
			} else {
				out = wire.AppendTxStreamAnswer(out, id, 200, body)
			}
			if br.Buffered() == 0 {
				if _, err := conn.Write(out); err != nil {
					return
				}
				out = out[:0]
			}
		}
	}))
	b.Cleanup(srv.Close)
	return srv.URL
}

// benchTx returns the n-th transaction of a benchmark: one put of a
// 256-byte value, as tools/compare writes.
func benchTx(value json.RawMessage, n int64) wire.TxRequest {
	return wire.TxRequest{
		IdempotencyKey: "bench-" + strconv.FormatInt(n, 10),
		Ops:            []wire.Op{{Op: wire.OpPut, Key: fmt.Sprintf("bench/%08d", n%100000), Value: value}},
	}
}

func benchValue() json.RawMessage {
	v := make([]byte, 256)
	for i := range v {
		v[i] = 'a' + byte(i%26)
	}
	return json.RawMessage(strconv.Quote(string(v)))
}

// BenchmarkSubmitStream is 64 goroutines calling Submit on one Client.
func BenchmarkSubmitStream(b *testing.B) {
	c := NewClient(ClientConfig{Endpoints: []string{benchNode(b)}})
	defer c.Close()
	value := benchValue()
	opts := wire.SubmitOptions{Ack: wire.AckQuorum}
	var n atomic.Int64
	b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			res, err := c.Submit(context.Background(), benchTx(value, n.Add(1)), opts)
			if err != nil || res.Status != wire.StatusCommitted {
				b.Errorf("Submit: %+v, %v", res, err)
				return
			}
		}
	})
}

// BenchmarkSubmitAsync is one goroutine keeping 64 SubmitAsync futures in
// flight on one Client, waiting for the oldest.
func BenchmarkSubmitAsync(b *testing.B) {
	c := NewClient(ClientConfig{Endpoints: []string{benchNode(b)}, MaxAsyncPending: 64})
	defer c.Close()
	value := benchValue()
	opts := wire.SubmitOptions{Ack: wire.AckQuorum}
	ctx := context.Background()
	var ring [64]*Future
	wait := func(f *Future) {
		if res, err := f.Result(); err != nil || res.Status != wire.StatusCommitted {
			b.Fatalf("SubmitAsync: %+v, %v", res, err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		slot := &ring[i%len(ring)]
		if *slot != nil {
			wait(*slot)
		}
		*slot = c.SubmitAsync(ctx, benchTx(value, int64(i)), opts)
	}
	for _, f := range ring {
		if f != nil {
			wait(f)
		}
	}
}
