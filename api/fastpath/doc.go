// Package fastpath is the HTTP API's second server: FastListener, a
// net.Listener for the node's http.Server that reads and answers plain
// POST /v1/tx and /v1/tx/batch requests on keep-alive connections itself,
// through the api.Server's own handlers, and hands every other connection to
// net/http with the bytes already read.
//
// # What it owns
//
//   - fastpath.go: FastListener and FastConfig, the request parser of the fast
//     path (parseFastRequest: a strict subset of net/http's, handing over at
//     the first byte outside it), the connection's deadlines (net/http's, kept
//     across a handover by prefixConn), the body read that grows with what
//     arrives (readFastBody), and its reused answer writer.
//   - TLS: on a tls.Listener, each connection's handshake runs in its own
//     goroutine under FastConfig.HandshakeTimeout (never in Accept, where one
//     slow client would hold up the rest); fast-path requests carry the
//     connection's state in r.TLS, and ConnectionState gives it for the
//     connections handed to net/http, which sees no *tls.Conn in them and
//     leaves their r.TLS nil (the node sets it: node/clienttls.go). A client
//     that sends no TLS, or fails its handshake, is closed without an answer.
//
// The write bodies it reads are decoded by the api.Server's handlers, one-pass
// decoder first (api/decode_fast.go), and answered with wire's hand-written
// JSON (wire/jsonfast.go): both serve the net/http path as well, so they stay
// with the package every path goes through.
//
// # What it must not import
//
// fastpath imports api (the Server whose handlers it runs: Serve,
// FastHandler, Config, WriteError, Logger) and wire. Nothing but the node that
// serves it imports fastpath, and it imports nothing of the node's.
//
// Must not import: github.com/txlog/txlog/client, github.com/txlog/txlog/node/..., github.com/txlog/txlog/replication, github.com/txlog/txlog/store, github.com/txlog/txlog/wal
package fastpath
