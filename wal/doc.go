// Package wal is a node's intake write-ahead log: bytes, segments, CRCs and
// fsync.
//
// A node appends each transaction it accepts to the log before it answers
// "accepted", and marks the record done once the cluster has committed or
// rejected it. After a crash the node replays the records that are not done.
// wal treats records as opaque bytes. It imports only the standard library
// and nothing from txlog; it knows nothing of Raft, HTTP, Redis or what a
// record holds.
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
// record lists the Seqs of records that are done. The byte layouts are drawn
// in format.go and docs/wal.md. Once the active segment would grow past
// Config.SegmentBytes it is fsynced and closed, and a new one is started.
//
// The active segment ends in zeros written ahead of its records
// (Config.PreallocBytes, 1 MiB), and records are written over them. A sync
// is fdatasync(2), so one whose records fit in zeros already synced flushes
// data blocks only, without the file's size or times. Rotation cuts the
// zeros off the segment it closes.
//
// # Group commit
//
// One writer goroutine owns the files. It takes one request, drains every
// request queued behind it without blocking (up to Config.MaxBatchBytes),
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
// length, and that data Seqs run without a gap and done-marks name only
// Seqs already written. A crash can leave the last segment with a torn
// tail: a partly written record, or a header, or nothing valid after some
// point. Open tells a torn tail from corruption by this rule:
//
//	A record that fails to decode at offset off, in the last segment, is
//	a torn tail if no valid record (a done record, or a data record with a
//	Seq at least the one expected at off) starts at any byte offset after
//	off. Open then truncates the segment at off, logs a warning with the
//	file and the offset, and appends from there.
//
//	Zeros from a record boundary to the end of the last segment are not a
//	torn tail but its clean end, the zeros written ahead: no record is all
//	zeros. Open leaves them and writes over them.
//
//	Anything else is corruption: a bad record followed by a valid one, any
//	damage in a segment that is not the last (a segment is fsynced before
//	the next one is created, so only the last can be torn; zeros after its
//	records count as damage, since rotation cut them off), a segment
//	header that does not match its file name, a record with a good CRC and
//	a Seq out of order. Open then fails with a *CorruptError naming the
//	file and the offset. It never skips a record.
//
// A torn tail holds only records that were never acknowledged, so
// truncating it loses nothing that an Append returned. The rule has one
// known false alarm: if a power loss persists a later part of an unsynced
// write but not an earlier part, the tail looks like corruption, and Open
// refuses. Since no record in that write was acknowledged, an operator may
// truncate the file at the reported offset.
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
package wal
