// Package api is txlog's HTTP server: the routes and their handlers, strict
// decoding and validation of request bodies and query parameters, and the
// interfaces a node implements to answer them. The wire types, errors and
// codes it answers with are package wire's; the Go client is package client.
//
// # What it owns
//
//   - backend.go: Backend, the small interface the handlers call. node.Node
//     implements it; api never reaches past it.
//   - server.go: Server, an http.Handler whose routes are all declared in
//     one routes function (gorilla/mux), and its Config. ServeHTTP is the
//     client port's handler and serves no /v1/internal/* route; PeerHandler,
//     served only on the peer link, adds POST /v1/internal/propose. Its handlers live on
//     small types, one per feature, that it builds: txHandlers (handlers.go,
//     stream.go), logHandlers (logwait.go), leaseHandlers (leases.go),
//     consumerHandlers (consumers.go) and clusterHandlers (cluster.go). They
//     share answers (server.go): the Config, the logger, and the JSON and
//     error answers; errors are answered through wire's code table.
//   - handlers.go: txHandlers: POST /v1/tx and /v1/tx/batch, the lookups of
//     GET /v1/tx, GET /v1/kv/{key} and POST /v1/internal/propose.
//   - read.go: serveRead, the one shape of a read handler (parse, read the
//     consistency and the forwarded header every read takes, call the
//     backend, answer the error or the JSON).
//   - range.go: GET /v1/kv?prefix= (range reads), the key spans a credential
//     sees, and POST /v1/internal/range, by which a node forwards one to the
//     leader.
//   - cluster.go: /healthz, /readyz and the /v1/cluster paths.
//   - decode.go, params.go: request bodies and query parameters, decoded
//     strictly. Nothing is silently repaired: invalid UTF-8, unknown or
//     repeated fields, wrong types, trailing data and unknown query parameters
//     are refused with a 4xx and a message naming the field, such as
//     "txs[3].ops[0].key: empty".
//   - forwarded.go: the same rules for the parts of a transaction that
//     another node forwards (CheckKey, CheckIdempotencyKey, CheckValue,
//     CheckNotify), which node applies on the leader before it proposes it.
//   - decode_fast.go: a one-pass decoder of write bodies that only accepts;
//     whatever it does not accept goes to decode.go, which words every error.
//     It stays here, not in api/fastpath: decodeTxBody tries it first on
//     every path, net/http's included.
//   - Serve, FastHandler, Config, WriteError and Logger (server.go) are what
//     api/fastpath's FastListener runs the handlers with.
//   - stream.go: ProposeAnswer, which runs one request of a propose stream
//     (node/peer's StreamServer serves the streams on the peer link) as
//     POST /v1/internal/propose runs its body (handlers.go).
//   - txstream.go: GET /v1/tx/stream, the client stream: the upgrade's
//     checks, the hijacked connection, its reader, one goroutine per
//     request in flight (each runs submitMessage, handleSubmit's steps on
//     the message's parts, and submitTx, the core of POST /v1/tx), the
//     writer that coalesces the answers, the bound on requests in flight
//     (Config.ClientStreamInflight, 429 stream_full), pings, goaways and
//     CloseTxStreams, which the node calls at shutdown (the connections are
//     not net/http's any more). It shares the envelope of the propose
//     streams (wire/stream.go), not node/peer's loop, which has no bound,
//     goaway or credential.
//   - Config.Dashboard: GET /ui/, /v1/stats, /v1/stats/members and
//     /v1/events are routed to it (package ui's Handler, which node builds);
//     api does not import ui.
//   - authz.go: who may do what on the client port: the Host and Origin
//     checks (Config.AllowedHosts, AdvertiseHost, AllowedOrigins), and with
//     Config.Auth the credential and role each route asks for (its access,
//     written next to it in routes), 401 and 403, the request's
//     auth.Principal in its context, and the audit of admin routes
//     (Config.Audit). PeerHandler runs none of it.
//   - scope.go: the key scope of the Principal on every path that takes or
//     gives a key, consumer group or lease name: writes refused, reads
//     refused or filtered (log pages, the long poll and the stream skip what
//     it may not see), transactions outside it not found.
//   - leases.go: LeaseBackend and the handlers of /v1/leases (docs/leases.md).
//   - consumers.go: ConsumerBackend, the commit_offset op's checks shared by
//     both decoders, and the handlers of /v1/consumers.
//   - logwait.go: GET /v1/log (with wait and prefix) and GET /v1/log/stream
//     (Server-Sent Events) over LogFollower, and the 410 compacted answer
//     (docs/consuming.md).
//   - unreadable.go: the JSON of log pages and key states that no stored
//     entry stops: an unreadable record, or a value that is not JSON, goes
//     out raw and marked, counted in txlog_unreadable_records_total.
//   - streamcache.go: the pages of events that the streams without a prefix
//     (and without key prefixes in their credential) share, so that each
//     page is read and encoded once for all of them.
//   - streamcap.go: the slots of Config.MaxStreams that the streams and the
//     waiting reads take (503 too_many_streams past them).
//   - openapi.go: GET /v1/openapi.json, docs/openapi.yaml (embedded by
//     package docs) converted to JSON once, at the first NewServer.
//     openapi_test.go holds the document to the router's routes, the
//     OpenAPI 3.1 specification, the roles and codes the server answers
//     with, and the examples of docs/api.md.
//
// docs/api.md describes every endpoint, parameter, limit and error code.
//
// # What it must not import
//
// api imports only the standard library, gorilla/mux, the Prometheus client
// (its request metrics, metrics.go), wire, txid, auth (Principal and
// Role, the scope every path applies), docs (the embedded OpenAPI document)
// and a YAML parser (openapi.go converts that document once). It must
// not import client, node, replication, store or wal: those depend on api (or
// stand beside it), not the other way round.
//
// Must not import: github.com/txlog/txlog/api/fastpath, github.com/txlog/txlog/client, github.com/txlog/txlog/node/..., github.com/txlog/txlog/replication, github.com/txlog/txlog/store, github.com/txlog/txlog/wal
package api
