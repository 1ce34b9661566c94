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
//   - tls.go: TLS on the link (Config.TLSMode, ServerTLS, ClientTLS).
//   - secret.go: the shared-secret challenge-response (Config.Secrets).
//
// # Cluster IDs
//
// Both sides present their cluster ID (Config.ClusterID; all zero: none) and
// both refuse when the two are non-zero and differ, logging "peer of another
// cluster" at Error with both IDs. Past that, Config.Accept decides; the
// default (DefaultAccept) serves a bootstrap probe whatever the IDs and
// every other kind only when both IDs are set. node fills the hooks.
//
// # TLS
//
// With Config.TLSMode "tls" every connection is TLS, both ways, and mutual:
// ServerTLS must require and verify a client certificate (a connection
// without a verified chain is refused), ClientTLS verifies the acceptor's
// and names the host of the address dialled as the server. The acceptor
// reads a connection's first byte under the header deadline: 0x16 (a TLS
// handshake record) is served TLS, the handshake running in the
// connection's own goroutine under the same deadline and counted in
// Config.MaxPending; anything else is refused (status 6, "TLS required").
// A handshake that fails (a certificate another CA signed, a CN not
// allowed, none at all) is logged at Warn, "peer TLS handshake refused",
// with the remote address and the reason. The header and everything after
// it then run inside TLS, for every kind.
//
// "both" is for the rolling move from plain to TLS alone: the acceptor
// serves a first byte 0x16 as TLS and any other as plain (where a bad
// header is refused as always); the dialer dials TLS and, only when the
// answer is not a TLS record (a plain acceptor refusing the handshake's
// bytes as a bad header), dials again plain. While it lasts, whoever can
// answer in the peer's place can make a connection plain: once every node
// runs "both", each moves to "tls" (docs/security.md has the steps).
//
// # Shared secrets
//
// With Config.Secrets, the acceptor challenges every dialer after its
// header, before the cluster-ID check and the policy, so a dialer that
// does not prove the secret learns nothing, not even the cluster ID:
// status 4 with a 32-byte nonce; the dialer sends its own nonce and
// HMAC-SHA256(secret, "txlp-dial" | header | both nonces); the acceptor
// tries each of its secrets (constant-time compares) and answers as usual,
// followed by HMAC-SHA256(secret, "txlp-accept" | header | both nonces |
// its answer), or status 5 when none matched. The dialer refuses an
// acceptor that does not challenge or whose HMAC is wrong, and one without
// a secret fails with ErrSecretRequired. header.go draws the bytes. Secret
// and TLS combine; the exchange then runs inside TLS.
// Without TLS the secret authenticates the start of a connection, not
// its later bytes, which travel in the clear: where someone can rewrite
// traffic on the network, use TLS.
//
// # What it must not import
//
// peerlink knows nothing of txlog's packages: node wires it to replication
// (Link.Raft), to the propose streams (node/peer) and to the internal router
// (api). It imports only the standard library.
//
// Imports only: std
package peerlink
