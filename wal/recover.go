package wal

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// scanned is what the first recovery pass learns of one segment.
type scanned struct {
	seg *segment
	// marks holds the Seqs of each done record in the segment, in file order.
	marks [][]uint64
	// tornAt is the offset at which the torn tail of the last segment
	// starts, or -1 if it has none. 0 means the segment header is torn.
	tornAt int64
	// fileSize is the segment file's length: past seg.size when the last
	// segment ends in zeros written ahead.
	fileSize int64
	// marked is the length that the segment's last sync mark names, or
	// segHeaderLen if it has none.
	marked int64
}

// recover reads every segment in l.w.dir, repairs a torn tail of the last one,
// and sets up the writer's state: l.w.segs, l.w.nextSeq, l.pending and
// the open active file. It runs in Open, before the writer goroutine starts.
//
// Recovery takes two passes. The first decodes and checks every record and
// collects the done-marks; the second reads again only the segments that
// still have pending records, to copy their payloads. So recovery holds in
// memory one segment file and the pending payloads, never the whole log.
func (l *Log) recover() error {
	names, err := l.w.fs.ReadDir(l.w.dir)
	if err != nil {
		return fmt.Errorf("wal: read dir %s: %w", l.w.dir, err)
	}
	var heads []segHeader
	for _, name := range names {
		if h, ok := parseSegName(name); ok {
			heads = append(heads, h)
		}
	}
	slices.SortFunc(heads, func(a, b segHeader) int { return cmp.Compare(a.id, b.id) })

	var scans []scanned
	next := uint64(1) // Seq of the next data record
	for i, h := range heads {
		path := l.w.path(h)
		if i > 0 {
			prev := heads[i-1]
			switch {
			case h.id == prev.id:
				return &CorruptError{File: path, Offset: 0, Err: fmt.Errorf("%w: two segments with ID %d", errBadSegment, h.id)}
			case h.firstSeq < next || (h.id == prev.id+1 && h.firstSeq != next):
				return &CorruptError{File: path, Offset: 0, Err: fmt.Errorf("%w: segment starts at seq %d after seq %d", errSequence, h.firstSeq, next-1)}
			}
		}
		if h.firstSeq == 0 {
			return &CorruptError{File: path, Offset: 0, Err: fmt.Errorf("%w: first seq 0", errBadSegment)}
		}
		buf, err := l.w.fs.ReadFile(path)
		if err != nil {
			return fmt.Errorf("wal: read segment %s: %w", path, err)
		}
		sc, err := scanSegment(buf, h, i == len(heads)-1)
		if err != nil {
			var ce *CorruptError
			if errors.As(err, &ce) {
				ce.File = path
			}
			return err
		}
		if sc.tornAt >= 0 {
			if err := l.w.repairTail(path, h, sc.tornAt, int64(len(buf))); err != nil {
				return err
			}
		}
		next = sc.seg.lastSeq + 1
		scans = append(scans, sc)
	}

	segs := make([]*segment, len(scans))
	for i, sc := range scans {
		segs[i] = sc.seg
		sc.seg.live = int(sc.seg.lastSeq + 1 - sc.seg.firstSeq)
	}
	// Apply the done-marks. A mark for a Seq that no segment holds refers
	// to a deleted segment and is ignored.
	done := map[uint64]struct{}{}
	for _, sc := range scans {
		for _, seqs := range sc.marks {
			for _, s := range seqs {
				y := findSegment(segs, s)
				if y == nil {
					continue
				}
				if _, dup := done[s]; !dup {
					done[s] = struct{}{}
					y.live--
				}
				if y != sc.seg {
					sc.seg.cross[y.id] = append(sc.seg.cross[y.id], s)
				}
			}
		}
	}
	for _, seg := range segs {
		if seg.live > 0 {
			if err := l.w.readPending(seg, done, l.pending); err != nil {
				return err
			}
		}
	}

	l.w.segs = segs
	l.w.nextSeq = next
	if len(segs) == 0 {
		return l.w.createSegment(segHeader{id: 1, firstSeq: 1})
	}
	active := segs[len(segs)-1]
	if scans[len(scans)-1].tornAt == 0 {
		return l.w.rewriteHeader(active)
	}
	path := l.w.path(active.segHeader)
	f, err := l.w.fs.OpenWrite(path)
	if err != nil {
		return fmt.Errorf("wal: open segment %s: %w", path, err)
	}
	l.w.f = f
	last := scans[len(scans)-1]
	l.w.zeroEnd = active.size
	if last.tornAt < 0 {
		l.w.zeroEnd = last.fileSize
	}
	// The records kept past the last sync mark may have been in the page
	// cache only (a process crash), and a truncated tail may come back if
	// the cut is not durable. One fsync here makes what recovery kept
	// durable, so the first write's sync mark may name all of it; it also
	// makes the cut durable, so that no old bytes reappear after records
	// written over them (a full fsync, since the file shrank).
	l.w.synced, l.w.marked = last.marked, last.marked
	if active.size == last.marked && last.tornAt < 0 || l.cfg.NoSync {
		return nil
	}
	sync := f.Sync
	if last.tornAt >= 0 {
		sync = f.SyncAll
	}
	if err := sync(); err != nil {
		return fmt.Errorf("wal: fsync segment %s: %w", path, err)
	}
	l.w.syncs.Add(1)
	l.w.synced = active.size
	return nil
}

// scanSegment decodes and checks the segment h held in buf. last says
// whether it is the last segment, the only one that may have a torn tail.
// A *CorruptError it returns has File unset.
//
// The rule that tells a torn tail from corruption rests on the sync marks
// (synced records): a mark naming length S is written only after a fsync
// that covered the segment's first S bytes completed, so wherever a valid
// mark is found, those bytes were durable. When a record fails to decode or
// to check at offset off:
//
//   - In a segment that is not the last, it is corrupt: each segment is
//     fsynced whole before the next one is created.
//   - In the last segment, it is corrupt if a valid mark at any byte offset
//     after off names a length past off: the damage is in data that a
//     completed fsync covered. Otherwise everything from off on is a torn
//     tail, whatever its shape (a part of a record, zeros, garbage, valid
//     records after a hole), since nothing says a fsync covered it.
//
// The last segment may end in zeros that the writer wrote ahead of its
// records (Config.PreallocBytes). Zeros from a record boundary to the end of
// the file are the segment's clean end, not a torn tail: no record is ever
// all zeros (type 0 is never written). Any other segment is truncated to its
// records before the next one is created, so zeros there are damage.
func scanSegment(buf []byte, h segHeader, last bool) (scanned, error) {
	sc := scanned{seg: newSegment(h), tornAt: -1, fileSize: int64(len(buf)), marked: segHeaderLen}
	sc.seg.size = int64(len(buf))
	got, err := decodeSegHeader(buf)
	if err == nil && got != h {
		return sc, &CorruptError{Offset: 0, Err: fmt.Errorf("%w: header has ID %d first seq %d, name has %d and %d",
			errBadSegment, got.id, got.firstSeq, h.id, h.firstSeq)}
	}
	if err != nil {
		// The header and its zeros are fsynced before any record is
		// written, so a record after a bad header means the header was
		// damaged after its sync.
		if last && !validRecordAfter(buf, 0, h.firstSeq) {
			sc.tornAt = 0
			sc.seg.size = segHeaderLen
			return sc, nil
		}
		return sc, &CorruptError{Offset: 0, Err: err}
	}
	next := h.firstSeq
	for off := segHeaderLen; off < len(buf); {
		r, n, err := decodeRecord(buf[off:])
		if err == nil {
			err = checkRecord(r, int64(off), next, sc.marked)
		}
		if err != nil {
			if !last {
				return sc, &CorruptError{Offset: int64(off), Err: err}
			}
			if p, synced, ok := syncMarkAfter(buf, off); ok {
				return sc, &CorruptError{Offset: int64(off), Err: fmt.Errorf(
					"%w, inside the %d bytes that the sync mark at offset %d says a completed fsync covered", err, synced, p)}
			}
			sc.seg.size = int64(off)
			if !allZero(buf[off:]) {
				sc.tornAt = int64(off)
			}
			return sc, nil
		}
		switch r.typ {
		case recData:
			sc.seg.lastSeq = r.seq
			next++
		case recDone:
			sc.marks = append(sc.marks, doneSeqs(r))
		case recSynced:
			sc.marked = syncedLen(r)
		}
		off += n
	}
	return sc, nil
}

// checkRecord checks a decoded record r at offset off against what comes
// before it: next is the Seq the next data record must have, and marked the
// length that the segment's last sync mark so far names. A good CRC does not
// make a record right: a writer never puts a Seq out of order, a mark for
// an unwritten Seq, or a sync mark that names less than an earlier one or
// bytes past itself.
func checkRecord(r record, off int64, next uint64, marked int64) error {
	switch r.typ {
	case recData:
		if r.seq != next {
			return fmt.Errorf("%w: seq %d, want %d", errSequence, r.seq, next)
		}
	case recDone:
		for _, s := range doneSeqs(r) {
			if s >= next {
				return fmt.Errorf("%w: seq %d, next is %d", errBadMark, s, next)
			}
		}
	case recSynced:
		if s := syncedLen(r); s <= marked || s > off {
			return fmt.Errorf("%w: names %d bytes at offset %d, after a mark of %d", errBadSynced, s, off, marked)
		}
	}
	return nil
}

// syncMarkAfter looks for a valid sync mark at any byte offset p after off
// that names a length synced past off, which proves that a completed fsync
// covered off. A mark naming bytes past itself is not valid: no writer puts
// one.
func syncMarkAfter(buf []byte, off int) (p int, synced int64, ok bool) {
	for p = off + 1; p+syncedRecLen <= len(buf); p++ {
		if buf[p+16] != recSynced {
			continue // what decodeRecord would reject first, cheaply: zeros written ahead are long
		}
		r, _, err := decodeRecord(buf[p:])
		if err != nil || r.typ != recSynced {
			continue
		}
		if s := syncedLen(r); s > int64(off) && s <= int64(p) {
			return p, s, true
		}
	}
	return 0, 0, false
}

// allZero reports whether b holds only zero bytes.
func allZero(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b) != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// validRecordAfter reports whether a record that could follow a damaged
// segment header decodes at any byte offset from off on: a done record, a
// sync mark, or a data record with a Seq of at least next.
func validRecordAfter(buf []byte, off int, next uint64) bool {
	for p := max(off, 0); p+recHeaderLen <= len(buf); p++ {
		if t := buf[p+16]; t != recData && t != recDone && t != recSynced {
			continue // what decodeRecord would reject first, cheaply: zeros written ahead are long
		}
		r, _, err := decodeRecord(buf[p:])
		if err == nil && (r.typ != recData || r.seq >= next) {
			return true
		}
	}
	return false
}

// repairTail truncates the torn tail of segment h at off.
func (w *writer) repairTail(path string, h segHeader, off, size int64) error {
	w.logger.Warn("torn tail truncated", keyFile, path, keyOffset, off, keyDroppedBytes, size-off)
	if off == 0 {
		return nil // rewriteHeader truncates, once the segment is set up
	}
	if err := w.fs.Truncate(path, off); err != nil {
		return fmt.Errorf("wal: truncate segment %s at %d: %w", path, off, err)
	}
	return nil
}

// rewriteHeader writes a fresh header into the last segment, whose header was
// torn, and opens it as the active segment.
func (w *writer) rewriteHeader(seg *segment) error {
	path := w.path(seg.segHeader)
	if err := w.fs.Truncate(path, 0); err != nil {
		return fmt.Errorf("wal: truncate segment %s: %w", path, err)
	}
	f, err := w.fs.OpenWrite(path)
	if err != nil {
		return fmt.Errorf("wal: open segment %s: %w", path, err)
	}
	w.f = f
	return w.startSegment()
}

// readPending copies into pending (the Log's) the payloads of seg's data
// records that are not in done.
func (w *writer) readPending(seg *segment, done map[uint64]struct{}, pending map[uint64][]byte) error {
	path := w.path(seg.segHeader)
	buf, err := w.fs.ReadFile(path)
	if err != nil {
		return fmt.Errorf("wal: read segment %s: %w", path, err)
	}
	buf = buf[:min(int64(len(buf)), seg.size)]
	for off := segHeaderLen; off < len(buf); {
		r, n, err := decodeRecord(buf[off:])
		if err != nil {
			// The first pass checked this file; it changed under us.
			return &CorruptError{File: path, Offset: int64(off), Err: err}
		}
		if _, ok := done[r.seq]; r.typ == recData && !ok {
			pending[r.seq] = bytes.Clone(r.payload)
		}
		off += n
	}
	return nil
}
