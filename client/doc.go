// Package client is txlog's Go client: Client talks to any node of a cluster,
// fails over with backoff, and makes retried writes safe. Tools that see txlog
// only from the outside (cmd/txlog, chaos, lease, tools/scale) and nodes, to
// reach one another, use it.
//
// # What it owns
//
//   - client.go: Client, ClientConfig and its defaults, and conn, the one
//     transport the Client's parts share (base URLs, http.Client, retries).
//     As etcd's clientv3 does, Client embeds a small type per job and
//     promotes its methods: kv (client.go, submit.go), logs (follow.go),
//     leases (leases.go), consumers (consumers.go) and cluster (cluster.go),
//     so callers write c.Submit, c.Follow, c.AcquireLease as before. kv's
//     reads are here: Tx, TxByIdempotencyKey, Get and the calls that name a
//     node. Every read is linearizable unless given a wire.ReadOptions with
//     another Consistency: Get's argument, and a trailing variadic option
//     of Tx, TxByIdempotencyKey, Consumer(s), Leases and Cluster (LeaseWith
//     for a lease, as Lease keeps the signature lease.Client names).
//   - exchange.go: conn's exchanges: one HTTP exchange, its classification
//     through wire's code table, and failover with backoff between
//     endpoints (a call that gives up reports the last refusal a node
//     answered, such as no_leader, before a node that did not answer),
//     passing over the endpoints whose last exchange got no
//     answer while another has not failed (Client.Down tells a tool which,
//     so that it can try them last next time); TransportError for a request that got no answer,
//     HandshakeError for a TLS handshake that failed (never retried); the
//     token of ClientConfig on every request.
//   - tls.go: TLSConfig, the ClientConfig.TLS of a CA file and a client
//     certificate and key (mutual TLS).
//   - submit.go: Submit and SubmitBatch, retried writes made safe with
//     idempotency keys and lookups of open outcomes.
//   - stream.go: the write stream. Submit sends its writes over one
//     persistent connection per node (GET /v1/tx/stream upgraded to
//     txlog-tx/1 through the Client's http.Client, so its TLS, proxies and
//     token), shared by every goroutine: a writer goroutine sends all
//     queued requests in one Write, a reader hands the answers, which come
//     back out of order, to their callers, and pings tell a slow commit
//     from a paused or lost node. Writes go straight to the leader the node
//     names (X-Txlog-Leader, the pings' answers), and to any node, which
//     forwards, while none is known or the leader's stream fails. A write
//     whose stream fails before its answer is resolved as any lost answer
//     (same txid and idempotency key, a lookup, then a resubmission):
//     never a second transaction. 429 stream_full is sent again after a
//     pause; a goaway names the error it ends the stream with
//     (GoawayError). A node that refuses the upgrade (one from before the
//     stream) gets its writes over HTTP for a minute.
//     ClientConfig.HTTPWrites sends every write over HTTP. SubmitBatch
//     always uses HTTP (POST /v1/tx/batch), as every read and admin call
//     does. Close closes the streams; a stream quiet for a minute closes
//     itself.
//   - async.go: SubmitAsync and Future, as nats.go's PublishAsync: a
//     Submit whose result a Future holds, with at most
//     ClientConfig.MaxAsyncPending (default 4096) unresolved; SubmitAsync
//     blocks while that many are, until its ctx ends. When the stream to
//     the node a write goes to first is open, SubmitAsync queues the
//     request on it in the caller's goroutine, bounded by a timer and ctx,
//     and the stream's reader resolves the Future from a plain 200 or 202:
//     no goroutine per write. Anything else (an error answer, a lost
//     stream, the attempt's time out) hands the write to a goroutine that
//     goes on in Submit's loop (submit.go) after that first attempt.
//
// The JSON of a write (wire.AppendTxRequestJSON) and of its answer
// (wire.DecodeTxResultJSON, which declines anything but the server's
// canonical answer, left to encoding/json) are coded by hand, and a write's
// query is text, not url.Values: at 64 clients encoding/json's reflection
// was about a third of the client's CPU per write.
//   - cluster.go: the membership calls, Ready and Health.
//   - leases.go: the lease calls (docs/leases.md).
//   - consumers.go: the consumer-group calls: CommitOffset, ResetOffset,
//     Consumer, Consumers (docs/api.md, Consumers).
//   - follow.go: Log, LogWait, and Follow, a reader of GET /v1/log/stream
//     that resumes with Last-Event-ID on any node (docs/consuming.md), and
//     ends with ErrNoAnswer once no node has answered for
//     ClientConfig.FollowTimeout, when that is set.
//
// # What it must not import
//
// client imports wire and txid: importing it must not compile the server, the
// fast path, gorilla/mux or a node. Its tests run it against a real api.Server.
//
// Must not import: github.com/txlog/txlog/api, github.com/txlog/txlog/api/fastpath, github.com/txlog/txlog/node/..., github.com/txlog/txlog/store, github.com/txlog/txlog/replication, github.com/txlog/txlog/wal, github.com/gorilla/mux, github.com/prometheus/...
package client
