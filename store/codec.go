package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"time"

	"github.com/txlog/txlog/txid"
)

// The encodings in this file are part of the on-disk and on-wire formats: the same
// bytes go into the WAL, Redis and the Raft log. Each starts with a version byte so
// that it can evolve; a decoder rejects versions it does not know.
//
// Notation in the diagrams: (n) is a field of n bytes, big-endian for integers;
// (uv) is an unsigned varint (encoding/binary Uvarint); (v) is a signed zig-zag
// varint (encoding/binary Varint). Varints must be minimal: an overlong varint is
// rejected, so that every value has exactly one encoding and decode→encode gives
// back the input bytes.

// codecVersion is the version byte of every encoding in this file.
const codecVersion = 1

// Op flag bits: opFlagIfVersion says that IfVersion follows, opFlagReset
// that an OpCommitOffset has Reset.
const (
	opFlagIfVersion = 1 << 0
	opFlagReset     = 1 << 1
)

// Node field limits checked by DecodeNode.
const maxNodeFieldBytes = 1024

// minOpBytes is the smallest encoding of an op: kind, flags, key length, one key byte.
const minOpBytes = 4

// EncodeTx encodes a transaction. These bytes go unchanged into the WAL, Redis and
// (inside a Command) the Raft log. EncodeTx does not validate tx: DecodeTx does, so
// a tx beyond the limits (MaxOps and the rest) encodes but does not decode.
//
//	+---------+----------+--------------+-----------+-----------+--------+-----+----------+
//	| ver (1) | txid (8) | idemLen (uv) | idem key  | nOps (uv) | op 0   | ... | op n-1   |
//	+---------+----------+--------------+-----------+-----------+--------+-----+----------+
//
// Each op:
//
//	+----------+-----------+-------------+------+------------------+-------------+-------+
//	| kind (1) | flags (1) | keyLen (uv) | key  | [ifVersion (uv)] | [valLen (uv)| value]|
//	+----------+-----------+-------------+------+------------------+-------------+-------+
//
// flags bit 0 says that ifVersion is present; the other bits are zero. valLen and
// value are present for a put (OpPut) and absent for a delete (OpDelete).
//
// An OpCommitOffset has the group as its key, no ifVersion, flags bit 1 for
// Reset, and the offset in place of the value:
//
//	+-------+-----------+---------------+-------+-------------+
//	| 3 (1) | flags (1) | groupLen (uv) | group | offset (uv) |
//	+-------+-----------+---------------+-------+-------------+
//
// A transaction with a Fence is of version 2 (txVersionFence), with the fence
// after the idempotency key:
//
//	+---------+----------+--------------+-----------+---------------+-------+------------+-----------+-----+
//	| 2 (1)   | txid (8) | idemLen (uv) | idem key  | leaseLen (uv) | lease | token (uv) | nOps (uv) | ... |
//	+---------+----------+--------------+-----------+---------------+-------+------------+-----------+-----+
//
// A transaction with a Notify url is of version 3 (txVersionExt): after the
// idempotency key a flags byte (bit 0: a fence follows, bit 1: the url
// follows as urlLen (uv) | url), then the ops as in version 1.
//
// A transaction with neither keeps version 1, byte for byte.
func EncodeTx(tx Tx) []byte {
	n := 1 + 8 + binary.MaxVarintLen64 + len(tx.IdempotencyKey) + binary.MaxVarintLen64
	for _, op := range tx.Ops {
		n += 2 + 3*binary.MaxVarintLen64 + len(op.Key) + len(op.Value)
	}
	ver := byte(codecVersion)
	if tx.Fence != nil {
		n += 2*binary.MaxVarintLen64 + len(tx.Fence.Lease)
		ver = txVersionFence
	}
	var ext byte
	if tx.Notify != "" {
		n += 1 + binary.MaxVarintLen64 + len(tx.Notify)
		ver, ext = txVersionExt, txExtNotify
		if tx.Fence != nil {
			ext |= txExtFence
		}
	}
	b := make([]byte, 0, n)
	b = append(b, ver)
	b = binary.BigEndian.AppendUint64(b, uint64(tx.ID))
	b = appendString(b, tx.IdempotencyKey)
	if ver == txVersionExt {
		b = append(b, ext)
	}
	if tx.Fence != nil {
		b = appendString(b, tx.Fence.Lease)
		b = binary.AppendUvarint(b, tx.Fence.Token)
	}
	if ext&txExtNotify != 0 {
		b = appendString(b, tx.Notify)
	}
	b = binary.AppendUvarint(b, uint64(len(tx.Ops)))
	for _, op := range tx.Ops {
		var flags byte
		if op.HasIfVersion {
			flags |= opFlagIfVersion
		}
		if op.Reset {
			flags |= opFlagReset
		}
		b = append(b, byte(op.Kind), flags)
		b = appendString(b, op.Key)
		if op.HasIfVersion {
			b = binary.AppendUvarint(b, op.IfVersion)
		}
		switch op.Kind {
		case OpPut:
			b = appendBytes(b, op.Value)
		case OpCommitOffset:
			b = binary.AppendUvarint(b, op.Offset)
		}
	}
	return b
}

// txVersionFence is the version byte of EncodeTx bytes with a Fence.
const txVersionFence = 2

// txVersionExt is the version byte of EncodeTx bytes with a flags byte after
// the idempotency key, for a transaction with a Notify url.
const txVersionExt = 3

// The flags of txVersionExt bytes.
const (
	txExtFence  = 1 << 0 // a fence follows
	txExtNotify = 1 << 1 // a notify url follows
)

// MaxNotifyURLBytes bounds a transaction's Notify url.
const MaxNotifyURLBytes = 2048

// txHeaderBytes is the length of the version and txid that start EncodeTx bytes.
const txHeaderBytes = 1 + 8

// SameTx reports whether EncodeTx bytes a and b are the same transaction under
// two txids: equal but for the txid, that is the same idempotency key and the
// same ops in the same order, each with the same kind, key, if_version and
// value, byte for byte (a value's JSON as stored: the API compacts it). Every
// transaction has exactly one encoding (codec.go: minimal varints), so this is
// equality of everything that decides the outcome, and of nothing else: the
// txid and the leader's time are not in it, nor are a request's ack level and
// timeout, which change the answer, never the outcome. It reads no more than
// the two slices and allocates nothing.
func SameTx(a, b []byte) bool {
	return len(a) >= txHeaderBytes && len(b) >= txHeaderBytes && a[0] == b[0] &&
		bytes.Equal(a[txHeaderBytes:], b[txHeaderBytes:])
}

// WithTxID returns a copy of EncodeTx bytes b with txid id in place of
// theirs: the same transaction under another txid (SameTx). b must be at least
// a transaction's header; WithTxID checks nothing else.
func WithTxID(b []byte, id txid.ID) []byte {
	out := bytes.Clone(b)
	binary.BigEndian.PutUint64(out[1:txHeaderBytes], uint64(id))
	return out
}

// DecodeTx decodes EncodeTx bytes; bad input gives an error wrapping ErrCorrupt.
// It checks the limits MaxOps, MaxKeyBytes and MaxIdempotencyKeyBytes, and that the
// txid is not zero. The returned Tx does not alias b. A put's Value is never nil; a
// delete's is.
func DecodeTx(b []byte) (Tx, error) {
	b = bytes.Clone(b) // one copy that the op values alias, and the kv overlay keeps (applier.write)
	return decodeTx(b, true)
}

// CheckTx checks EncodeTx bytes as DecodeTx does, with the same errors, and
// returns their txid, without building the Tx: it copies and allocates
// nothing. A leader checks a transaction another node forwards with it, and
// decodes it once, in Apply.
func CheckTx(b []byte) (txid.ID, error) {
	tx, err := decodeTx(b, false)
	return tx.ID, err
}

// decodeTx is DecodeTx without the copy; with build false it only checks b,
// and the Tx it returns has the txid alone.
func decodeTx(b []byte, build bool) (Tx, error) {
	d := decoder{what: "tx", b: b}
	tx, ver := decodeTxHeader(&d, build)
	ext := byte(0)
	switch ver {
	case txVersionFence:
		ext = txExtFence
	case txVersionExt:
		ext = d.u8("ext flags")
		if d.err == nil && (ext&^(txExtFence|txExtNotify) != 0 || ext&txExtNotify == 0) {
			d.fail("bad ext flags %#x", ext)
		}
	}
	if ext&txExtFence != 0 {
		lease := d.bytes("fence lease", MaxKeyBytes)
		if d.err == nil && len(lease) == 0 {
			d.fail("empty fence lease")
		}
		token := d.uvarint("fence token")
		if d.err == nil && token == 0 {
			d.fail("zero fence token")
		}
		if build {
			tx.Fence = &Fence{Lease: string(lease), Token: token}
		}
	}
	if ext&txExtNotify != 0 {
		url := d.bytes("notify url", MaxNotifyURLBytes)
		if d.err == nil && len(url) == 0 {
			d.fail("empty notify url")
		}
		if build {
			tx.Notify = string(url)
		}
	}
	n := d.uvarint("op count")
	if d.err == nil && n > MaxOps {
		d.fail("op count %d over %d", n, MaxOps)
	}
	if d.err == nil && n > uint64(len(d.b)/minOpBytes) {
		d.fail("op count %d too large for %d bytes left", n, len(d.b))
	}
	if d.err != nil {
		return Tx{}, d.err
	}
	if n > 0 && build {
		tx.Ops = make([]Op, 0, n)
	}
	for i := uint64(0); i < n && d.err == nil; i++ {
		op := decodeOp(&d, build)
		if build {
			tx.Ops = append(tx.Ops, op)
		}
	}
	if err := d.finish(); err != nil {
		return Tx{}, err
	}
	return tx, nil
}

// decodeTxHeader decodes the version, txid and idempotency key of a Tx; what
// follows depends on the version it returns (1 or txVersionFence). With build
// false it checks the idempotency key and leaves it out.
func decodeTxHeader(d *decoder, build bool) (Tx, byte) {
	ver := d.u8("version")
	if d.err == nil && ver != codecVersion && ver != txVersionFence && ver != txVersionExt {
		d.fail("unknown version %d", ver)
	}
	id := txid.ID(d.u64("txid"))
	if d.err == nil && id == 0 {
		d.fail("zero txid")
	}
	idem := d.bytes("idempotency key", MaxIdempotencyKeyBytes)
	if !build {
		return Tx{ID: id}, ver
	}
	return Tx{ID: id, IdempotencyKey: string(idem)}, ver
}

// decodeOp decodes one op; with build false it checks it and returns only its
// kind.
func decodeOp(d *decoder, build bool) Op {
	var op Op
	op.Kind = OpKind(d.u8("op kind"))
	flags := d.u8("op flags")
	if d.err != nil {
		return Op{}
	}
	if op.Kind == OpCommitOffset {
		return decodeOffsetOp(d, flags, build)
	}
	if op.Kind != OpPut && op.Kind != OpDelete {
		d.fail("unknown op kind %d", op.Kind)
		return Op{}
	}
	if flags&^opFlagIfVersion != 0 {
		d.fail("unknown op flags %#x", flags)
		return Op{}
	}
	key := d.bytes("key", MaxKeyBytes)
	if d.err == nil && len(key) == 0 {
		d.fail("empty key")
	}
	if build {
		op.Key = string(key)
	}
	if flags&opFlagIfVersion != 0 {
		op.HasIfVersion = true
		op.IfVersion = d.uvarint("if_version")
	}
	if op.Kind == OpPut {
		op.Value = d.bytes("value", len(d.b))
	}
	return op
}

// decodeOffsetOp decodes the rest of an OpCommitOffset: a group by the rules
// of a key, no if_version, and an offset that is not 0 unless Reset is set.
func decodeOffsetOp(d *decoder, flags byte, build bool) Op {
	if flags&^opFlagReset != 0 {
		d.fail("commit_offset op flags %#x", flags)
		return Op{}
	}
	group := d.bytes("group", MaxKeyBytes)
	if d.err == nil && len(group) == 0 {
		d.fail("empty group")
	}
	op := Op{Kind: OpCommitOffset, Reset: flags&opFlagReset != 0, Offset: d.uvarint("offset")}
	if d.err == nil && op.Offset == 0 && !op.Reset {
		d.fail("commit_offset of group %q: offset 0 without reset", group)
	}
	if build {
		op.Key = string(group)
	}
	return op
}

// EncodeNode encodes a NodeInfo.
//
//	+---------+-----------+----+-----------------+----------+-----------------+----------+--------------+
//	| ver (1) | idLen (uv)| id | httpAddrLen (uv)| httpAddr | raftAddrLen (uv)| raftAddr | txidNode (2) |
//	+---------+-----------+----+-----------------+----------+-----------------+----------+--------------+
func EncodeNode(n NodeInfo) []byte {
	b := make([]byte, 0, 1+3*binary.MaxVarintLen64+len(n.ID)+len(n.HTTPAddr)+len(n.RaftAddr)+2)
	b = append(b, codecVersion)
	b = appendString(b, n.ID)
	b = appendString(b, n.HTTPAddr)
	b = appendString(b, n.RaftAddr)
	b = binary.BigEndian.AppendUint16(b, n.TxIDNode)
	return b
}

// DecodeNode decodes EncodeNode bytes; bad input gives an error wrapping
// ErrCorrupt. The ID must not be empty, each string is at most 1024 bytes and
// TxIDNode is at most txid.MaxNode.
func DecodeNode(b []byte) (NodeInfo, error) {
	d := decoder{what: "node", b: b}
	d.version()
	var n NodeInfo
	n.ID = string(d.bytes("id", maxNodeFieldBytes))
	if d.err == nil && n.ID == "" {
		d.fail("empty id")
	}
	n.HTTPAddr = string(d.bytes("http addr", maxNodeFieldBytes))
	n.RaftAddr = string(d.bytes("raft addr", maxNodeFieldBytes))
	n.TxIDNode = d.u16("txid node")
	if d.err == nil && n.TxIDNode > txid.MaxNode {
		d.fail("txid node %d over %d", n.TxIDNode, txid.MaxNode)
	}
	if err := d.finish(); err != nil {
		return NodeInfo{}, err
	}
	return n, nil
}

// EncodeCommand encodes a command: a small header followed by the payload as is.
//
//	+---------+----------+----------+------------------+---------------------------+
//	| ver (1) | kind (1) | time (8) | dedupWindow (v)  | payload (rest of input)   |
//	+---------+----------+----------+------------------+---------------------------+
//
// time is Command.Time as a two's complement int64; dedupWindow is in nanoseconds.
func EncodeCommand(c Command) []byte {
	b := make([]byte, 0, 1+1+8+binary.MaxVarintLen64+len(c.Payload))
	b = append(b, codecVersion, byte(c.Kind))
	b = binary.BigEndian.AppendUint64(b, uint64(c.Time))
	b = binary.AppendVarint(b, int64(c.DedupWindow))
	return append(b, c.Payload...)
}

// DecodeCommand decodes EncodeCommand bytes; bad input, including an unknown
// kind, gives an error wrapping ErrCorrupt. The payload aliases b and is not
// decoded: DecodeTx or DecodeNode does that.
func DecodeCommand(b []byte) (Command, error) {
	d := decoder{what: "command", b: b}
	d.version()
	var c Command
	c.Kind = CommandKind(d.u8("kind"))
	if d.err == nil && c.Kind != KindTx && c.Kind != KindRegisterNode && c.Kind != KindLease && c.Kind != KindNotifyDone {
		d.fail("unknown kind %d", c.Kind)
	}
	c.Time = int64(d.u64("time"))
	c.DedupWindow = time.Duration(d.varint("dedup window"))
	c.Payload = d.rest()
	if err := d.finish(); err != nil {
		return Command{}, err
	}
	return c, nil
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// uvarintLen returns the length of the minimal uvarint encoding of v.
func uvarintLen(v uint64) int {
	if v == 0 {
		return 1
	}
	return (bits.Len64(v) + 6) / 7
}

// decoder reads fields from the front of b. The first problem sets err, wrapping
// ErrCorrupt, and every later read returns a zero value, so callers check err once
// at the end. No read allocates; bytes returns a subslice only after checking the
// claimed length against what is left.
type decoder struct {
	what string // what is being decoded, for errors
	key  string // if set, errors say "what key": built only on error
	b    []byte // the input not read yet
	off  int    // offset of b in the whole input
	err  error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		what := d.what
		if d.key != "" {
			what += " " + d.key
		}
		d.err = fmt.Errorf("%w: %s at offset %d: %s", ErrCorrupt, what, d.off, fmt.Sprintf(format, args...))
	}
}

func (d *decoder) take(field string, n int) []byte {
	if d.err != nil {
		return nil
	}
	if n > len(d.b) {
		d.fail("%s: need %d bytes, have %d", field, n, len(d.b))
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	d.off += n
	return v
}

func (d *decoder) version() {
	if v := d.u8("version"); d.err == nil && v != codecVersion {
		d.fail("unknown version %d", v)
	}
}

func (d *decoder) u8(field string) byte {
	if v := d.take(field, 1); v != nil {
		return v[0]
	}
	return 0
}

func (d *decoder) u16(field string) uint16 {
	if v := d.take(field, 2); v != nil {
		return binary.BigEndian.Uint16(v)
	}
	return 0
}

func (d *decoder) u64(field string) uint64 {
	if v := d.take(field, 8); v != nil {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

func (d *decoder) uvarint(field string) uint64 { return d.uvarintOf(field, "") }

// uvarintOf reads a uvarint that errors name field+suffix, joined only on
// error.
func (d *decoder) uvarintOf(field, suffix string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	switch {
	case n == 0:
		d.fail("%s%s: truncated varint", field, suffix)
		return 0
	case n < 0:
		d.fail("%s%s: varint overflows 64 bits", field, suffix)
		return 0
	case n != uvarintLen(v):
		d.fail("%s%s: overlong varint", field, suffix)
		return 0
	}
	d.b = d.b[n:]
	d.off += n
	return v
}

func (d *decoder) varint(field string) int64 {
	u := d.uvarint(field)
	v := int64(u >> 1)
	if u&1 != 0 {
		v = ^v
	}
	return v
}

// bytes reads a uvarint length of at most limit and that many bytes.
func (d *decoder) bytes(field string, limit int) []byte {
	n := d.uvarintOf(field, " length")
	if d.err != nil {
		return nil
	}
	if n > uint64(limit) {
		d.fail("%s: length %d over %d", field, n, limit)
		return nil
	}
	return d.take(field, int(n))
}

// rest reads all that is left.
func (d *decoder) rest() []byte {
	return d.take("rest", len(d.b))
}

// finish returns err, or an error if input is left over.
func (d *decoder) finish() error {
	if d.err == nil && len(d.b) > 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
	return d.err
}
