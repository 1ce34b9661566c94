package wal

import (
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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

// writer owns the segment files: it is the state that only the writer
// goroutine touches (and Open before it starts), and the work on the files.
// dir, cfg, fs and logger are set once, in Open.
type writer struct {
	dir    string
	cfg    Config
	fs     fileSystem
	logger *slog.Logger

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

	// syncs counts the fsyncs of segment files, and writes counts the
	// writes of records and marks to them (flush); for tests and benchmarks.
	syncs  atomic.Int64
	writes atomic.Int64
	// fsync observes the segment fsyncs of sync (metrics.go); nil without
	// Config.Metrics.
	fsync prometheus.Observer
}

func (w *writer) active() *segment { return w.segs[len(w.segs)-1] }

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
		l.w.err = l.w.writeBatch(marks, reqs)
	}
	l.w.collect()
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
func (w *writer) writeBatch(marks []uint64, reqs []*appendReq) error {
	if err := w.writeMarks(marks, false); err != nil {
		return err
	}
	for _, r := range reqs {
		r.seqs = make([]uint64, len(r.payloads))
		for i, p := range r.payloads {
			seq := w.nextSeq
			if err := w.reserve(encodedLen(len(p))); err != nil {
				return err
			}
			w.buf = appendRecord(w.buf, record{typ: recData, seq: seq, payload: p})
			w.nextSeq++
			a := w.active()
			a.lastSeq = seq
			a.live++
			r.seqs[i] = seq
		}
	}
	if err := w.flush(); err != nil {
		return err
	}
	if slices.ContainsFunc(reqs, func(r *appendReq) bool { return !r.lazy }) {
		return w.sync()
	}
	return nil
}

// writeMarks encodes done records for seqs into l.w.buf and updates the
// segment accounting. carried says the marks are copies of marks already
// counted, moved out of a segment about to be deleted.
func (w *writer) writeMarks(seqs []uint64, carried bool) error {
	for chunk := range slices.Chunk(seqs, maxDoneSeqs) {
		if err := w.reserve(encodedLen(8 * len(chunk))); err != nil {
			return err
		}
		w.buf = appendDone(w.buf, chunk)
		x := w.active()
		for _, s := range chunk {
			y := findSegment(w.segs, s)
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
func (w *writer) reserve(n int) error {
	if w.markDue() {
		n += syncedRecLen
	}
	used := w.active().size + int64(len(w.buf))
	if used+int64(n) > w.cfg.SegmentBytes && used != segHeaderLen {
		if err := w.flush(); err != nil {
			return err
		}
		if err := w.rotate(); err != nil {
			return err
		}
	}
	if w.markDue() { // false in a segment just started: nothing to mark
		w.buf = appendSynced(w.buf, w.synced)
		w.marked = w.synced
	}
	return nil
}

// markDue reports whether the next record starts a write, and a fsync
// completed since the active segment's last sync mark.
func (w *writer) markDue() bool { return len(w.buf) == 0 && w.synced > w.marked }

// flush writes l.w.buf to the active segment at its size, and zeros ahead
// of it when the records reach past the zeros written before.
func (w *writer) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	a := w.active()
	if _, err := w.f.WriteAt(w.buf, a.size); err != nil {
		return fmt.Errorf("wal: write segment %s: %w", w.path(a.segHeader), err)
	}
	w.writes.Add(1)
	a.size += int64(len(w.buf))
	w.buf = w.buf[:0]
	w.unsynced = true
	w.zeroEnd = max(w.zeroEnd, a.size)
	return w.zeroAhead()
}

// zeroAhead writes zeros after the active segment's records, up to
// Config.PreallocBytes past them and at most to SegmentBytes, once the records
// have used the zeros written before. The zeros reach the disk with the next
// sync, which also makes the new size durable; the syncs after it find the
// size unchanged and flush data blocks only.
func (w *writer) zeroAhead() error {
	a := w.active()
	if w.cfg.PreallocBytes <= 0 || w.zeroEnd > a.size {
		return nil
	}
	end := min(a.size+w.cfg.PreallocBytes, w.cfg.SegmentBytes)
	for off := w.zeroEnd; off < end; {
		n := min(end-off, int64(len(zeros)))
		if _, err := w.f.WriteAt(zeros[:n], off); err != nil {
			return fmt.Errorf("wal: write zeros to segment %s: %w", w.path(a.segHeader), err)
		}
		off += n
		w.zeroEnd = off
	}
	return nil
}

// zeros is what zeroAhead writes, a chunk at a time.
var zeros [64 << 10]byte

// sync fsyncs the active segment if it has unsynced writes.
func (w *writer) sync() error {
	if !w.unsynced || w.cfg.NoSync {
		w.unsynced = false
		return nil
	}
	start := time.Now()
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("wal: fsync segment %s: %w", w.path(w.active().segHeader), err)
	}
	if w.fsync != nil {
		w.fsync.Observe(time.Since(start).Seconds())
	}
	w.syncs.Add(1)
	w.unsynced = false
	w.synced = w.active().size
	return nil
}

// rotate fsyncs and closes the active segment and starts the next one. The
// old segment is durable before the new one exists, so only the last
// segment can ever have a torn tail.
func (w *writer) rotate() error {
	old := w.active()
	// Only the last segment may end in zeros: recovery reads zeros after
	// the records of any other segment as damage.
	if w.zeroEnd > old.size {
		if err := w.f.Truncate(old.size); err != nil {
			return fmt.Errorf("wal: truncate segment %s: %w", w.path(old.segHeader), err)
		}
		w.zeroEnd = old.size
		if !w.cfg.NoSync {
			if err := w.f.SyncAll(); err != nil {
				return fmt.Errorf("wal: fsync segment %s: %w", w.path(old.segHeader), err)
			}
			w.syncs.Add(1)
			w.unsynced = false
		}
	}
	if err := w.sync(); err != nil {
		return err
	}
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("wal: close segment %s: %w", w.path(old.segHeader), err)
	}
	w.f = nil
	if err := w.createSegment(segHeader{id: old.id + 1, firstSeq: w.nextSeq}); err != nil {
		return err
	}
	w.logger.Info("segment rotated", keyFile, w.path(w.active().segHeader), keySeq, w.nextSeq)
	return nil
}

// createSegment creates the segment h, writes and fsyncs its header, fsyncs
// the directory, and makes it the active segment.
func (w *writer) createSegment(h segHeader) error {
	path := w.path(h)
	f, err := w.fs.Create(path)
	if err != nil {
		return fmt.Errorf("wal: create segment %s: %w", path, err)
	}
	w.f = f
	w.segs = append(w.segs, newSegment(h))
	if err := w.startSegment(); err != nil {
		return err
	}
	if w.cfg.NoSync {
		return nil
	}
	if err := w.fs.SyncDir(w.dir); err != nil {
		return fmt.Errorf("wal: fsync dir %s: %w", w.dir, err)
	}
	return nil
}

// startSegment writes the header of the active segment, whose file l.w.f is
// empty, and its first zeros, and fsyncs them.
func (w *writer) startSegment() error {
	a := w.active()
	if _, err := w.f.WriteAt(appendSegHeader(nil, a.segHeader), 0); err != nil {
		return fmt.Errorf("wal: write segment header %s: %w", w.path(a.segHeader), err)
	}
	a.size = segHeaderLen
	w.zeroEnd = segHeaderLen
	w.synced, w.marked = segHeaderLen, segHeaderLen
	w.unsynced = true
	if err := w.zeroAhead(); err != nil {
		return err
	}
	return w.sync()
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
func (w *writer) collect() {
	if w.err != nil {
		return
	}
	var dead []*segment // by ID
	for _, s := range w.segs[:len(w.segs)-1] {
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
	err := w.writeMarks(carry, true)
	if err == nil {
		err = w.flush()
	}
	if err == nil {
		err = w.sync()
	}
	if err != nil {
		w.err = err
		return
	}
	// writeMarks may have rotated, so the active segment is not in dead,
	// but a rotated-out segment may now qualify too; the next collect
	// takes it.
	for _, s := range dead {
		path := w.path(s.segHeader)
		if err := w.fs.Remove(path); err != nil {
			w.logger.Warn("segment delete failed", keyFile, path, keyErr, err)
			continue
		}
		w.logger.Info("segment deleted", keyFile, path)
	}
	if !w.cfg.NoSync {
		if err := w.fs.SyncDir(w.dir); err != nil {
			w.logger.Warn("dir fsync failed", keyDir, w.dir, keyErr, err)
		}
	}
	w.segs = slices.DeleteFunc(w.segs, func(s *segment) bool { return isDead(s.id) })
	for _, s := range w.segs {
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
		err = l.w.writeBatch(marks, lazy)
	}
	l.answer(lazy, err)
	l.mu.Lock()
	marks, l.marks, l.stopped = l.marks, nil, true
	l.mu.Unlock()
	slices.Sort(marks)
	if err == nil {
		err = l.w.writeMarks(marks, false)
	}
	if err == nil {
		err = l.w.flush()
	}
	if err == nil {
		err = l.w.sync()
	}
	if l.w.f != nil {
		if cerr := l.w.f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("wal: close segment %s: %w", l.w.path(l.w.active().segHeader), cerr)
		}
		l.w.f = nil
	}
	if err == nil {
		l.logger.Info("wal closed", keyDir, l.w.dir)
	}
	return err
}
