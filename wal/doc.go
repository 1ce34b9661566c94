// Package wal is a node's intake write-ahead log: bytes, segments, CRCs and
// fsync.
//
// A node appends each transaction it accepts to the log before it answers
// "accepted", and marks the record done once the cluster has committed or
// rejected it. After a crash the node replays the records that are not done.
// wal treats records as opaque bytes. It imports only the standard library
// and the Prometheus client (the type of Config.Metrics), nothing from txlog;
// it knows nothing of Raft, HTTP, Redis or what a record holds.
//
// # Use
//
//	l, err := wal.Open(dir, wal.Config{Logger: logger})
//	for _, r := range l.Pending() { // records a crash left undone
//		replay(r.Seq, r.Payload)
//	}
//	seq, err := l.Append(ctx, encodedTx) // returns once fsynced
//	...
//	l.MarkDone(seq) // once committed or rejected; does not wait
//	...
//	l.Close()
//
// Every method may be called from any goroutine. Append returns each record's
// Seq, its identity: Seqs start at 1 and go up by one per record, across
// segments and restarts.
//
// # Files
//
// The log is a directory of segment files named
// "<segment ID>-<first Seq>.wal" (16 hex digits each), so they sort in
// order. Each starts with a 32-byte header (magic, version, ID, first Seq,
// CRC) and holds records back to back: a 20-byte header (CRC32C, length,
// Seq, type) and the payload. A data record holds one payload; a done
// record lists the Seqs of records that are done; a sync mark names the
// length of the segment that a completed fsync covered (see Recovery). The
// byte layouts are drawn in format.go and docs/wal.md. Once the active
// segment would grow past Config.SegmentBytes it is fsynced and closed, and
// a new one is started.
//
// The active segment ends in zeros written ahead of its records
// (Config.PreallocBytes, 1 MiB), and records are written over them. A sync
// is fdatasync(2), so one whose records fit in zeros already synced flushes
// data blocks only, without the file's size or times. Rotation cuts the
// zeros off the segment it closes.
//
// # Group commit
//
// One writer goroutine owns the files: Log (log.go) takes the calls and runs
// the group commit, and hands the file work to its writer (writer.go:
// writing, fsyncing, rotating and deleting segments; recover.go: the
// repairs of Open). The goroutine takes one request, drains every request
// queued behind it without blocking (up to Config.MaxBatchBytes),
// writes them with one write, fsyncs once and answers them all. So N
// concurrent Appends cost about one fsync, not N. Done-marks and the
// records of AppendBatchLazyFunc, which nobody waits for, wait up to
// Config.LazyDelay for a request to go with, and then go by themselves: one
// write, no fsync.
//
// # Durability contract
//
// With fsync on (the default):
//
//   - An Append that returned a Seq survives a process crash and a power
//     loss: its record was fsynced first.
//   - An Append that returned an error may or may not have been written. If
//     its record survives, it is pending after Open and is replayed; the
//     consumer must deduplicate. An Append canceled by its ctx while its
//     record was being written is marked done by the log itself, but a
//     crash can come first.
//   - An AppendBatchLazy that returned Seqs survives a process crash (its
//     records were written), and a power loss only once fsynced: by the
//     next Sync, Append, rotation or Close. Call Sync before promising
//     anything that rests on the record.
//   - AppendBatchLazyFunc returns at once. Its records survive a process
//     crash once written, which is before then is called: within
//     Config.LazyDelay, or sooner with an Append or Sync. A power loss keeps
//     them once fsynced, as for AppendBatchLazy.
//   - MarkDone does not wait for the disk. Its mark is written within
//     Config.LazyDelay (or sooner with an Append or Sync) and fsynced with the next Append, Sync, rotation, deletion or Close.
//     It survives a process crash once written, and a power loss once
//     fsynced. A lost mark means the record is pending again after Open:
//     a harmless replay for a consumer that deduplicates.
//   - A segment is deleted only when all its records are done, after the
//     marks that say so are fsynced, and after the marks it holds for
//     records of older segments that remain are written again into the
//     active segment and fsynced. A deleted segment that reappears after a
//     power loss (the directory fsync was lost) holds only done records.
//   - Every directory entry is durable before an answer rests on it: Open
//     fsyncs the parent of each directory it creates (and of its directory
//     when it exists), and a new segment's directory is fsynced before any
//     record goes into it.
//
// With Config.NoSync nothing is fsynced: Appends survive a process crash but
// not a power loss. NoSync is for tests and benchmarks only.
//
// TestDurability, TestLazyAppend and TestAppendBatchLazyFunc check these claims, putting files back
// to their content at their last fsync to act out a power loss.
//
// # Recovery
//
// Open reads every segment and checks every header and record: CRC, type,
// length, that data Seqs run without a gap, that done-marks name only Seqs
// already written, and that sync marks grow and name no byte past
// themselves. A sync mark is a small record that the first write after each
// completed fsync of the active segment starts with: it names the length that
// fsync covered, so a valid mark, wherever it is found, proves those bytes
// durable. It rides in a write that happens anyway and costs no fsync. Open
// tells a torn tail from corruption by this rule:
//
//	A record that fails to decode or to check at offset off is corruption
//	if its segment is not the last (a segment is fsynced whole before the
//	next one is created), or if a valid sync mark at any byte offset after
//	off names a length past off (a completed fsync covered it). Open then
//	fails with a *CorruptError naming the file and the offset. It never
//	skips a record.
//
//	Otherwise everything from off to the end of the last segment is a
//	possibly torn tail, whatever its shape: part of a record, zeros,
//	garbage, or valid records after a hole, as a power loss that wrote back
//	some pages of an unsynced write leaves it. Open truncates the segment
//	at off, logs a warning with the file, the offset and the bytes dropped,
//	makes the cut durable with a fsync, and appends from there.
//
//	Zeros from a record boundary to the end of the last segment are not a
//	torn tail but its clean end, the zeros written ahead: no record is all
//	zeros. Open leaves them and writes over them.
//
// Records past the last mark that read back whole are kept, and Open fsyncs
// the segment once so that the first write's mark names them. The records
// of the last fsync before a crash, which no mark names yet, are the one
// thing the rule cannot judge: damage to them from the disk itself (not a
// torn write) is read as a torn tail. A segment header that does not match
// its file name, or a bad header with a valid record after it, is
// corruption.
//
// Open keeps the payloads of pending records in memory (Pending returns
// copies), so memory grows with the records not yet done, not with the log.
//
// # Done-marks and deletion
//
// A done-mark lives in whatever segment was active when it was written,
// often a later one than its record. Marks that name a Seq whose segment is
// gone are ignored on recovery. A record that is never marked done keeps
// its segment forever; it does not keep later segments, because their marks
// for its neighbors are carried forward when they are deleted.
//
// # Errors
//
// A failed write or fsync breaks the log: that Append and every later one
// return the error, and Close returns it too. The node should stop, and a
// new Open recovers what is on disk. Only one Log may use a directory at a
// time; wal does not lock it.
//
// Imports only: std, github.com/prometheus/client_golang/prometheus
package wal
