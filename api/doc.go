// Package api is txlog's HTTP contract: the JSON wire types, the routes and
// their handlers, strict decoding and validation of request bodies, the one
// table from errors to HTTP status and wire code, the framing of forwarded
// proposals, and the Go client.
//
// # What it owns
//
//   - types.go: the wire types. Field names and JSON tags are the contract.
//   - errors.go: the sentinels, *Error, the wire codes and the code table that
//     both the handlers (error → status, code) and the Client (code → error) use.
//   - backend.go: Backend, the small interface the handlers call. node.Node
//     implements it; api never reaches past it.
//   - server.go, handlers.go: Server, an http.Handler whose routes are all
//     declared in one routes function (gorilla/mux).
//   - decode.go, params.go: request bodies and query parameters, decoded
//     strictly. Nothing is silently repaired: invalid UTF-8, unknown or
//     repeated fields, wrong types, trailing data and unknown query parameters
//     are refused with a 4xx and a message naming the field, such as
//     "txs[3].ops[0].key: empty".
//   - decode_fast.go: a one-pass decoder of write bodies that only accepts;
//     whatever it does not accept goes to decode.go, which words every error.
//   - jsonfast.go: TxResult and BatchResponse encoded by hand, byte for byte
//     as encoding/json writes them.
//   - fastpath.go: FastListener, which reads and answers plain POST /v1/tx and
//     /v1/tx/batch requests on keep-alive connections without net/http's
//     server, and hands every other connection to it.
//   - frames.go: EncodeFrames and DecodeFrames, the body of
//     POST /v1/internal/propose.
//   - stream.go, streamclient.go, streamresults.go: propose streams, one
//     persistent connection from a follower to the leader that carries its
//     internal proposals (the server side, Streams on the client side with its
//     pings, and the binary form of a stream's results).
//   - leases.go: leases on the wire (docs/leases.md): their types and codes,
//     LeaseBackend, the handlers of /v1/leases and the Client's lease calls.
//   - client.go, exchange.go, submit.go: Client, which talks to any node,
//     fails over with backoff (exchange.go), and makes retried writes safe with
//     idempotency keys and lookups of open outcomes (submit.go).
//
// docs/api.md describes every endpoint, parameter, limit and error code.
//
// # What it must not import
//
// api imports only the standard library, gorilla/mux and txlog's txid. It must
// not import node, replication, store or wal: those depend on api, not the
// other way round, and the client must stay usable by tools (cmd/txlog, chaos)
// that see txlog only from the outside.
package api
