// Package replication replicates the txlog state machine with Raft.
//
// It owns everything about Raft: the hashicorp/raft node, its log and stable
// store (raft-wal in wal/, or raft-boltdb's raft.db; fsynced on every write,
// their directories too: dirsync.go), its snapshot store
// (snapshots/, the latest two kept: checkpoint markers of a state machine that
// keeps its state durably, see checkpoint.go), the transport (raft's TCP
// transport, or Config.Stream: node's peer link, adapted to raft's
// StreamLayer), the FSM glue that hands
// committed entries to the state machine (a store.DB) in batches, membership,
// leader-change notifications, and the waits that tie a proposal or a read to
// the state machine's applied index. It is the only package that imports
// hashicorp/raft, raft-boltdb or hclog, and it turns their errors into its own.
// It must not import api, node or net/http: it knows nothing of clients.
//
// # Use
//
// Open starts a server; with Config.Bootstrap it bootstraps a new cluster (give
// every initial member the same list). On the leader, Apply proposes an encoded
// store.Command and returns its store.Result and log index once the local state
// machine has applied it. ReadIndex makes a linearizable read: the state
// machine reflects every write committed before the call once it returns.
// WaitApplied waits for an index on any server; WaitCurrent waits for the
// commit index, counting raft's own no-op and barrier entries, which the state
// machine never sees, as applied once everything before them is (Status's
// AppliedIndex counts them the same way). Subscribe reports leader
// changes; Join, Remove, Members and TransferLeadership manage membership.
//
// Raft's methods are split by job onto part types that Raft embeds, so callers
// call them on *Raft: the write path (Apply, ApplyMany: batch.go) stays on Raft
// itself; readWaits (reads.go) has ReadIndex and the waits, membership
// (membership.go) the configuration changes, leaderWatch (leader.go)
// Subscribe and the observation loop.
//
// # Errors
//
// Every error is, or wraps, one of:
//
//   - ErrNotLeader: this server is not the leader. Nothing was proposed.
//   - ErrLeadershipLost: leadership was lost after the entry was proposed.
//     Outcome unknown.
//   - ErrTimeout (wraps ctx.Err()): ctx ended while waiting on Raft. From
//     Apply, Join and Remove the outcome is unknown.
//   - ErrShutdown: the server is closed or closing. From Apply, outcome unknown.
//   - ErrUnknownServer: the server ID is not a cluster member.
//   - ErrStateMachine: the state machine failed to apply a committed entry;
//     this server applies nothing more and must be restarted.
//   - ErrNotApplied: the entry committed at an index the state machine had
//     applied already, so it skipped it. Outcome unknown; never "applied".
//
// Open returns an *AmnesiaError (wrapping ErrAmnesia) when the Raft directory
// holds less than the state machine applied from it: a lost or truncated log,
// or a lost stable store (term and vote). Raft is not started; the server must
// be removed from the cluster and join again with an empty directory
// (amnesia.go).
//
// With Config.Recover, Open first rewrites the Raft configuration to this
// server alone (raft.RecoverCluster: recover.go), after the loss of a
// majority; it returns an error wrapping ErrNoState when the Dir holds no
// Raft state, and the *AmnesiaError when it lost some.
//
// Usage reports how many bytes the Raft log's files and the kept snapshots of
// a Dir take, by stat alone, for the dashboard (disk.go).
//
// Apply also returns ctx's own error, not wrapped in ErrTimeout, when ctx was
// done before the entry reached Raft: then nothing was proposed.
// OutcomeUnknown tells the unknown outcomes apart. An entry with an unknown
// outcome may still commit later, under a new leader; callers find out by
// looking the transaction up.
//
// # Raft traps
//
// Raft's log store compares raft.ErrLogNotFound and raft-boltdb's "not found"
// by identity and by text, so nothing here may wrap an error that goes back
// into raft from a store. This package implements no store, only the FSM,
// whose errors raft merely logs.
//
// Raft futures take a timeout, not a ctx, and their timeout bounds only the
// enqueueing. raftTimeout converts a ctx's deadline in one place; await then
// waits for the future, ctx or Close.
//
// Directory fsyncs. A new, renamed or removed name survives a power loss only
// once its directory is fsynced (POSIX; ext4's journal usually hides the
// difference, XFS and ext4 without a journal do not). Every directory this
// package creates is made durable in its parent before Open returns, so
// before anything raft writes in it (the bootstrap configuration, a term, a
// vote, an appended entry) can be acknowledged:
//
//	<data dir>/raft/             mkdirSynced, in Open: fsyncs <data dir>
//	raft/wal/, raft/snapshots/   mkdirSynced, in Open: fsyncs raft/
//	raft/wal/wal-meta.db         raft-wal: created under a temporary name, renamed, raft/wal/ fsynced
//	raft/wal/*.wal               zeroFile.Sync: the segment's first sync fsyncs raft/wal/
//	raft/wal/recycle.old         zeroFS.Delete: fsyncs raft/wal/ after the rename or remove
//	raft/snapshots/<id>.tmp/*    syncedSink.Close: fsyncs the snapshot's directory before raft renames it
//	raft/snapshots/<id>/         raft's FileSnapshotSink.Close: fsyncs raft/snapshots/ after the rename
//	raft/raft.db                 raft-boltdb (--raft-log=boltdb): bbolt's own create, then Open fsyncs raft/
//
// Config.syncDir (dirsync.Sync by default) lets a test record the fsyncs in
// order (dirsync_test.go).
//
// Must not import: github.com/txlog/txlog/api/..., github.com/txlog/txlog/client, github.com/txlog/txlog/node/...
// Must not import directly: net/http
// Sole importer of: github.com/hashicorp/raft, github.com/hashicorp/raft-boltdb/..., github.com/hashicorp/go-hclog
package replication
