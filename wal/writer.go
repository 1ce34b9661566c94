package wal

import (
	"fmt"
	"slices"
	"sync/atomic"
	"time"
)

// States of an appendReq.
const (
	reqWaiting   int32 = iota // handed to the writer, not answered
	reqAnswered               // the writer claimed it; done will close
	reqAbandoned              // Append returned ctx.Err(); nobody waits
)

// appendReq is one Append or AppendBatch handed to the writer.
type appendReq struct {
	payloads [][]byte // the log's own copies (the caller's, for AppendBatchLazyFunc)
	size     int      // total payload bytes
	lazy     bool     // answered once written, without waiting for an fsync
	// then, if set, is called with the outcome instead of closing done (an
	// AppendBatchLazyFunc request, which nobody waits for).
	then func(seqs []uint64, err error)

	// state moves from reqWaiting to reqAnswered (by the writer) or to
	// reqAbandoned (by Append), never both.
	state atomic.Int32
	// seqs and err are set by the writer before it closes done.
	seqs []uint64
	err  error
	done chan struct{}
}

// writer is the state that only the writer goroutine touches.
type writer struct {
	segs []*segment // by ID; the last is the active segment
	f    file       // the active segment, written at its size
	// zeroEnd is the length of the active segment's file: records end at
	// its size, and zeros written ahead fill the rest (Config.PreallocBytes).
	zeroEnd  int64
	nextSeq  uint64 // Seq of the next data record
	buf      []byte // encoded records not yet written to f
	unsynced bool   // f has writes that are not fsynced
	// synced is the length of the active segment's records that its last
	// completed fsync covered, and marked the length that the last sync
	// mark (a synced record) written to it names. While synced > marked,
	// the next write to the segment starts with a sync mark naming synced:
	// it rides in a write that happens anyway, so it costs no fsync.
	// Recovery trusts the segment up to the highest mark it finds and reads
	// the rest as a possibly torn tail. With Config.NoSync no fsync ever
	// completes, and synced stays at marked.
	// Invariant: segHeaderLen <= marked <= synced <= the segment's size.
	synced, marked int64
	err            error // sticky: once set, the log writes nothing more
}

func (l *Log) active() *segment { return l.w.segs[len(l.w.segs)-1] }

// run is the writer goroutine: group commit in the manner of hashicorp/raft's
// leaderLoop. It takes one request, drains whatever else is queued without
// blocking, writes it all with the lazy work (marks and lazy appends), fsyncs
// once and answers everyone. Lazy work alone waits up to Config.LazyDelay
// for more to write with it.
func (l *Log) run() {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var timerC <-chan time.Time // set while lazy work waits for the timer
	for {
		var reqs []*appendReq
		size := 0
		select {
		case r := <-l.reqCh:
			reqs, size = append(reqs, r), r.size
		case <-l.kick:
			if l.cfg.LazyDelay > 0 {
				if timerC == nil {
					timer.Reset(l.cfg.LazyDelay)
					timerC = timer.C
				}
				continue
			}
		case <-timerC:
			timerC = nil
		case <-l.closing:
			l.closeErr = l.shutdown()
			return
		}
		if timerC != nil { // the lazy work goes now, with reqs
			timer.Stop()
			timerC = nil
		}
	drain:
		for size < l.cfg.MaxBatchBytes {
			select {
			case r := <-l.reqCh:
				reqs, size = append(reqs, r), size+r.size
			default:
				break drain
			}
		}
		l.commit(reqs)
	}
}

// commit writes the queued done-marks and the records of reqs, fsyncs if
// there are requests, deletes segments that became all done, and answers
// reqs. Deleting before answering costs the few Appends that complete a
// segment's marks a second fsync, and lets Sync promise the deletion.
func (l *Log) commit(reqs []*appendReq) {
	marks, lazy := l.takeLazy()
	reqs = append(reqs, lazy...)
	if l.w.err == nil {
		l.w.err = l.writeBatch(marks, reqs)
	}
	l.collect()
	l.publish()
	l.answer(reqs, l.w.err)
}

// takeLazy returns the Seqs that MarkDone queued, sorted, and the queued
// AppendBatchLazyFunc requests.
func (l *Log) takeLazy() ([]uint64, []*appendReq) {
	l.mu.Lock()
	marks, lazy := l.marks, l.lazy
	l.marks, l.lazy, l.kicked = nil, nil, false
	l.mu.Unlock()
	slices.Sort(marks)
	return marks, lazy
}

// writeBatch writes done records for marks and data records for reqs, and
// fsyncs if reqs has a request that is not lazy (a request from Sync has no
// records but wants the fsync). It assigns the Seqs of reqs.
func (l *Log) writeBatch(marks []uint64, reqs []*appendReq) error {
	if err := l.writeMarks(marks, false); err != nil {
		return err
	}
	for _, r := range reqs {
		r.seqs = make([]uint64, len(r.payloads))
		for i, p := range r.payloads {
			seq := l.w.nextSeq
			if err := l.reserve(encodedLen(len(p))); err != nil {
				return err
			}
			l.w.buf = appendRecord(l.w.buf, record{typ: recData, seq: seq, payload: p})
			l.w.nextSeq++
			a := l.active()
			a.lastSeq = seq
			a.live++
			r.seqs[i] = seq
		}
	}
	if err := l.flush(); err != nil {
		return err
	}
	if slices.ContainsFunc(reqs, func(r *appendReq) bool { return !r.lazy }) {
		return l.sync()
	}
	return nil
}

// writeMarks encodes done records for seqs into l.w.buf and updates the
// segment accounting. carried says the marks are copies of marks already
// counted, moved out of a segment about to be deleted.
func (l *Log) writeMarks(seqs []uint64, carried bool) error {
	for chunk := range slices.Chunk(seqs, maxDoneSeqs) {
		if err := l.reserve(encodedLen(8 * len(chunk))); err != nil {
			return err
		}
		l.w.buf = appendDone(l.w.buf, chunk)
		x := l.active()
		for _, s := range chunk {
			y := findSegment(l.w.segs, s)
			if y == nil {
				continue
			}
			if !carried {
				y.live--
			}
			if y != x {
				x.cross[y.id] = append(x.cross[y.id], s)
			}
		}
	}
	return nil
}

// reserve makes room for a record of n bytes in the active segment: if it
// would take the segment past SegmentBytes, it writes out l.w.buf and
// rotates, unless the segment is still empty. If the record is the first of
// a write and a fsync of the segment completed since its last sync mark,
// reserve puts a sync mark in l.w.buf ahead of it.
func (l *Log) reserve(n int) error {
	if l.markDue() {
		n += syncedRecLen
	}
	used := l.active().size + int64(len(l.w.buf))
	if used+int64(n) > l.cfg.SegmentBytes && used != segHeaderLen {
		if err := l.flush(); err != nil {
			return err
		}
		if err := l.rotate(); err != nil {
			return err
		}
	}
	if l.markDue() { // false in a segment just started: nothing to mark
		l.w.buf = appendSynced(l.w.buf, l.w.synced)
		l.w.marked = l.w.synced
	}
	return nil
}

// markDue reports whether the next record starts a write, and a fsync
// completed since the active segment's last sync mark.
func (l *Log) markDue() bool { return len(l.w.buf) == 0 && l.w.synced > l.w.marked }

// flush writes l.w.buf to the active segment at its size, and zeros ahead
// of it when the records reach past the zeros written before.
func (l *Log) flush() error {
	if len(l.w.buf) == 0 {
		return nil
	}
	a := l.active()
	if _, err := l.w.f.WriteAt(l.w.buf, a.size); err != nil {
		return fmt.Errorf("wal: write segment %s: %w", l.path(a.segHeader), err)
	}
	l.writes.Add(1)
	a.size += int64(len(l.w.buf))
	l.w.buf = l.w.buf[:0]
	l.w.unsynced = true
	l.w.zeroEnd = max(l.w.zeroEnd, a.size)
	return l.zeroAhead()
}

// zeroAhead writes zeros after the active segment's records, up to
// Config.PreallocBytes past them and at most to SegmentBytes, once the records
// have used the zeros written before. The zeros reach the disk with the next
// sync, which also makes the new size durable; the syncs after it find the
// size unchanged and flush data blocks only.
func (l *Log) zeroAhead() error {
	a := l.active()
	if l.cfg.PreallocBytes <= 0 || l.w.zeroEnd > a.size {
		return nil
	}
	end := min(a.size+l.cfg.PreallocBytes, l.cfg.SegmentBytes)
	for off := l.w.zeroEnd; off < end; {
		n := min(end-off, int64(len(zeros)))
		if _, err := l.w.f.WriteAt(zeros[:n], off); err != nil {
			return fmt.Errorf("wal: write zeros to segment %s: %w", l.path(a.segHeader), err)
		}
		off += n
		l.w.zeroEnd = off
	}
	return nil
}

// zeros is what zeroAhead writes, a chunk at a time.
var zeros [64 << 10]byte

// sync fsyncs the active segment if it has unsynced writes.
func (l *Log) sync() error {
	if !l.w.unsynced || l.cfg.NoSync {
		l.w.unsynced = false
		return nil
	}
	start := time.Now()
	if err := l.w.f.Sync(); err != nil {
		return fmt.Errorf("wal: fsync segment %s: %w", l.path(l.active().segHeader), err)
	}
	if l.fsync != nil {
		l.fsync.Observe(time.Since(start).Seconds())
	}
	l.syncs.Add(1)
	l.w.unsynced = false
	l.w.synced = l.active().size
	return nil
}

// rotate fsyncs and closes the active segment and starts the next one. The
// old segment is durable before the new one exists, so only the last
// segment can ever have a torn tail.
func (l *Log) rotate() error {
	old := l.active()
	// Only the last segment may end in zeros: recovery reads zeros after
	// the records of any other segment as damage.
	if l.w.zeroEnd > old.size {
		if err := l.w.f.Truncate(old.size); err != nil {
			return fmt.Errorf("wal: truncate segment %s: %w", l.path(old.segHeader), err)
		}
		l.w.zeroEnd = old.size
		if !l.cfg.NoSync {
			if err := l.w.f.SyncAll(); err != nil {
				return fmt.Errorf("wal: fsync segment %s: %w", l.path(old.segHeader), err)
			}
			l.syncs.Add(1)
			l.w.unsynced = false
		}
	}
	if err := l.sync(); err != nil {
		return err
	}
	if err := l.w.f.Close(); err != nil {
		return fmt.Errorf("wal: close segment %s: %w", l.path(old.segHeader), err)
	}
	l.w.f = nil
	if err := l.createSegment(segHeader{id: old.id + 1, firstSeq: l.w.nextSeq}); err != nil {
		return err
	}
	l.logger.Info("segment rotated", keyFile, l.path(l.active().segHeader), keySeq, l.w.nextSeq)
	return nil
}

// createSegment creates the segment h, writes and fsyncs its header, fsyncs
// the directory, and makes it the active segment.
func (l *Log) createSegment(h segHeader) error {
	path := l.path(h)
	f, err := l.fs.Create(path)
	if err != nil {
		return fmt.Errorf("wal: create segment %s: %w", path, err)
	}
	l.w.f = f
	l.w.segs = append(l.w.segs, newSegment(h))
	if err := l.startSegment(); err != nil {
		return err
	}
	if l.cfg.NoSync {
		return nil
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("wal: fsync dir %s: %w", l.dir, err)
	}
	return nil
}

// startSegment writes the header of the active segment, whose file l.w.f is
// empty, and its first zeros, and fsyncs them.
func (l *Log) startSegment() error {
	a := l.active()
	if _, err := l.w.f.WriteAt(appendSegHeader(nil, a.segHeader), 0); err != nil {
		return fmt.Errorf("wal: write segment header %s: %w", l.path(a.segHeader), err)
	}
	a.size = segHeaderLen
	l.w.zeroEnd = segHeaderLen
	l.w.synced, l.w.marked = segHeaderLen, segHeaderLen
	l.w.unsynced = true
	if err := l.zeroAhead(); err != nil {
		return err
	}
	return l.sync()
}

// answer tells each request in reqs its outcome. Records of abandoned
// requests that were written are marked done at once.
func (l *Log) answer(reqs []*appendReq, err error) {
	if len(reqs) == 0 {
		return
	}
	claimed := make([]bool, len(reqs))
	abandoned := false
	for i, r := range reqs {
		claimed[i] = r.state.CompareAndSwap(reqWaiting, reqAnswered)
		abandoned = abandoned || !claimed[i]
	}
	if err == nil {
		l.mu.Lock()
		for i, r := range reqs {
			if claimed[i] {
				for j, seq := range r.seqs {
					l.pending[seq] = r.payloads[j]
				}
			} else {
				l.marks = append(l.marks, r.seqs...)
			}
		}
		kick := abandoned && l.kickLocked()
		l.mu.Unlock()
		if kick {
			l.wake()
		}
	}
	for i, r := range reqs {
		if claimed[i] {
			if err != nil {
				r.seqs = nil
			}
			r.err = err
			if r.then != nil {
				r.then(r.seqs, err)
			} else {
				close(r.done)
			}
		}
	}
}

// collect deletes every segment but the active one whose records are all
// marked done. Before it deletes a segment it makes every written mark
// durable, and carries into the active segment the marks that the segment
// holds for records of older segments that stay; so a deleted segment
// never takes with it a mark that a surviving record needs. Marks in later
// segments that refer to a deleted segment are ignored by Open.
//
// A failure to delete a file is logged and the segment is dropped from the
// account anyway; the next Open finds it all done and deletes it again.
func (l *Log) collect() {
	if l.w.err != nil {
		return
	}
	var dead []*segment // by ID
	for _, s := range l.w.segs[:len(l.w.segs)-1] {
		if s.live == 0 {
			dead = append(dead, s)
		}
	}
	if len(dead) == 0 {
		return
	}
	isDead := func(id uint64) bool {
		return slices.ContainsFunc(dead, func(s *segment) bool { return s.id == id })
	}
	var carry []uint64
	for _, s := range dead {
		for target, seqs := range s.cross {
			if !isDead(target) {
				carry = append(carry, seqs...)
			}
		}
	}
	slices.Sort(carry)
	carry = slices.Compact(carry)
	err := l.writeMarks(carry, true)
	if err == nil {
		err = l.flush()
	}
	if err == nil {
		err = l.sync()
	}
	if err != nil {
		l.w.err = err
		return
	}
	// writeMarks may have rotated, so the active segment is not in dead,
	// but a rotated-out segment may now qualify too; the next collect
	// takes it.
	for _, s := range dead {
		path := l.path(s.segHeader)
		if err := l.fs.Remove(path); err != nil {
			l.logger.Warn("segment delete failed", keyFile, path, keyErr, err)
			continue
		}
		l.logger.Info("segment deleted", keyFile, path)
	}
	if !l.cfg.NoSync {
		if err := l.fs.SyncDir(l.dir); err != nil {
			l.logger.Warn("dir fsync failed", keyDir, l.dir, keyErr, err)
		}
	}
	l.w.segs = slices.DeleteFunc(l.w.segs, func(s *segment) bool { return isDead(s.id) })
	for _, s := range l.w.segs {
		for _, d := range dead {
			delete(s.cross, d.id)
		}
	}
}

// publish copies the writer's figures into l.stats for Stats.
func (l *Log) publish() {
	var bytes int64
	for _, s := range l.w.segs {
		bytes += s.size
	}
	l.mu.Lock()
	l.stats = Stats{Segments: len(l.w.segs), Bytes: bytes, NextSeq: l.w.nextSeq, Err: l.w.err}
	l.mu.Unlock()
}

// shutdown writes the remaining marks and lazy appends and answers the lazy
// appends, then writes the marks their callbacks made, fsyncs and closes the
// active segment. Close has set l.closed, so no more lazy appends arrive;
// marks are refused once shutdown sets l.stopped.
func (l *Log) shutdown() error {
	marks, lazy := l.takeLazy()
	err := l.w.err
	if err == nil {
		err = l.writeBatch(marks, lazy)
	}
	l.answer(lazy, err)
	l.mu.Lock()
	marks, l.marks, l.stopped = l.marks, nil, true
	l.mu.Unlock()
	slices.Sort(marks)
	if err == nil {
		err = l.writeMarks(marks, false)
	}
	if err == nil {
		err = l.flush()
	}
	if err == nil {
		err = l.sync()
	}
	if l.w.f != nil {
		if cerr := l.w.f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("wal: close segment %s: %w", l.path(l.active().segHeader), cerr)
		}
		l.w.f = nil
	}
	if err == nil {
		l.logger.Info("wal closed", keyDir, l.dir)
	}
	return err
}
