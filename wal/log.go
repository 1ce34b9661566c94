package wal

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
)

// Keys of the attributes that Log logs.
const (
	keyComponent    = "component"
	keyDir          = "dir"
	keyFile         = "file"
	keyOffset       = "offset"
	keyDroppedBytes = "dropped_bytes"
	keySeq          = "seq"
	keySegments     = "segments"
	keyPending      = "pending"
	keyErr          = "err"
)

// Record is a data record that is not yet marked done.
type Record struct {
	// Seq is the record's identity, as Append returned it.
	Seq uint64
	// Payload is the record's content. The caller owns it.
	Payload []byte
}

// Stats is a snapshot of a Log's size.
type Stats struct {
	// Segments is the number of segment files, the active one included.
	Segments int
	// Bytes is the total size of the segments' records and headers, without
	// the zeros written ahead of the active segment's records.
	Bytes int64
	// Pending is the number of records not marked done.
	Pending int
	// NextSeq is the Seq that the next appended record will get.
	NextSeq uint64
	// Err is why Appends fail now: the write or fsync error that broke the
	// log (see Append), or ErrClosed after Close. It is nil while the log
	// takes Appends.
	Err error
}

// Log is a write-ahead log of opaque records in one directory. Its methods
// may be called from any goroutine. Open it with Open and release it with
// Close. Only one Log may use a directory at a time; Log does not lock it.
//
// Its jobs are split: Log takes the calls (Append and the rest, MarkDone,
// Pending, Stats, Close), runs the writer goroutine's group commit (run) and
// answers the requests; writer (writer.go) owns the segment files: writing,
// fsyncing, rotating and deleting them, and the repairs of recovery.
type Log struct {
	cfg    Config
	logger *slog.Logger

	reqCh     chan *appendReq // unbuffered: Append hands a request to the writer
	kick      chan struct{}   // capacity 1: lazy work (marks, lazy appends) wakes the writer
	closing   chan struct{}   // closed by Close
	closeOnce sync.Once
	wg        sync.WaitGroup // the writer goroutine
	closeErr  error          // set by the writer as it stops; read after wg.Wait

	// mu guards the fields below. It is never held across I/O or a
	// channel operation.
	mu sync.Mutex
	// pending maps each Seq written and not marked done to its payload.
	// Payloads are never modified once stored.
	pending map[uint64][]byte
	marks   []uint64 // Seqs marked done and not yet handed to the writer
	// lazy holds the AppendBatchLazyFunc requests not yet handed to the
	// writer, oldest first.
	lazy []*appendReq
	// kicked is true from a kick for lazy work until the writer takes the
	// marks and lazy: work queued meanwhile needs no kick of its own.
	kicked bool
	closed bool // Close was called; appends refuse
	// stopped is set by the writer once it has written its last marks;
	// MarkDone refuses from then on. Between Close and then, it takes marks
	// (the callbacks of lazy appends that Close writes make some).
	stopped bool
	stats   Stats // as of the writer's last commit; Pending unused

	// w belongs to the writer goroutine (and to Open before it starts).
	w writer
}

// Open opens the log in dir, creating dir and a first segment if needed, and
// recovers it: it truncates a torn tail of the last segment, loads the
// records not marked done (see Pending) and deletes segments whose records
// are all done. It returns a *CorruptError if a segment is damaged anywhere
// but in a torn tail, and an error from cfg.Validate if cfg is out of
// bounds.
func Open(dir string, cfg Config) (*Log, error) {
	return openFS(dir, cfg, osFS{})
}

func openFS(dir string, cfg Config, fsys fileSystem) (*Log, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	logger := cfg.Logger.With(keyComponent, "wal")
	l := &Log{
		cfg:     cfg,
		logger:  logger,
		reqCh:   make(chan *appendReq),
		kick:    make(chan struct{}, 1),
		closing: make(chan struct{}),
		pending: map[uint64][]byte{},
		w:       writer{dir: dir, cfg: cfg, fs: fsys, logger: logger},
	}
	if cfg.Metrics != nil {
		h := fsyncHistogram()
		if err := cfg.Metrics.Register(h); err != nil {
			return nil, fmt.Errorf("wal: register metrics: %w", err)
		}
		l.w.fsync = h
	}
	if err := l.w.makeDir(dir); err != nil {
		return nil, err
	}
	err := l.recover()
	if err == nil {
		l.w.collect()
		err = l.w.err
	}
	if err != nil {
		if l.w.f != nil {
			l.w.f.Close()
		}
		return nil, err
	}
	l.publish()
	l.logger.Info("wal opened", keyDir, dir, keySegments, len(l.w.segs),
		keyPending, len(l.pending), keySeq, l.w.nextSeq)
	l.wg.Go(l.run)
	return l, nil
}

// makeDir creates dir and its missing parents, and makes each entry durable
// in its parent with a fsync of the parent, which the parent's own creation
// made durable in turn. It fsyncs dir's parent even when dir exists: a
// crash of an earlier Open may have left dir created and its entry not yet
// durable, and the first segment's fsyncs do not cover the parent.
func (w *writer) makeDir(dir string) error {
	dir = filepath.Clean(dir)
	parent := filepath.Dir(dir)
	err := w.fs.Mkdir(dir)
	if errors.Is(err, fs.ErrNotExist) && parent != dir {
		if err = w.makeDir(parent); err == nil {
			err = w.fs.Mkdir(dir)
		}
	}
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("wal: create dir %s: %w", dir, err)
	}
	if w.cfg.NoSync || parent == dir {
		return nil
	}
	if err := w.fs.SyncDir(parent); err != nil {
		return fmt.Errorf("wal: fsync dir %s: %w", parent, err)
	}
	return nil
}

// path is the path of the segment file with header h.
func (w *writer) path(h segHeader) string { return filepath.Join(w.dir, segName(h)) }

// Append writes payload as a new record and returns its Seq once the record
// is durable (fsynced, unless Config.NoSync). Concurrent Appends share one
// fsync. The log keeps its own copy of payload.
//
// Seqs start at 1 and increase by one with each record, across segments
// and restarts. A Seq is never reused, except the Seq of a record that was
// never acknowledged (lost in a torn tail, or from a failed Append) and did
// not reach the disk.
//
// If ctx ends before the record is durable, Append returns ctx.Err(); the
// record may then still be written. If it is, the log marks it done itself,
// but a crash before that mark is written replays it. After a write or
// fsync error the log is broken: this and every later Append return that
// error, and only Close and a new Open help.
func (l *Log) Append(ctx context.Context, payload []byte) (uint64, error) {
	seqs, err := l.append(ctx, [][]byte{payload})
	if err != nil {
		return 0, err
	}
	return seqs[0], nil
}

// AppendBatch is Append for several payloads, written in one go with
// consecutive Seqs. The batch is not atomic across a crash: none of it is
// acknowledged unless all of it is durable, but a prefix of it may survive
// a crash that happens before.
func (l *Log) AppendBatch(ctx context.Context, payloads [][]byte) ([]uint64, error) {
	if len(payloads) == 0 {
		return nil, ctx.Err()
	}
	return l.append(ctx, payloads)
}

// AppendBatchLazy is AppendBatch without waiting for the fsync: it returns
// once the records are written to the segment file (the operating system's
// page cache), so they survive a crash of the process but maybe not of the
// machine until the next fsync: Sync, an Append, a rotation or Close. Lazy
// appends that are written together share no fsync at all. Use it for
// records whose loss in a machine crash breaks no promise yet, and call Sync
// before making one.
func (l *Log) AppendBatchLazy(ctx context.Context, payloads [][]byte) ([]uint64, error) {
	if len(payloads) == 0 {
		return nil, ctx.Err()
	}
	return l.appendReq(ctx, payloads, true)
}

// AppendBatchLazyFunc is AppendBatchLazy without waiting at all: it queues
// the records and returns. The writer writes them to the segment file (no
// fsync) within Config.LazyDelay, together with whatever else queued
// meanwhile, and then calls then with their Seqs, or with the error that
// kept them out of the log. So until then a process crash loses them, and
// until the next fsync (see AppendBatchLazy) a power loss may. Sync writes
// and fsyncs them at once.
//
// then is called exactly once, on the writer's goroutine, unless
// AppendBatchLazyFunc returns an error (the log is closed, a payload is too
// large, or there are none), in which case it is never called. then must not
// block; it may call MarkDone. The log does not copy payloads: the caller
// must not modify them after the call.
func (l *Log) AppendBatchLazyFunc(payloads [][]byte, then func(seqs []uint64, err error)) error {
	if len(payloads) == 0 {
		return errors.New("wal: no payloads")
	}
	r := &appendReq{payloads: payloads, lazy: true, then: then}
	for _, p := range payloads {
		if len(p) > l.cfg.MaxRecordBytes {
			return fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(p), l.cfg.MaxRecordBytes)
		}
		r.size += len(p)
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.lazy = append(l.lazy, r)
	kick := l.kickLocked()
	l.mu.Unlock()
	if kick {
		l.wake()
	}
	return nil
}

func (l *Log) append(ctx context.Context, payloads [][]byte) ([]uint64, error) {
	return l.appendReq(ctx, payloads, false)
}

func (l *Log) appendReq(ctx context.Context, payloads [][]byte, lazy bool) ([]uint64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r := &appendReq{payloads: make([][]byte, len(payloads)), lazy: lazy, done: make(chan struct{})}
	for i, p := range payloads {
		if len(p) > l.cfg.MaxRecordBytes {
			return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(p), l.cfg.MaxRecordBytes)
		}
		r.payloads[i] = bytes.Clone(p)
		r.size += len(p)
	}
	select {
	case l.reqCh <- r:
	case <-l.closing:
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		if r.state.CompareAndSwap(reqWaiting, reqAbandoned) {
			return nil, ctx.Err()
		}
		<-r.done // the writer is answering
	}
	return r.seqs, r.err
}

// MarkDone marks the records seqs as done: Pending no longer returns them,
// and a done-mark record listing them is written to the log. Seqs that are
// not pending (unknown, or already done) are ignored.
//
// MarkDone does not wait for the mark to be written or fsynced. The writer
// writes it soon after and it becomes durable with the next fsync (of the
// next Append, a rotation, a deletion or Close). A mark lost to a crash
// only means that the record is pending again after Open, and is replayed;
// the consumer must tolerate that.
func (l *Log) MarkDone(seqs ...uint64) error {
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return ErrClosed
	}
	n := 0
	for _, s := range seqs {
		if _, ok := l.pending[s]; ok {
			delete(l.pending, s)
			l.marks = append(l.marks, s)
			n++
		}
	}
	kick := n > 0 && l.kickLocked()
	l.mu.Unlock()
	if kick {
		l.wake()
	}
	return nil
}

// Sync returns once every record appended and every done-mark made before
// the call is written and fsynced, and the segments it completed are
// deleted. It makes lazy appends durable.
func (l *Log) Sync(ctx context.Context) error {
	_, err := l.append(ctx, nil)
	return err
}

// kickLocked reports whether lazy work just queued needs a kick of the
// writer (none is on its way), and records that one is. l.mu is held.
func (l *Log) kickLocked() bool {
	if l.kicked {
		return false
	}
	l.kicked = true
	return true
}

// wake makes the writer look at l.marks and l.lazy, without blocking.
func (l *Log) wake() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// Pending returns the records that are written and not marked done, in Seq
// order. After Open these are the records to replay. The caller owns the
// result.
func (l *Log) Pending() []Record {
	l.mu.Lock()
	recs := make([]Record, 0, len(l.pending))
	for seq, p := range l.pending {
		recs = append(recs, Record{Seq: seq, Payload: p})
	}
	l.mu.Unlock()
	for i := range recs {
		recs[i].Payload = bytes.Clone(recs[i].Payload) // stored payloads are immutable
	}
	slices.SortFunc(recs, func(a, b Record) int { return cmp.Compare(a.Seq, b.Seq) })
	return recs
}

// Stats returns the log's current size.
func (l *Log) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.stats
	s.Pending = len(l.pending)
	if s.Err == nil && l.closed {
		s.Err = ErrClosed
	}
	return s
}

// Close stops the log: Appends not yet taken by the writer return
// ErrClosed, marks already made are written, and the active segment is
// fsynced and closed. Close waits for the writer goroutine and may be called
// more than once; every call returns the same error.
func (l *Log) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		l.mu.Unlock()
		close(l.closing)
	})
	l.wg.Wait()
	return l.closeErr
}
