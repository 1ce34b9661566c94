// Package peerlink is the peer link: the one listener at a node's peer
// address (--raft-addr) that carries all node-to-node traffic, split by the
// first bytes of each connection as rqlite's tcp.Mux splits its Raft port.
//
// # What it owns
//
//   - header.go: the connection header the dialer writes first and the
//     acceptor's answer (their byte diagrams are above Header), read with
//     every length bounded before anything is allocated, and the kinds:
//     KindRaft (hashicorp/raft's transport), KindStream (a propose stream,
//     api/wire/stream.go, from the first byte after the answer),
//     KindHTTP (HTTP/1.1 requests to the node's internal router) and
//     KindBootstrap (one answer of Config.Bootstrap, at most
//     MaxProbeBytes, then close; Link.Probe asks for it).
//   - link.go: Link, the acceptor (header under Config.HeaderTimeout, the
//     cluster-ID check, the Config.Accept policy, the hand-over to the
//     kind's Listener; at most Config.MaxPending connections wait for their
//     header) and the dialer (Dial, Probe). Refusals are logged at most once
//     a second, with how many were dropped, so a flood does not flood the log.
//   - conn.go: Conn, an accepted connection whose every Read has the idle
//     deadline (Config.IdleTimeout) unless its user set an earlier one;
//     RemoteNode, the dialing node's ID on a request's context.
//   - raft.go: RaftLayer, KindRaft as replication's StreamLayer; its dialled
//     connections are dialled again when quiet for half the idle timeout.
//   - http.go: the HTTP client whose connections are KindHTTP.
//
// # Cluster IDs
//
// Both sides present their cluster ID (Config.ClusterID; all zero: none) and
// both refuse when the two are non-zero and differ, logging "peer of another
// cluster" at Error with both IDs. Past that, Config.Accept decides; the
// default (DefaultAccept) serves a bootstrap probe whatever the IDs and
// every other kind only when both IDs are set. node fills the hooks.
//
// # What it must not import
//
// peerlink knows nothing of txlog's packages: node wires it to replication
// (Link.Raft), to the propose streams (node/peer) and to the internal router
// (api). It imports only the standard library.
//
// Imports only: std
package peerlink
