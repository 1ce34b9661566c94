package api

import (
	"fmt"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/txlog/txlog/api/wire"
)

// DefaultMaxStreams is Config.MaxStreams' default.
const DefaultMaxStreams = 1024

// streamSlots counts the requests that hold their connection while they wait
// for the log: the streams of GET /v1/log/stream and the reads with a wait
// (GET /v1/log, GET /v1/tx/{txid}, GET /v1/tx?idempotency_key=). Each holds a
// goroutine, its buffers and a connection for up to minutes; past max, such a
// request gets 503 too_many_streams at once. Safe for concurrent use.
type streamSlots struct {
	max  int64
	used atomic.Int64
}

// take takes a slot, or returns the error to answer with when none is free;
// each taken slot is given back with give.
func (s *streamSlots) take() error {
	if s.used.Add(1) > s.max {
		s.used.Add(-1)
		return fmt.Errorf("%w: %d in progress, the node's --max-streams", wire.ErrTooManyStreams, s.max)
	}
	return nil
}

func (s *streamSlots) give() { s.used.Add(-1) }

// inUse returns the slots taken.
func (s *streamSlots) inUse() int64 { return s.used.Load() }

// register registers txlog_http_streams, the slots taken, with reg; it panics
// if it is registered already, as newHTTPMetrics does.
func (s *streamSlots) register(reg prometheus.Registerer) {
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "txlog_http_streams",
		Help: "Log streams and waiting reads in progress (at most --max-streams).",
	}, func() float64 { return float64(s.inUse()) }))
}
