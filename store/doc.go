// Package store is txlog's replicated state machine: a bbolt database that
// committed Raft entries are applied to.
//
// # What it owns
//
//   - The command encoding (codec.go): EncodeTx, EncodeNode and EncodeCommand.
//     The same bytes go into the WAL, Redis and the Raft log, so the formats are
//     versioned and never change meaning.
//   - Apply: committed entries in, one Result per entry out, all of a batch in one
//     bbolt transaction together with the applied index.
//   - Snapshot and Restore of the whole database, for Raft snapshots.
//   - The reads the API serves: transactions by txid or idempotency key, keys, the
//     transaction log and the registered nodes.
//
// # What it must not import
//
// store imports only txid and bbolt from outside the standard library. It does
// not import raft (replication adapts DB to raft.BatchingFSM), and it reads no
// clock, no randomness and no network. Apply depends only on the state and the
// entry: the leader stamps the time and the dedup window into each Command, so
// that replaying the same entries on any node gives the same state and Results.
//
// # Buckets
//
// Keys and values, in the notation of codec.go; record.go draws the values.
//
//	meta        "schema"   → schema version (1)
//	            "applied"  → index (8) | term (8) of the last applied entry
//	            "max_time" → largest Command.Time applied (8), the dedup clock
//	log         index (8)  → term, time, status, conflict or versions, EncodeTx bytes
//	txs         txid (8)   → index (8) of the tx's log record
//	idem        idem key   → txid (8)
//	dedup_time  time (8, sign bit flipped) | txid (8) → idem key (may be empty)
//	kv          key        → version, mod index, raw JSON value
//	nodes       node ID    → EncodeNode bytes
//
// log keeps every transaction entry that produced a new outcome, committed or
// rejected, for good; duplicates and other entries are not in it, so its indexes
// have gaps. txs, idem and dedup_time are the dedup tables: a record is filed
// under the dedup clock when its outcome is recorded, and each applied
// transaction entry prunes, oldest first and at most 1000 per entry, the records
// filed before (dedup clock - the entry's dedup window). After that Tx and
// TxByIdempotencyKey no longer find the transaction and a resubmission applies
// anew, but Log still returns it.
//
// # Goroutines
//
// Apply, Snapshot and Restore are called from one goroutine, the apply loop.
// Snapshot.WriteTo may run on another goroutine while Apply goes on. The read
// methods are safe from any goroutine at any time and return memory the caller
// owns.
package store
