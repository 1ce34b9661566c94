package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"path/filepath"
	"strconv"
	"strings"
)

// castagnoli is the CRC32C table for every checksum in a segment.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Decoding errors. They are wrapped in a *CorruptError when Open finds them
// anywhere but in a torn tail.
var (
	errShort      = fmt.Errorf("record runs past end of file: %w", io.ErrUnexpectedEOF)
	errBadHeader  = errors.New("invalid record header")
	errChecksum   = errors.New("record checksum mismatch")
	errBadSegment = errors.New("invalid segment header")
	errSequence   = errors.New("record sequence out of order")
	errBadMark    = errors.New("done-mark for a record not yet written")
	errBadSynced  = errors.New("sync mark out of range")
)

/*
Segment header, 32 bytes at offset 0 of every segment file. Integers are
little-endian.

	0      1      2      3      4      5      6      7      8
	+------+------+------+------+------+------+------+------+
	| Magic "txlogwal"                                      |
	+------+------+------+------+------+------+------+------+
	| Vsn  | Reserved (0)       | CRC32C                    |
	+------+------+------+------+------+------+------+------+
	| SegmentID                                             |
	+------+------+------+------+------+------+------+------+
	| FirstSeq                                              |
	+------+------+------+------+------+------+------+------+

CRC32C (Castagnoli) covers bytes 0-11 and 16-31, that is every other field.
SegmentID and FirstSeq repeat the file name, which is
"<SegmentID>-<FirstSeq>.wal" in 16 lower-case hex digits each, so names
sort by SegmentID. FirstSeq is the Seq the first data record in the segment
gets (or would get: a segment may hold done-marks only).
*/
const (
	segHeaderLen  = 32
	segVersion    = 1
	segMagic      = "txlogwal"
	segNameSuffix = ".wal"
)

// segHeader is the decoded segment header.
type segHeader struct {
	id       uint64
	firstSeq uint64
}

// appendSegHeader appends the encoded header h to buf.
func appendSegHeader(buf []byte, h segHeader) []byte {
	var b [segHeaderLen]byte
	copy(b[0:8], segMagic)
	b[8] = segVersion
	binary.LittleEndian.PutUint64(b[16:24], h.id)
	binary.LittleEndian.PutUint64(b[24:32], h.firstSeq)
	binary.LittleEndian.PutUint32(b[12:16], segHeaderCRC(b[:]))
	return append(buf, b[:]...)
}

func segHeaderCRC(b []byte) uint32 {
	c := crc32.Update(0, castagnoli, b[0:12])
	return crc32.Update(c, castagnoli, b[16:segHeaderLen])
}

// decodeSegHeader decodes the header at the start of buf.
func decodeSegHeader(buf []byte) (segHeader, error) {
	if len(buf) < segHeaderLen {
		return segHeader{}, fmt.Errorf("%w: %d of %d bytes", errBadSegment, len(buf), segHeaderLen)
	}
	b := buf[:segHeaderLen]
	switch {
	case string(b[0:8]) != segMagic:
		return segHeader{}, fmt.Errorf("%w: bad magic %q", errBadSegment, b[0:8])
	case b[8] != segVersion:
		return segHeader{}, fmt.Errorf("%w: unknown version %d", errBadSegment, b[8])
	case b[9] != 0 || b[10] != 0 || b[11] != 0:
		return segHeader{}, fmt.Errorf("%w: reserved bytes not zero", errBadSegment)
	case binary.LittleEndian.Uint32(b[12:16]) != segHeaderCRC(b):
		return segHeader{}, fmt.Errorf("%w: checksum mismatch", errBadSegment)
	}
	return segHeader{
		id:       binary.LittleEndian.Uint64(b[16:24]),
		firstSeq: binary.LittleEndian.Uint64(b[24:32]),
	}, nil
}

// segName is the file name of the segment with header h.
func segName(h segHeader) string {
	return fmt.Sprintf("%016x-%016x%s", h.id, h.firstSeq, segNameSuffix)
}

// parseSegName parses a name made by segName. ok is false for any other name.
func parseSegName(name string) (h segHeader, ok bool) {
	base, found := strings.CutSuffix(filepath.Base(name), segNameSuffix)
	if !found || len(base) != 33 || base[16] != '-' {
		return segHeader{}, false
	}
	id, err1 := strconv.ParseUint(base[:16], 16, 64)
	first, err2 := strconv.ParseUint(base[17:], 16, 64)
	if err1 != nil || err2 != nil || segName(segHeader{id, first}) != filepath.Base(name) {
		return segHeader{}, false
	}
	return segHeader{id: id, firstSeq: first}, true
}

/*
Record, 20 bytes of header then the payload. Records follow each other with
no padding. Integers are little-endian.

	0      1      2      3      4      5      6      7      8
	+------+------+------+------+------+------+------+------+
	| CRC32C                    | Length                    |
	+------+------+------+------+------+------+------+------+
	| Seq                                                   |
	+------+------+------+------+------+------+------+------+
	| Type | Reserved (0)       | Payload (Length bytes) ...
	+------+------+------+------+------+------+------+------+

CRC32C (Castagnoli) covers bytes 4-19 of the header and the payload, so
every field but itself. Type is recData (1), recDone (2) or recSynced (3);
0 is never written, which makes a run of zeros invalid.

A data record carries Seq (>= 1) and the caller's payload, 0 to
maxPayloadBytes bytes.

A done record has Seq 0 and a payload of 1 to maxDoneSeqs little-endian
uint64 values, the Seqs of data records that are done:

	+------+------+------+------+------+------+------+------+
	| Seq of a done record                                  |  x Length/8
	+------+------+------+------+------+------+------+------+

A synced record (a sync mark) has Seq 0 and a payload of one little-endian
uint64, Synced: the length of the segment's records, in bytes from the start
of the file, that a completed fsync covered. The writer puts one at the start
of the first write after each fsync of the segment, so it costs no fsync of
its own; recovery trusts the segment up to the highest Synced it finds and
reads what follows as a possibly torn tail (see scanSegment). Synced is at
least segHeaderLen and at most the record's own offset.

	+------+------+------+------+------+------+------+------+
	| Synced                                                |
	+------+------+------+------+------+------+------+------+
*/
const (
	recHeaderLen = 20

	recData   byte = 1
	recDone   byte = 2
	recSynced byte = 3

	// syncedRecLen is the encoded size of a synced record.
	syncedRecLen = recHeaderLen + 8

	// maxPayloadBytes bounds Length, so that a corrupt length cannot make a
	// decoder allocate or scan without limit. Config.MaxRecordBytes may not
	// exceed it.
	maxPayloadBytes = 64 << 20

	// maxDoneSeqs is the most Seqs one done record lists; longer lists are
	// split into several records.
	maxDoneSeqs = 8192
)

// record is a decoded record. For recDone, payload holds the Seqs.
type record struct {
	typ     byte
	seq     uint64
	payload []byte
}

// encodedLen is the size of a record with a payload of n bytes.
func encodedLen(n int) int { return recHeaderLen + n }

// appendRecord appends the encoded record r to buf.
func appendRecord(buf []byte, r record) []byte {
	start := len(buf)
	var h [recHeaderLen]byte
	binary.LittleEndian.PutUint32(h[4:8], uint32(len(r.payload)))
	binary.LittleEndian.PutUint64(h[8:16], r.seq)
	h[16] = r.typ
	buf = append(buf, h[:]...)
	buf = append(buf, r.payload...)
	binary.LittleEndian.PutUint32(buf[start:start+4], crc32.Checksum(buf[start+4:], castagnoli))
	return buf
}

// appendDone appends one done record listing seqs, which must hold 1 to
// maxDoneSeqs values.
func appendDone(buf []byte, seqs []uint64) []byte {
	p := make([]byte, 8*len(seqs))
	for i, s := range seqs {
		binary.LittleEndian.PutUint64(p[8*i:], s)
	}
	return appendRecord(buf, record{typ: recDone, payload: p})
}

// appendSynced appends a synced record naming synced, the length of the
// segment that a completed fsync covered.
func appendSynced(buf []byte, synced int64) []byte {
	var p [8]byte
	binary.LittleEndian.PutUint64(p[:], uint64(synced))
	return appendRecord(buf, record{typ: recSynced, payload: p[:]})
}

// syncedLen returns the length named by a decoded synced record.
func syncedLen(r record) int64 { return int64(binary.LittleEndian.Uint64(r.payload)) }

// doneSeqs returns the Seqs listed by a decoded done record.
func doneSeqs(r record) []uint64 {
	seqs := make([]uint64, len(r.payload)/8)
	for i := range seqs {
		seqs[i] = binary.LittleEndian.Uint64(r.payload[8*i:])
	}
	return seqs
}

// decodeRecord decodes the record at the start of buf and returns it with its
// encoded length n. r.payload aliases buf. The error is errShort if buf ends
// inside the record, errBadHeader if a header field is impossible, and
// errChecksum if the CRC does not match. The header is checked before the
// CRC, so a garbage length costs no CRC over the rest of buf.
func decodeRecord(buf []byte) (r record, n int, err error) {
	if len(buf) < recHeaderLen {
		return record{}, 0, errShort
	}
	length := binary.LittleEndian.Uint32(buf[4:8])
	r.seq = binary.LittleEndian.Uint64(buf[8:16])
	r.typ = buf[16]
	if buf[17] != 0 || buf[18] != 0 || buf[19] != 0 {
		return record{}, 0, fmt.Errorf("%w: reserved bytes not zero", errBadHeader)
	}
	if length > maxPayloadBytes {
		return record{}, 0, fmt.Errorf("%w: length %d over %d", errBadHeader, length, maxPayloadBytes)
	}
	switch r.typ {
	case recData:
		if r.seq == 0 {
			return record{}, 0, fmt.Errorf("%w: data record with seq 0", errBadHeader)
		}
	case recDone:
		if r.seq != 0 || length == 0 || length%8 != 0 || length/8 > maxDoneSeqs {
			return record{}, 0, fmt.Errorf("%w: done record with seq %d, length %d", errBadHeader, r.seq, length)
		}
	case recSynced:
		if r.seq != 0 || length != 8 {
			return record{}, 0, fmt.Errorf("%w: synced record with seq %d, length %d", errBadHeader, r.seq, length)
		}
	default:
		return record{}, 0, fmt.Errorf("%w: type %d", errBadHeader, r.typ)
	}
	n = recHeaderLen + int(length)
	if len(buf) < n {
		return record{}, 0, errShort
	}
	if binary.LittleEndian.Uint32(buf[0:4]) != crc32.Checksum(buf[4:n], castagnoli) {
		return record{}, 0, errChecksum
	}
	r.payload = buf[recHeaderLen:n]
	return r, n, nil
}
