// Package peer is the node-to-node link on the proposing side: a follower's
// proposals on their way to the leader.
//
// # What it owns
//
//   - streamclient.go: Streams, the propose streams (wire/stream.go) a node
//     keeps open to the others, one persistent connection each, with the pings
//     that tell a slow commit from a paused or cut-off peer, and the fallback
//     to POST /v1/internal/propose (client.Client.ProposeTo) for a peer
//     without streams.
//   - forward.go: Forwarder, the grouping of a follower's concurrent proposals
//     per leader address: the queue, the four exchanges in flight per leader,
//     groups of up to 1,024 frames, each exchange ending at its earliest
//     caller's deadline. node calls Forward; the ProposeFunc it is built with
//     is Streams.Propose, or client.Client.ProposeTo (--forward=http).
//
// # What it must not import
//
// peer imports wire (the formats) and client (the one HTTP exchange, its
// transport errors and the code table's classification of an answer, which
// ProposeTo and Streams share). It must not import node, which calls it, nor
// the server packages api and api/fastpath.
//
// Must not import: github.com/txlog/txlog/node, github.com/txlog/txlog/api, github.com/txlog/txlog/api/fastpath, github.com/gorilla/mux
package peer
