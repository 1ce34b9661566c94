package main

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
)

// Bench clients (--client).
const (
	benchClientHTTP   = "http"   // the bench's own HTTP loop (--http-client), round-robin over the targets
	benchClientStream = "stream" // one client.Client shared by every client, writing over its streams
)

// newBenchStreamClient returns the client.Client every bench client shares
// with --client stream: it writes over one stream per node, to the leader.
func newBenchStreamClient(cfg benchConfig) *client.Client {
	return client.NewClient(client.ClientConfig{
		Endpoints: cfg.targets,
		TLS:       cfg.tls,
		Token:     cfg.token,
		Timeout:   cfg.timeout + benchTimeoutMargin,
	})
}

// tx returns the next transaction, as body would write it.
func (w *workload) tx() wire.TxRequest {
	key := w.keyPrefix
	key = strconv.AppendUint(key[:len(key):len(key)], w.seq, 10)
	w.seq++
	ops := make([]wire.Op, w.opsPerTx)
	for j := range ops {
		ops[j] = wire.Op{Op: wire.OpPut, Key: string(appendKey(nil, w.rng.IntN(w.keys))), Value: json.RawMessage(w.value)}
	}
	return wire.TxRequest{IdempotencyKey: string(key), Ops: ops}
}

// sendStream submits the next transaction of w through r.gc and classifies
// the result as send does an answer.
func (r *benchRun) sendStream(ctx context.Context, w *workload) outcome {
	res, err := r.gc.Submit(ctx, w.tx(), wire.SubmitOptions{Ack: r.cfg.ack, Timeout: r.cfg.timeout})
	if err != nil {
		if e, ok := errors.AsType[*wire.Error](err); ok {
			return outcome{err: e.Code}
		}
		if errors.Is(err, wire.ErrUnknownOutcome) {
			return outcome{err: wire.CodeUnknownOutcome}
		}
		return outcome{err: transportKind(err)}
	}
	switch res.Status {
	case wire.StatusCommitted:
		return outcome{committed: 1}
	case wire.StatusPending:
		return outcome{pending: 1}
	case wire.StatusRejected:
		return outcome{rejected: 1}
	}
	return outcome{err: "status_" + res.Status}
}
