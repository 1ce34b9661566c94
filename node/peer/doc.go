// Package peer is what nodes say to each other over the peer link
// (package peerlink): a follower's proposals on their way to the leader, the
// leader's side of the streams that carry them, and the internal requests
// one node sends another.
//
// # What it owns
//
//   - streamclient.go: Streams, the propose streams (wire/stream.go) a node
//     keeps open to the others, one persistent connection each, of the peer
//     link's kind peerlink.KindStream (no HTTP upgrade), with the pings that
//     tell a slow commit from a paused or cut-off peer. A stream quiet for
//     half the peer's idle timeout is opened anew rather than used.
//   - streamserver.go: StreamServer, the serving side of propose streams:
//     Serve takes the link's KindStream listener, one goroutine per request
//     in flight, the answers, and CloseStreams. node hands it the function
//     that runs one request as POST /v1/internal/propose runs its body
//     (api.Server.ProposeAnswer); the request's context names the proposing
//     node (peerlink.RemoteNode).
//   - client.go: Client, the requests a node sends another's internal router
//     over the link's KindHTTP connections (POST /v1/internal/propose,
//     forwarded reads, lease and membership calls, lookups, GET
//     /v1/cluster, GET /v1/stats for the dashboard), at the other node's
//     peer address; AnswerError reads an
//     error answer through wire's code table, as the public client does.
//   - forward.go: Forwarder, the grouping of a follower's concurrent proposals
//     per leader address: the queue, the four exchanges in flight per leader,
//     groups of up to 1,024 frames, each exchange ending at its earliest
//     caller's deadline. node calls Forward; the ProposeFunc it is built with
//     is Streams.Propose, or Client.Propose (--forward=http).
//
// The byte formats (frames, stream messages, binary results) are wire's, which
// the api.Server's handlers share.
//
// # What it must not import
//
// peer imports wire (the formats), peerlink (the kinds, the remote node) and
// ui (the answer of GET /v1/stats, which the dashboard's page shows).
// It must not import node, which calls it, nor the server packages api and
// api/fastpath: node hands the StreamServer api's answer function, so that
// peer needs none of the server's code; nor the public client, which is for
// clients, not for nodes. Its tests do run it against a real api.Server.
//
// Must not import: github.com/txlog/txlog/node, github.com/txlog/txlog/api, github.com/txlog/txlog/api/fastpath, github.com/gorilla/mux, github.com/txlog/txlog/client
package peer
