// Copyright (c) HashiCorp, Inc.
// SPDX-License-Identifier: MPL-2.0

package raft

// txlog's patch, change 2 (PATCHES.md): the network transport encodes and
// decodes AppendEntries requests and responses with the code below instead of
// go-msgpack's reflection. The bytes on the wire are the ones go-msgpack writes
// for these types with the transport's handles (a map per struct, keys in
// name order, integers in their shortest form, byte slices and strings as
// legacy raw strings), so a node with this code and one without talk to each
// other; TestFastCodec* compare the two byte for byte and value for value.
// Every other RPC still goes through go-msgpack.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"time"
)

// msgpack type bytes used here.
const (
	mpNil      = 0xc0
	mpFalse    = 0xc2
	mpTrue     = 0xc3
	mpBin8     = 0xc4
	mpBin16    = 0xc5
	mpBin32    = 0xc6
	mpExt8     = 0xc7
	mpExt16    = 0xc8
	mpExt32    = 0xc9
	mpFloat32  = 0xca
	mpFloat64  = 0xcb
	mpUint8    = 0xcc
	mpUint16   = 0xcd
	mpUint32   = 0xce
	mpUint64   = 0xcf
	mpInt8     = 0xd0
	mpInt16    = 0xd1
	mpInt32    = 0xd2
	mpInt64    = 0xd3
	mpFixExt1  = 0xd4
	mpFixExt4  = 0xd6
	mpFixExt8  = 0xd7
	mpFixExt16 = 0xd8
	mpStr8     = 0xd9
	mpStr16    = 0xda
	mpStr32    = 0xdb
	mpArray16  = 0xdc
	mpArray32  = 0xdd
	mpMap16    = 0xde
	mpMap32    = 0xdf

	mpTimeExtTag = 0xff // -1, msgpack's timestamp extension
)

// Bounds on what the decoder accepts, checked when a length is read, before
// anything is allocated (txlog's patch, change 6): larger ones are corrupt or
// hostile input, not a request. Within them, what is allocated follows what
// arrived, not what was declared: a byte slice longer than readChunk grows as
// its bytes arrive, and entries are allocated at most maxEntriesChunk at a
// time, so that a connection that declares 1 GiB and sends 10 bytes costs
// about readChunk.
const (
	// maxFastLen bounds an entry's Data or Extensions, and any array, map or
	// value skipped.
	maxFastLen = 1 << 30
	// maxFastShort bounds the other byte slices and strings: a request's
	// ID, Addr and Leader, a response's, and the response's error string.
	maxFastShort = 1 << 20
	// maxFastEntries bounds a request's entries: a sender makes at most
	// Config.MaxAppendEntries, itself at most 1024 (ValidateConfig).
	maxFastEntries = 1 << 16
	// maxEntriesChunk is the most entries allocated before they arrive: any
	// valid request's, in one allocation.
	maxEntriesChunk = 1024
	// readChunk is the longest byte slice allocated whole before its bytes
	// arrive; a longer one waits for them in the reader's buffer if it
	// fits there, else starts at this and doubles as they come.
	readChunk = 64 << 10
)

// mpWriter appends msgpack values to a bufio.Writer, as go-msgpack's encoder
// does with MsgpackHandle{WriteExt: false}.
type mpWriter struct {
	w   *bufio.Writer
	err error
	x   [9]byte
	t   [16]byte // time.AppendBinary's bytes: 15, or 16 with seconds in the zone offset
}

func (e *mpWriter) bytes(b []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(b)
	}
}

func (e *mpWriter) byte1(b byte) {
	if e.err == nil {
		e.err = e.w.WriteByte(b)
	}
}

func (e *mpWriter) uint(v uint64) {
	switch {
	case v <= math.MaxInt8:
		e.byte1(byte(v))
	case v <= math.MaxUint8:
		e.x[0], e.x[1] = mpUint8, byte(v)
		e.bytes(e.x[:2])
	case v <= math.MaxUint16:
		e.x[0] = mpUint16
		binary.BigEndian.PutUint16(e.x[1:], uint16(v))
		e.bytes(e.x[:3])
	case v <= math.MaxUint32:
		e.x[0] = mpUint32
		binary.BigEndian.PutUint32(e.x[1:], uint32(v))
		e.bytes(e.x[:5])
	default:
		e.x[0] = mpUint64
		binary.BigEndian.PutUint64(e.x[1:], v)
		e.bytes(e.x[:9])
	}
}

func (e *mpWriter) int(v int64) {
	switch {
	case v > math.MaxInt8:
		switch {
		case v <= math.MaxInt16:
			e.x[0] = mpInt16
			binary.BigEndian.PutUint16(e.x[1:], uint16(v))
			e.bytes(e.x[:3])
		case v <= math.MaxInt32:
			e.x[0] = mpInt32
			binary.BigEndian.PutUint32(e.x[1:], uint32(v))
			e.bytes(e.x[:5])
		default:
			e.x[0] = mpInt64
			binary.BigEndian.PutUint64(e.x[1:], uint64(v))
			e.bytes(e.x[:9])
		}
	case v >= -32:
		e.byte1(byte(v))
	case v >= math.MinInt8:
		e.x[0], e.x[1] = mpInt8, byte(v)
		e.bytes(e.x[:2])
	case v >= math.MinInt16:
		e.x[0] = mpInt16
		binary.BigEndian.PutUint16(e.x[1:], uint16(v))
		e.bytes(e.x[:3])
	case v >= math.MinInt32:
		e.x[0] = mpInt32
		binary.BigEndian.PutUint32(e.x[1:], uint32(v))
		e.bytes(e.x[:5])
	default:
		e.x[0] = mpInt64
		binary.BigEndian.PutUint64(e.x[1:], uint64(v))
		e.bytes(e.x[:9])
	}
}

func (e *mpWriter) bool(b bool) {
	if b {
		e.byte1(mpTrue)
	} else {
		e.byte1(mpFalse)
	}
}

// rawLen writes the header of a legacy raw string of n bytes.
func (e *mpWriter) rawLen(n int) {
	switch {
	case n < 32:
		e.byte1(0xa0 | byte(n))
	case n < 1<<16:
		e.x[0] = mpStr16
		binary.BigEndian.PutUint16(e.x[1:], uint16(n))
		e.bytes(e.x[:3])
	default:
		e.x[0] = mpStr32
		binary.BigEndian.PutUint32(e.x[1:], uint32(n))
		e.bytes(e.x[:5])
	}
}

// raw writes a byte slice: nil as nil, else a legacy raw string.
func (e *mpWriter) raw(b []byte) {
	if b == nil {
		e.byte1(mpNil)
		return
	}
	e.rawLen(len(b))
	e.bytes(b)
}

// string writes a string, a struct field name among them.
func (e *mpWriter) string(s string) {
	e.rawLen(len(s))
	if e.err == nil {
		_, e.err = e.w.WriteString(s)
	}
}

func (e *mpWriter) containerLen(fix byte, b16, b32 byte, n int) {
	switch {
	case n < 16:
		e.byte1(fix | byte(n))
	case n < 1<<16:
		e.x[0] = b16
		binary.BigEndian.PutUint16(e.x[1:], uint16(n))
		e.bytes(e.x[:3])
	default:
		e.x[0] = b32
		binary.BigEndian.PutUint32(e.x[1:], uint32(n))
		e.bytes(e.x[:5])
	}
}

func (e *mpWriter) mapLen(n int)   { e.containerLen(0x80, mpMap16, mpMap32, n) }
func (e *mpWriter) arrayLen(n int) { e.containerLen(0x90, mpArray16, mpArray32, n) }

// time writes t as go-msgpack does: with timeNotBuiltin (the transport's
// default, the old format) as the raw string of t.MarshalBinary, else as
// msgpack's timestamp in a raw string, nil for the zero time.
func (e *mpWriter) time(t time.Time, timeNotBuiltin bool) {
	if timeNotBuiltin {
		bin, err := t.AppendBinary(e.t[:0]) // MarshalBinary's bytes, without a new slice
		if err != nil {
			if e.err == nil {
				e.err = err
			}
			return
		}
		e.raw(bin)
		return
	}
	if t.IsZero() {
		e.byte1(mpNil)
		return
	}
	t = t.UTC()
	sec, nsec := t.Unix(), uint64(t.Nanosecond())
	switch data := nsec<<34 | uint64(sec); {
	case sec >= 0 && sec>>34 == 0 && data&0xffffffff00000000 == 0:
		e.rawLen(4)
		binary.BigEndian.PutUint32(e.x[:], uint32(data))
		e.bytes(e.x[:4])
	case sec >= 0 && sec>>34 == 0:
		e.rawLen(8)
		binary.BigEndian.PutUint64(e.x[:], data)
		e.bytes(e.x[:8])
	default:
		e.rawLen(12)
		binary.BigEndian.PutUint32(e.x[:], uint32(nsec))
		e.bytes(e.x[:4])
		binary.BigEndian.PutUint64(e.x[:], uint64(sec))
		e.bytes(e.x[:8])
	}
}

// writeAppendEntriesRequest writes req as go-msgpack's Encode(req) would.
func writeAppendEntriesRequest(w *bufio.Writer, req *AppendEntriesRequest, timeNotBuiltin bool) error {
	e := mpWriter{w: w}
	e.mapLen(9)
	e.string("Addr")
	e.raw(req.Addr)
	e.string("Entries")
	if req.Entries == nil {
		e.byte1(mpNil)
	} else {
		e.arrayLen(len(req.Entries))
		for _, l := range req.Entries {
			if l == nil {
				e.byte1(mpNil)
				continue
			}
			e.mapLen(6)
			e.string("AppendedAt")
			e.time(l.AppendedAt, timeNotBuiltin)
			e.string("Data")
			e.raw(l.Data)
			e.string("Extensions")
			e.raw(l.Extensions)
			e.string("Index")
			e.uint(l.Index)
			e.string("Term")
			e.uint(l.Term)
			e.string("Type")
			e.uint(uint64(l.Type))
		}
	}
	e.string("ID")
	e.raw(req.ID)
	e.string("Leader")
	e.raw(req.Leader)
	e.string("LeaderCommitIndex")
	e.uint(req.LeaderCommitIndex)
	e.string("PrevLogEntry")
	e.uint(req.PrevLogEntry)
	e.string("PrevLogTerm")
	e.uint(req.PrevLogTerm)
	e.string("ProtocolVersion")
	e.int(int64(req.ProtocolVersion))
	e.string("Term")
	e.uint(req.Term)
	return e.err
}

// writeAppendEntriesResponse writes the error string and resp as the two
// go-msgpack Encode calls of handleCommand would.
func writeAppendEntriesResponse(w *bufio.Writer, rpcErr string, resp *AppendEntriesResponse) error {
	e := mpWriter{w: w}
	e.string(rpcErr)
	e.mapLen(7)
	e.string("Addr")
	e.raw(resp.Addr)
	e.string("ID")
	e.raw(resp.ID)
	e.string("LastLog")
	e.uint(resp.LastLog)
	e.string("NoRetryBackoff")
	e.bool(resp.NoRetryBackoff)
	e.string("ProtocolVersion")
	e.int(int64(resp.ProtocolVersion))
	e.string("Success")
	e.bool(resp.Success)
	e.string("Term")
	e.uint(resp.Term)
	return e.err
}

// errFastCodec wraps what the decoder does not accept.
var errFastCodec = errors.New("raft: msgpack")

// mpReader reads msgpack values from a bufio.Reader without reading past the
// value it decodes, as go-msgpack's decoder does on an io.ByteScanner, so the
// two can take turns on one stream.
type mpReader struct {
	r *bufio.Reader

	// slab holds room for the entries' small byte slices: they share
	// allocations, each kept until the last of its slices is unused. left
	// counts the entries still to read, which sizes the next slab.
	slab []byte
	left int
}

// slabSize bounds the allocations the entries' small byte slices are carved
// from, and slabMaxLen is the longest slice carved from one.
const (
	slabSize   = 32 << 10
	slabMaxLen = 2 << 10
)

func (d *mpReader) fail(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errFastCodec, fmt.Sprintf(format, args...))
}

func (d *mpReader) next(n int) ([]byte, error) {
	b, err := d.r.Peek(n)
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	d.r.Discard(n)
	return b, nil
}

func (d *mpReader) byte1() (byte, error) {
	b, err := d.r.ReadByte()
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return b, err
}

// be reads an n-byte big-endian unsigned integer (n is 1, 2, 4 or 8).
func (d *mpReader) be(n int) (uint64, error) {
	b, err := d.next(n)
	if err != nil {
		return 0, err
	}
	switch n {
	case 1:
		return uint64(b[0]), nil
	case 2:
		return uint64(binary.BigEndian.Uint16(b)), nil
	case 4:
		return uint64(binary.BigEndian.Uint32(b)), nil
	}
	return binary.BigEndian.Uint64(b), nil
}

// integer reads any msgpack integer as go-msgpack's DecodeInt and DecodeUint
// do; neg reports a negative value, whose two's complement v holds. nil reads
// as 0.
func (d *mpReader) integer() (v uint64, neg bool, err error) {
	bd, err := d.byte1()
	if err != nil {
		return 0, false, err
	}
	switch {
	case bd <= 0x7f:
		return uint64(bd), false, nil
	case bd >= 0xe0:
		return uint64(int64(int8(bd))), true, nil
	case bd == mpNil:
		return 0, false, nil
	case bd >= mpUint8 && bd <= mpUint64:
		v, err = d.be(1 << (bd - mpUint8))
		return v, false, err
	case bd >= mpInt8 && bd <= mpInt64:
		n := 1 << (bd - mpInt8)
		if v, err = d.be(n); err != nil {
			return 0, false, err
		}
		var s int64
		switch n {
		case 1:
			s = int64(int8(v))
		case 2:
			s = int64(int16(v))
		case 4:
			s = int64(int32(v))
		default:
			s = int64(v)
		}
		return uint64(s), s < 0, nil
	}
	return 0, false, d.fail("an integer expected, found 0x%x", bd)
}

func (d *mpReader) uint(bits int) (uint64, error) {
	v, neg, err := d.integer()
	switch {
	case err != nil:
		return 0, err
	case neg:
		return 0, d.fail("negative value %d for an unsigned field", int64(v))
	case bits < 64 && v>>bits != 0:
		return 0, d.fail("value %d overflows %d bits", v, bits)
	}
	return v, nil
}

func (d *mpReader) int() (int64, error) {
	v, neg, err := d.integer()
	if err == nil && !neg && int64(v) < 0 {
		return 0, d.fail("value %d overflows int64", v)
	}
	return int64(v), err
}

func (d *mpReader) bool() (bool, error) {
	bd, err := d.byte1()
	switch {
	case err != nil:
		return false, err
	case bd == mpFalse, bd == mpNil:
		return false, nil
	case bd == mpTrue:
		return true, nil
	}
	return false, d.fail("a bool expected, found 0x%x", bd)
}

// rawHeader reads the header of a string or binary and returns its length,
// at most maxFastLen; isNil for nil, fix for a fixstr.
func (d *mpReader) rawHeader() (n int, isNil, fix bool, err error) {
	return d.rawHeaderMax(maxFastLen)
}

// rawHeaderMax is rawHeader with the bound limit.
func (d *mpReader) rawHeaderMax(limit uint64) (n int, isNil, fix bool, err error) {
	bd, err := d.byte1()
	if err != nil {
		return 0, false, false, err
	}
	var u uint64
	switch {
	case bd == mpNil:
		return 0, true, false, nil
	case bd >= 0xa0 && bd <= 0xbf:
		return int(bd & 0x1f), false, true, nil
	case bd == mpStr8, bd == mpBin8:
		u, err = d.be(1)
	case bd == mpStr16, bd == mpBin16:
		u, err = d.be(2)
	case bd == mpStr32, bd == mpBin32:
		u, err = d.be(4)
	default:
		return 0, false, false, d.fail("a string expected, found 0x%x", bd)
	}
	if err == nil && u > limit {
		err = d.fail("length %d over %d", u, limit)
	}
	return int(u), false, false, err
}

// raw reads a byte slice as go-msgpack decodes one into a []byte field: nil
// for nil, else a new slice (empty, not nil, for a zero length). An entry's
// (inEntry, at most maxFastLen) may share its allocation with the next
// entries'; any other is at most maxFastShort.
func (d *mpReader) raw(inEntry bool) ([]byte, error) {
	limit := uint64(maxFastShort)
	if inEntry {
		limit = maxFastLen
	}
	n, isNil, _, err := d.rawHeaderMax(limit)
	if err != nil || isNil {
		return nil, err
	}
	var b []byte
	switch {
	case n == 0:
		return []byte{}, nil
	case n > readChunk:
		return d.readGrowing(n)
	case !inEntry || n > slabMaxLen:
		b = make([]byte, n)
	default:
		if len(d.slab) < n {
			// Room for this slice and as many again for each entry left,
			// within slabSize: one allocation for a batch of entries alike.
			size := n * d.left
			if size > slabSize {
				size = slabSize
			}
			if size < n {
				size = n
			}
			d.slab = make([]byte, size)
		}
		b, d.slab = d.slab[:n:n], d.slab[n:]
	}
	if _, err := io.ReadFull(d.r, b); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return b, nil
}

// readGrowing reads n bytes into a new slice allocated as they arrive. If
// the reader's own buffer can hold them (the transport's server reads with
// 256 KiB), it waits for them there and then copies them out; else the
// slice starts at readChunk bytes and doubles, up to n, each time it is
// full, so that it is never more than twice what arrived.
func (d *mpReader) readGrowing(n int) ([]byte, error) {
	if n <= d.r.Size() {
		p, err := d.next(n)
		if err != nil {
			return nil, err
		}
		b := make([]byte, n)
		copy(b, p)
		return b, nil
	}
	b := make([]byte, 0, minInt(n, readChunk))
	for len(b) < n {
		if len(b) == cap(b) {
			nb := make([]byte, len(b), minInt(n, 2*cap(b)))
			copy(nb, b)
			b = nb
		}
		m, err := io.ReadFull(d.r, b[len(b):cap(b)])
		b = b[:len(b)+m]
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return b, nil
}

// string reads a string of at most maxFastShort bytes: the error string of
// a response.
func (d *mpReader) string() (string, error) {
	n, _, _, err := d.rawHeaderMax(maxFastShort)
	if err != nil || n == 0 {
		return "", err
	}
	if n <= d.r.Size() {
		b, err := d.next(n)
		return string(b), err
	}
	b, err := d.readGrowing(n)
	return string(b), err
}

// key reads a struct field name. It returns a view of the reader's buffer,
// valid until the next read, or "" with skip set for a name too long to be
// one of ours.
func (d *mpReader) key() (name []byte, err error) {
	n, isNil, _, err := d.rawHeader()
	switch {
	case err != nil:
		return nil, err
	case isNil:
		return nil, d.fail("a nil field name")
	case n > 64:
		return nil, d.discard(n)
	}
	return d.next(n)
}

// containerLen reads an array or map header; isNil for nil.
func (d *mpReader) containerLen(fixMin byte, b16, b32 byte) (n int, isNil bool, err error) {
	bd, err := d.byte1()
	if err != nil {
		return 0, false, err
	}
	var u uint64
	switch {
	case bd == mpNil:
		return 0, true, nil
	case bd >= fixMin && bd <= fixMin+0x0f:
		return int(bd - fixMin), false, nil
	case bd == b16:
		u, err = d.be(2)
	case bd == b32:
		u, err = d.be(4)
	default:
		return 0, false, d.fail("a container expected, found 0x%x", bd)
	}
	if err == nil && u > maxFastLen {
		err = d.fail("length %d", u)
	}
	return int(u), false, err
}

func (d *mpReader) mapLen() (int, bool, error)   { return d.containerLen(0x80, mpMap16, mpMap32) }
func (d *mpReader) arrayLen() (int, bool, error) { return d.containerLen(0x90, mpArray16, mpArray32) }

// skip reads past one value of any type: a field this code does not know,
// from a newer sender.
func (d *mpReader) skip(depth int) error {
	if depth > 32 {
		return d.fail("values nested too deep")
	}
	bd, err := d.r.Peek(1)
	if err != nil {
		return io.ErrUnexpectedEOF
	}
	b := bd[0]
	var n int
	switch {
	case b <= 0x7f, b >= 0xe0, b == mpNil, b == mpFalse, b == mpTrue:
		n = 1
	case b >= mpUint8 && b <= mpUint64:
		n = 1 + 1<<(b-mpUint8)
	case b >= mpInt8 && b <= mpInt64:
		n = 1 + 1<<(b-mpInt8)
	case b == mpFloat32:
		n = 5
	case b == mpFloat64:
		n = 9
	case b >= mpFixExt1 && b <= mpFixExt16:
		n = 2 + 1<<(b-mpFixExt1)
	case b >= mpExt8 && b <= mpExt32:
		d.r.Discard(1)
		l, err := d.be(1 << (b - mpExt8))
		if err != nil {
			return err
		}
		if l > maxFastLen {
			return d.fail("length %d", l)
		}
		return d.discard(int(l) + 1) // the type, then the data
	case b >= 0xa0 && b <= 0xbf, b >= mpStr8 && b <= mpStr32, b >= mpBin8 && b <= mpBin32:
		l, _, _, err := d.rawHeader()
		if err != nil {
			return err
		}
		return d.discard(l)
	case b >= 0x90 && b <= 0x9f, b == mpArray16, b == mpArray32:
		l, _, err := d.arrayLen()
		for i := 0; err == nil && i < l; i++ {
			err = d.skip(depth + 1)
		}
		return err
	case b >= 0x80 && b <= 0x8f, b == mpMap16, b == mpMap32:
		l, _, err := d.mapLen()
		for i := 0; err == nil && i < 2*l; i++ {
			err = d.skip(depth + 1)
		}
		return err
	default:
		return d.fail("type 0x%x", b)
	}
	return d.discard(n)
}

// discard reads past n bytes without keeping them; a cut value is
// io.ErrUnexpectedEOF.
func (d *mpReader) discard(n int) error {
	_, err := d.r.Discard(n)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// time reads a time.Time as go-msgpack's DecodeTime does: nil is the zero
// time; a fixstr holding time.MarshalBinary's bytes (the old format);
// msgpack's timestamp as a string, a binary or the extension.
func (d *mpReader) time() (time.Time, error) {
	var t time.Time
	bd, err := d.r.Peek(1)
	if err != nil {
		return t, io.ErrUnexpectedEOF
	}
	var n int
	fix := false
	switch b := bd[0]; {
	case b == mpNil:
		d.r.Discard(1)
		return t, nil
	case b >= 0xa0 && b <= 0xbf, b >= mpStr8 && b <= mpStr32, b >= mpBin8 && b <= mpBin32:
		var isNil bool
		if n, isNil, fix, err = d.rawHeader(); err != nil || isNil {
			return t, err
		}
	case b == mpFixExt4, b == mpFixExt8:
		h, err := d.next(2)
		if err != nil {
			return t, err
		}
		if h[1] != mpTimeExtTag {
			return t, d.fail("extension type 0x%x for a time", h[1])
		}
		n = 4
		if b == mpFixExt8 {
			n = 8
		}
	case b == mpExt8:
		h, err := d.next(3)
		if err != nil {
			return t, err
		}
		if h[1] != 12 || h[2] != mpTimeExtTag {
			return t, d.fail("extension 0x%x 0x%x for a time", h[1], h[2])
		}
		n = 12
	default:
		return t, d.fail("a time expected, found 0x%x", b)
	}
	if n > 64 {
		return t, d.fail("a time of %d bytes", n)
	}
	bs, err := d.next(n)
	if err != nil {
		return t, err
	}
	if fix && t.UnmarshalBinary(bs) == nil {
		return t, nil
	}
	switch n {
	case 4:
		return time.Unix(int64(binary.BigEndian.Uint32(bs)), 0).UTC(), nil
	case 8:
		v := binary.BigEndian.Uint64(bs)
		return time.Unix(int64(v&0x00000003ffffffff), int64(v>>34)).UTC(), nil
	case 12:
		nsec := binary.BigEndian.Uint32(bs[:4])
		sec := binary.BigEndian.Uint64(bs[4:])
		return time.Unix(int64(sec), int64(nsec)).UTC(), nil
	}
	return t, d.fail("a time of %d bytes", n)
}

// readLog reads one entry of an AppendEntries request into l: nil or a map.
func (d *mpReader) readLog(l *Log) (*Log, error) {
	n, isNil, err := d.mapLen()
	if err != nil || isNil {
		return nil, err
	}
	// k is a view of the reader's buffer, which the value's read may move:
	// errors name the field by the constant it matched, or by a copy.
	var kb [64]byte
	for i := 0; i < n; i++ {
		k, err := d.key()
		if err != nil {
			return nil, err
		}
		name, kn := "", 0
		switch string(k) {
		case "AppendedAt":
			name = "AppendedAt"
			l.AppendedAt, err = d.time()
		case "Data":
			name = "Data"
			l.Data, err = d.raw(true)
		case "Extensions":
			name = "Extensions"
			l.Extensions, err = d.raw(true)
		case "Index":
			name = "Index"
			l.Index, err = d.uint(64)
		case "Term":
			name = "Term"
			l.Term, err = d.uint(64)
		case "Type":
			name = "Type"
			var v uint64
			v, err = d.uint(8)
			l.Type = LogType(v)
		default:
			kn = copy(kb[:], k)
			err = d.skip(0)
		}
		if err != nil {
			if name == "" {
				name = string(kb[:kn])
			}
			return nil, fmt.Errorf("log field %q: %w", name, err)
		}
	}
	return l, nil
}

// readAppendEntriesRequest reads an AppendEntries request as go-msgpack's
// Decode(req) would into a zero req.
func readAppendEntriesRequest(r *bufio.Reader, req *AppendEntriesRequest) error {
	d := mpReader{r: r}
	n, isNil, err := d.mapLen()
	if err != nil {
		return err
	}
	if isNil {
		return nil
	}
	var kb [64]byte // a field name, for errors
	for i := 0; i < n; i++ {
		k, err := d.key()
		kn := copy(kb[:], k) // k is a view of the reader's buffer, which the value's read may move
		if err != nil {
			return err
		}
		switch string(k) {
		case "Addr":
			req.Addr, err = d.raw(false)
		case "Entries":
			var m int
			if m, isNil, err = d.arrayLen(); err != nil || isNil {
				break
			}
			if m > maxFastEntries {
				err = d.fail("%d entries, over %d", m, maxFastEntries)
				break
			}
			// The entries share allocations, as they share a lifetime; at
			// most maxEntriesChunk at a time, so that a corrupt count
			// costs no more.
			req.Entries = make([]*Log, 0, minInt(m, maxEntriesChunk))
			var logs []Log
			for j := 0; j < m; j++ {
				if len(logs) == 0 {
					logs = make([]Log, minInt(m-j, maxEntriesChunk))
				}
				var l *Log
				d.left = m - j
				if l, err = d.readLog(&logs[0]); err != nil {
					break
				}
				if l != nil {
					logs = logs[1:]
				}
				req.Entries = append(req.Entries, l)
			}
		case "ID":
			req.ID, err = d.raw(false)
		case "Leader":
			req.Leader, err = d.raw(false)
		case "LeaderCommitIndex":
			req.LeaderCommitIndex, err = d.uint(64)
		case "PrevLogEntry":
			req.PrevLogEntry, err = d.uint(64)
		case "PrevLogTerm":
			req.PrevLogTerm, err = d.uint(64)
		case "ProtocolVersion":
			var v int64
			v, err = d.int()
			req.ProtocolVersion = ProtocolVersion(v)
		case "Term":
			req.Term, err = d.uint(64)
		default:
			err = d.skip(0)
		}
		if err != nil {
			return fmt.Errorf("AppendEntriesRequest field %q: %w", string(kb[:kn]), err)
		}
	}
	return nil
}

// readAppendEntriesResponse reads the error string and the response that
// writeAppendEntriesResponse (or handleCommand's two Encode calls) wrote.
func readAppendEntriesResponse(r *bufio.Reader, resp *AppendEntriesResponse) (rpcErr string, err error) {
	d := mpReader{r: r}
	if rpcErr, err = d.string(); err != nil {
		return "", err
	}
	n, isNil, err := d.mapLen()
	if err != nil || isNil {
		return rpcErr, err
	}
	var kb [64]byte // a field name, for errors
	for i := 0; i < n; i++ {
		k, err := d.key()
		kn := copy(kb[:], k) // k is a view of the reader's buffer, which the value's read may move
		if err != nil {
			return "", err
		}
		switch string(k) {
		case "Addr":
			resp.Addr, err = d.raw(false)
		case "ID":
			resp.ID, err = d.raw(false)
		case "LastLog":
			resp.LastLog, err = d.uint(64)
		case "NoRetryBackoff":
			resp.NoRetryBackoff, err = d.bool()
		case "ProtocolVersion":
			var v int64
			v, err = d.int()
			resp.ProtocolVersion = ProtocolVersion(v)
		case "Success":
			resp.Success, err = d.bool()
		case "Term":
			resp.Term, err = d.uint(64)
		default:
			err = d.skip(0)
		}
		if err != nil {
			return "", fmt.Errorf("AppendEntriesResponse field %q: %w", string(kb[:kn]), err)
		}
	}
	return rpcErr, nil
}

func minInt(a, b int) int {
	if a < b {
		return a
	}
	return b
}
