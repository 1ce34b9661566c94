package wal

import "sort"

// segment is the writer's account of one segment file.
type segment struct {
	segHeader
	// size is the file's length in bytes, as written (synced or not).
	size int64
	// lastSeq is the Seq of the last data record in the segment, or
	// firstSeq-1 if it has none. Data Seqs in a segment are firstSeq..lastSeq
	// with no gaps.
	lastSeq uint64
	// live counts the segment's data records that no written done-mark
	// covers yet. The segment may be deleted when live is 0 and it is not
	// the active one.
	// Invariant: 0 <= live <= lastSeq-firstSeq+1.
	live int
	// cross holds, by the ID of an older segment, the Seqs of that
	// segment's records that done-marks in this segment cover. Deleting
	// this segment would lose those marks, so they are written again
	// (carried) into the active segment first. Entries for a segment are
	// dropped when it is deleted.
	cross map[uint64][]uint64
}

func newSegment(h segHeader) *segment {
	return &segment{segHeader: h, size: segHeaderLen, lastSeq: h.firstSeq - 1, cross: map[uint64][]uint64{}}
}

// findSegment returns the segment in segs (ordered by ID) that holds the data
// record seq, or nil if none does: the record's segment was deleted, or
// seq was never written.
func findSegment(segs []*segment, seq uint64) *segment {
	// Only the last of several segments with the same firstSeq can hold
	// data: the others were rotated before any data record reached them.
	i := sort.Search(len(segs), func(i int) bool { return segs[i].firstSeq > seq }) - 1
	if i < 0 || seq > segs[i].lastSeq {
		return nil
	}
	return segs[i]
}
