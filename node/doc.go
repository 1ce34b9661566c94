// Package node wires one txlog node together: it reads the configuration from
// flags and TXLOG_* environment variables (ParseConfig), opens the parts in order
// (the txid generator, the store, the intake WAL, Redis parking when configured,
// the peer link and Raft over it, the HTTP API), runs them, and closes them in
// reverse. It implements
// api.Backend: it validates and converts requests, assigns transaction IDs,
// proposes transactions to the leader (a follower forwards them in groups over a
// propose stream, or a POST per group, on the peer link), waits for their outcome and answers; and
// it proposes again, through the leader of the moment, the writes it accepted and
// parked (after a restart, every intake WAL record not marked done).
//
// Node composes the parts it runs, each a type of its own (the list is on
// Node): the write path (writer, write.go; a request's deadlines, with one
// timer for the common write, deadline.go) over the intake (intake.go), the
// proposer (propose.go) and ack=all's checks (ackall.go); the replayer
// (replay.go); lookups, the reads of api.Backend and api.LogFollower
// (lookup.go, range.go), each at its consistency through consistentRead
// (consistent.go), leases, api.LeaseBackend (lease.go), and consumers,
// api.ConsumerBackend (consumer.go), which Node embeds, so that Node itself
// is what api.NewServer serves; callbacks, the deliverer on the leader
// (notify.go); peers, the one place that finds other nodes' peer addresses
// and holds the clients of the peer link (peers.go); the peer link itself, the
// internal router and the propose streams served on it (link.go), with its
// TLS material and shared secrets (peertls.go); identity,
// the cluster ID, the peer link's hooks and the wait for the --cluster peers
// (or the --join member) before Raft first starts (identity.go), during which
// the client port answers 503 (waiting.go); membership, the txid node number,
// registry entry and join (number.go, register.go), with removal
// (removed.go); the side listeners (sideServers, debug.go); and the alert
// sampler, which feeds package alert a
// snapshot of the node once a second (alerts.go). Node's own methods are the
// writes and cluster calls of api.Backend (backend.go), whose Propose, the
// leader's side of forwarding, checks each frame first (frameChecker,
// framecheck.go), and its life: Open, Run, Close (node.go). A pending command's state, and every path a write
// takes, is in state.go.
//
// node imports api, api/fastpath, api/wire, node/peer, peerlink, replication,
// store, wal, txid, dirsync, alert and node/parking, and client only to join
// a cluster through its client port (--join): it reaches its peers over the
// peer link, never through the public client. It does not import
// hashicorp/raft, bbolt or the Redis client directly: replication, store and
// node/parking own those. Nothing imports node but the daemon that runs it,
// cmd/txlogd, and cmd/txlog for `txlog restore` alone (RestoreDataDir: it
// seeds a data directory offline as --restore does). With Config.DebugAddr a node also serves net/http/pprof, on a
// listener and ServeMux of their own, never the API's (debug.go), and with
// Config.MetricsAddr GET /metrics alone, the same way. The node's metrics, and
// what it hands its parts, are in metrics.go.
// txlogd --recover, which makes a survivor of a lost majority a one-node
// cluster under a new cluster ID, once (cluster.recovered), is in recover.go.
// The client port's TLS, from package tlsfiles, is in clienttls.go, and
// Reload, what SIGHUP runs, in reload.go. GET /v1/backup's Backup is in
// backup.go, and --restore, which seeds a new one-node cluster from a
// backup before Open opens anything else, in restore.go.
//
// Must not import directly: github.com/hashicorp/raft, go.etcd.io/bbolt, github.com/redis/go-redis/...
package node
