// Package store is txlog's replicated state machine: a bbolt database that
// committed Raft entries are applied to.
//
// # What it owns
//
//   - The command encoding (codec.go): EncodeTx, EncodeNode and EncodeCommand.
//     The same bytes go into the WAL, Redis and the Raft log, so the formats are
//     versioned and never change meaning. ViewTx (txview.go) decodes a
//     transaction without copying it, for a reader that only looks.
//   - Apply: committed entries in, one Result per entry out, all of a batch in one
//     bbolt transaction together with the applied index.
//   - Snapshot and Restore of the whole database, for Raft snapshots.
//   - Backups (backup.go): DB.Backup writes the committed state, from one
//     bbolt read transaction, with a header (its applied index and term, the
//     node registry, the largest txid) and a trailing SHA-256; ReadBackup,
//     VerifyBackupFile and InstallBackup check one and put its body in place
//     as a new store file.
//   - The reads the API serves, on DB.Reads, a Reader (reads.go): transactions
//     by txid or idempotency key, keys, the transaction log, the registered
//     nodes, leases, consumer groups and pending callbacks; pages of keys
//     over key spans (range.go).
//
// DB holds Apply, Snapshot, Restore, Close, Sync, Checkpoint and the applied
// indexes, and the parts they use, each a view of the DB: the Reader; the
// committer (apply.go), which commits the bbolt transaction Apply leaves open;
// and dbFile (db.go, snapshot.go), which opens, creates and checks the file
// and puts a restored one in its place. Inside one bbolt transaction an
// applier (apply.go) applies the entries, and a retainer (retain.go) takes
// retention's step.
//
// # What it must not import
//
// store imports only txid, bbolt and the Prometheus client (the type of
// Config.Metrics) from outside the standard library. It does
// not import raft (replication adapts DB to raft.BatchingFSM), and it reads no
// clock and no network. Apply depends only on the state and the entry: the
// leader stamps the time and the dedup window into each Command, so that
// replaying the same entries on any node gives the same state and Results. The
// one random number, the seed of the idempotency index's hash, changes where a
// key sits in memory, never what is found.
//
// # Buckets
//
// Keys and values, in the notation of codec.go; record.go draws the values.
//
//	meta        "schema"     → schema version (4)
//	            "applied"    → index (8) | term (8) of the last applied entry
//	            "max_time"   → largest Command.Time applied (8), the dedup clock
//	            "kv_applied" → index (8) up to which kv is current
//	            "restored"   → index (8) | term (8) of the snapshot restored from
//	            "log_first"  → index (8): log records below it were removed (first.go)
//	log         index (8)  → term, time, status, conflict or versions, EncodeTx bytes
//	txs         txid (8)   → index (8) of the tx's log record
//	dedup_time  time (8, sign bit flipped) | txid (8) → idem key (empty for an alias)
//	kv          key        → version, mod index, as of kv_applied; the value is in
//	                         the log record at mod index (schema 3 files: here)
//	nodes       node ID    → EncodeNode bytes
//	leases      name       → holder, token, ttl, granted, renewed (lease.go);
//	                         made by the first lease command
//	consumers   group      → offset, index, time (consumer.go); made by the
//	                         first committed commit_offset op
//	notify      index (8)  → a pending callback: outcome and url (notify.go);
//	                         made by the first transaction with Tx.Notify
//
// log keeps every transaction entry that produced a new outcome, committed or
// rejected, for good, or until retention drops it (Config.Retention,
// retain.go); duplicates and other entries are not in it, so its indexes
// have gaps. txs and dedup_time are the dedup tables, with the idempotency index
// below: a record is filed under the dedup clock when its outcome is recorded,
// and each applied transaction entry prunes, oldest first and at most 1000 per
// entry, the records filed before (dedup clock - the entry's dedup window).
// After that Reader.Tx and TxByIdempotencyKey no longer find the transaction and a
// resubmission applies anew, but Log still returns it. log, txs and dedup_time
// grow at their end, and Apply fills their pages to 95% (appendFillPercent).
//
// A key's value is the value of the last op on the key in the transaction at
// its mod index, which is a put; log keeps that record while kv points at it
// (retention copies the value into kv before it drops the record), so kv holds
// no copy (record.go, kvValueAt) and a flush of the overlay writes a seventh of
// the bytes it would with the values.
//
// Schema 1 had an idem bucket, idempotency key → txid. Schema 2 had no
// kv_applied and kept kv current up to the applied index: Open and Restore take
// such a file as one whose kv_applied is its applied index. Schemas 2 and 3
// kept each value in kv too (format 1 in record.go); the store reads such
// values until a flush writes their keys again. Open and Restore rewrite a
// schema 2 or 3 file as schema 4, which a schema 3 store refuses, as the store
// refuses any other schema, with ErrCorrupt, in Open and in Restore.
//
// Retention (retain.go) is a node's own setting: it drops, in bounded steps
// in Apply, log records beyond its horizon, up to kv_applied and not while a
// dedup record may point at them, and changes which old records Log serves
// (FirstIndex), never a Result or another read. Replicas with different
// retention stay consistent.
//
// Leases (lease.go) are decided from the leader-stamped times alone; a
// lease's token is the Raft index of its grant, and a transaction's Fence is
// checked when it is applied, after the dedup check (a resubmission answers
// its recorded outcome) and before its ops.
//
// Consumer groups (consumer.go): an OpCommitOffset op sets a group's
// committed offset with the rest of its transaction, forward only unless the
// op has Reset; a transaction without one never reads the consumers bucket.
//
// Callbacks (notify.go): a transaction with Tx.Notify that Apply decides adds
// a delivery to notify in the same bbolt transaction as its outcome (a
// duplicate adds none); a KindNotifyDone command removes deliveries by index.
// Reader.Deliveries lists the pending ones for the leader's deliverer.
//
// # The kv overlay
//
// kv is a checkpoint, and the log records after kv_applied are its redo log
// (overlay.go): a bucket keyed by the clients' keys made every transaction
// rewrite a random leaf page. Apply writes each key's new state, or a tombstone
// for a deleted key, to an overlay in memory, and the reads look there first,
// then in kv. When the overlay reaches one of Config's limits (KVFlushKeys,
// KVFlushLogBytes, KVFlushRecords) it is frozen as of the index before that
// Apply, and that Apply and the next ones write it into kv in key order, KVFlushStepKeys
// keys each, in the bbolt transactions of their entries; the last step moves
// kv_applied to the index of the freeze. The keys written meanwhile go to a new
// overlay, read before the frozen one. Close writes all of it in one go and
// moves kv_applied to the applied index. Open and Restore rebuild the overlay by
// replaying the log records after kv_applied: a committed record holds each
// key's new version and the ops, which give the value. A Snapshot carries
// kv_applied and the log, so it needs no flush. Where a key's state is kept
// depends on the batches and on restarts, never what the reads and Results
// say. Like the idempotency index, the readers see an Apply's changes once its
// bbolt transaction has committed, and a failed Apply leaves the overlay as it
// was.
//
// # Recovery
//
// Every Apply commits the applied index with the log records, the dedup tables
// and, when it does a flush step, part of kv and maybe kv_applied, in one bbolt
// transaction. A process that dies at any point leaves the last committed
// transaction in the file (the page cache keeps it without fsync), and Open
// rebuilds the idempotency index and the overlay from it: the state is exactly
// the committed one. A flush cut short leaves kv_applied where it was and some
// keys newer in kv; the replay from kv_applied covers every such key.
//
// # The idempotency index
//
// The map from idempotency key to txid lives in memory (idem.go): a bucket keyed
// by random strings made every transaction rewrite a random leaf page. Open and
// Restore rebuild it from dedup_time, whose values are the keys. It maps a 64-bit
// hash of each key to its txid (25 to 40 bytes of heap per key), and a hit counts
// only when the txid's log record carries the same key; the few keys whose hash
// another live key holds are kept whole in a second map. A key recorded again
// after its record was pruned maps to the new txid; pruning a record drops its
// key only if the key still maps to that txid; the empty key is never indexed.
// Apply sees its own batch's changes to the index, and the readers see them once
// the batch's bbolt transaction has committed; a failed Apply leaves the index
// as it was.
//
// A transaction whose idempotency key is recorded is a duplicate only when it
// is the same transaction (SameTx: its EncodeTx bytes equal the recorded
// ones but for the txid); another transaction under the key is refused
// (Result.Reused, naming the original; TxByIdempotencyKeyFor answers
// *KeyReusedError the same way). The comparison reads the original's
// EncodeTx bytes from its log record, which every record has held since
// schema 1, so no digest is stored and files of every schema are checked
// alike. A refused entry records nothing, like a duplicate but without the
// alias: its txid stays unknown.
//
// A txid, too, names one transaction: an entry whose txid is recorded is a
// duplicate only when SameTx holds against the recorded bytes (for an alias,
// the original's, compared but for the txid as when the alias was recorded);
// another transaction under the txid is refused (Result.TxIDConflict,
// counted in txlog_txid_conflicts_total and logged at Warn), and
// Reader.TxFor answers ErrTxIDConflict the same way. The dedup tables are
// unchanged: the comparison reads the log record txs points at, as for a
// key, so files and snapshots of every schema are checked alike and a
// restart or a restore changes no answer.
//
// # Goroutines
//
// Apply, Snapshot and Restore are called from one goroutine, the apply loop.
// Snapshot.WriteTo may run on another goroutine while Apply goes on. The
// Reader's methods, and AppliedIndex, AppliedTerm and RestoredIndex, are safe
// from any goroutine at any time and return memory the caller owns.
//
// Must not import: github.com/hashicorp/raft, github.com/txlog/txlog/replication, github.com/txlog/txlog/api/..., github.com/txlog/txlog/node/...
// Must not import directly: net, net/http
package store
