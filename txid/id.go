package txid

import (
	"encoding"
	"errors"
	"fmt"
	"time"
)

// ID is a global transaction ID: 64 bits laid out as
//
//	 63        22 21      12 11        0
//	+------------+----------+-----------+
//	|  ms (42)   | node(10) |  seq (12) |
//	+------------+----------+-----------+
//
// ms counts milliseconds since Epoch, node is the issuing node's number and seq the
// per-millisecond sequence. The zero ID is never issued and means "no ID".
type ID uint64

// Layout of an ID.
const (
	SeqBits  = 12
	NodeBits = 10
	MaxNode  = 1<<NodeBits - 1
	MaxSeq   = 1<<SeqBits - 1
)

// Epoch is the instant an ID's milliseconds count from: 2024-01-01T00:00:00Z.
// 42 bits of milliseconds reach into the year 2163. It is fixed: assigning to
// it changes nothing in this package.
var Epoch = time.UnixMilli(epochMillis).UTC()

// epochMillis is Epoch in Unix milliseconds. It is a constant so that neither
// the hot path nor Time depends on the Epoch variable.
const epochMillis = 1704067200000

// maxMillis is the largest millisecond count an ID can hold.
const maxMillis = 1<<(64-NodeBits-SeqBits) - 1

// StringLen is the length of an ID's text form.
const StringLen = 13

// alphabet is Crockford's base32 alphabet, in ascending ASCII order so that the
// fixed-width text form sorts like the number.
const alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// ErrInvalid is returned (wrapped) by Parse for text that is not an ID.
var ErrInvalid = errors.New("invalid txid")

// Node returns the number of the node that issued id.
func (id ID) Node() uint16 { return uint16(uint64(id)>>SeqBits) & MaxNode }

// Seq returns id's per-millisecond sequence number.
func (id ID) Seq() uint16 { return uint16(uint64(id) & MaxSeq) }

// Millis returns id's milliseconds since Epoch.
func (id ID) Millis() int64 { return int64(uint64(id) >> (SeqBits + NodeBits)) }

// Time returns the instant id was issued, to the millisecond, in UTC.
func (id ID) Time() time.Time { return time.UnixMilli(epochMillis + id.Millis()).UTC() }

// String returns the 13-character Crockford base32 form of id.
func (id ID) String() string {
	var b [StringLen]byte
	v := uint64(id)
	for i := StringLen - 1; i >= 0; i-- {
		b[i] = alphabet[v&31]
		v >>= 5
	}
	return string(b[:])
}

var (
	_ encoding.TextMarshaler   = ID(0)
	_ encoding.TextUnmarshaler = (*ID)(nil)
)

// MarshalText implements encoding.TextMarshaler. The zero ID ("no ID") encodes
// as empty text, so that it survives a round trip through UnmarshalText; every
// other ID encodes as String.
func (id ID) MarshalText() ([]byte, error) {
	if id == 0 {
		return []byte{}, nil
	}
	return []byte(id.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler. Empty text decodes to the
// zero ID; anything else must be accepted by Parse.
func (id *ID) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*id = 0
		return nil
	}
	v, err := Parse(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// Parse parses the text form of an ID. It accepts lower case letters, but no
// other deviation: the length must be StringLen, the value must fit 64 bits and
// must not be zero.
func Parse(s string) (ID, error) {
	if len(s) != StringLen {
		return 0, fmt.Errorf("%w %q: length %d, want %d", ErrInvalid, s, len(s), StringLen)
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		d := decodeDigit(s[i])
		if d < 0 {
			return 0, fmt.Errorf("%w %q: bad character at %d", ErrInvalid, s, i)
		}
		if i == 0 && d > 15 {
			return 0, fmt.Errorf("%w %q: overflows 64 bits", ErrInvalid, s)
		}
		v = v<<5 | uint64(d)
	}
	if v == 0 {
		return 0, fmt.Errorf("%w %q: zero", ErrInvalid, s)
	}
	return ID(v), nil
}

// decodeDigit returns the value of the base32 digit c, either case, or -1.
func decodeDigit(c byte) int {
	d := digitValues[c]
	if d == noDigit {
		return -1
	}
	return int(d)
}

// noDigit marks the bytes that are not base32 digits in digitValues.
const noDigit = 0xFF

// digitValues maps each byte to its base32 value, accepting upper and lower
// case letters, or to noDigit.
var digitValues = func() [256]byte {
	var d [256]byte
	for i := range d {
		d[i] = noDigit
	}
	for i := 0; i < len(alphabet); i++ {
		c := alphabet[i]
		d[c] = byte(i)
		if c >= 'A' && c <= 'Z' {
			d[c+'a'-'A'] = byte(i)
		}
	}
	return d
}()
