// Package wire is txlog's HTTP contract as Go values, shared by the server
// (api, api/fastpath), the Go client (client) and the node-to-node link
// (node/peer): the JSON wire types, the sentinels and wire codes with the one
// table between errors, HTTP status and code, and the byte formats the nodes
// exchange.
//
// # What it owns
//
//   - types.go: the wire types. Field names and JSON tags are the contract.
//   - options.go: SubmitOptions and ReadOptions, the query parameters of a write
//     and of a read, as the Backend receives them and the Client sends them.
//   - errors.go: the sentinels (ErrTxIDConflict among them), *Error, *KeyReusedError, the wire codes and the
//     code table that both the handlers (ErrorStatus: error → status, code) and
//     the Client (ErrorBody.Err, RetryableCode: code → error) use; and the
//     messages table, the wording of each error the handlers build (New: a
//     Msg with its parts, such as the kind and id of a 404 or a parameter,
//     its value and what is wanted; the wordings of a body's fields, headers
//     and bodies, which api's decoders keep unformatted until the error is
//     written: Text). A wire error of a code with a sentinel
//     reads as its message alone, so that no message says its cause twice.
//   - raw.go: how a stored value that is not JSON, or a record that cannot
//     be decoded, is answered (RawValue, LogEntry.Readable, KV.Readable,
//     StatusUnreadable).
//   - leases.go: leases on the wire (docs/leases.md): their types, bounds,
//     codes, sentinels and *LeaseError.
//   - wire.go: the header HeaderForwarded, DefaultTimeout, and MarshalJSON, encoding/json without HTML escaping, as
//     both sides write JSON.
//   - jsonfast.go: TxResult and BatchResponse encoded by hand, byte for byte as
//     MarshalJSON writes them (the answers of writes, on every path).
//   - frames.go: EncodeFrames and DecodeFrames, the body of
//     POST /v1/internal/propose and of a propose stream's requests.
//   - stream.go: the messages of a propose stream (their envelope and the
//     ping; the stream is a connection of the peer link, package peerlink); streamresults.go: the binary
//     form of a stream's results. node/peer opens and serves the streams.
//   - txstream.go: the client stream's names (TxStreamPath, TxStreamProtocol,
//     HeaderNode, HeaderLeader), its requests and answers in the same
//     envelope, the ping's answer and IsGoaway; api serves the stream.
//
// docs/api.md describes every endpoint, parameter, limit and error code.
//
// # What it must not import
//
// wire imports only the standard library and txlog's txid: everything that
// speaks the contract imports wire, so wire can import none of them.
//
// Imports only: std, github.com/txlog/txlog/txid
package wire
