// Package peer is the node-to-node link: a follower's proposals on their way
// to the leader, and the leader's side of the streams that carry them.
//
// # What it owns
//
//   - streamclient.go: Streams, the propose streams (wire/stream.go) a node
//     keeps open to the others, one persistent connection each, with the pings
//     that tell a slow commit from a paused or cut-off peer, and the fallback
//     to POST /v1/internal/propose (client.Client.ProposeTo) for a peer
//     without streams.
//   - streamserver.go: StreamServer, the serving side of propose streams: the
//     upgrade of GET /v1/internal/stream, one goroutine per request in flight,
//     the answers, and CloseStreams. The node's api.Server hands it the path
//     (api.Config.Streams) with the function that runs one request as
//     POST /v1/internal/propose runs its body.
//   - forward.go: Forwarder, the grouping of a follower's concurrent proposals
//     per leader address: the queue, the four exchanges in flight per leader,
//     groups of up to 1,024 frames, each exchange ending at its earliest
//     caller's deadline. node calls Forward; the ProposeFunc it is built with
//     is Streams.Propose, or client.Client.ProposeTo (--forward=http).
//
// The byte formats (frames, stream messages, binary results) are wire's, which
// the api.Server's handlers share.
//
// # What it must not import
//
// peer imports wire (the formats) and client (the one HTTP exchange, its
// transport errors and the code table's reading of an answer, which ProposeTo
// and Streams share). It must not import node, which calls it, nor the server
// packages api and api/fastpath: the api.Server reaches a StreamServer through
// its own interface (api.Streams), so that peer needs none of the server's
// code. Its tests do run it against a real api.Server.
//
// Must not import: github.com/txlog/txlog/node, github.com/txlog/txlog/api, github.com/txlog/txlog/api/fastpath, github.com/gorilla/mux
package peer
