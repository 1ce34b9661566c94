package txid

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// FuzzParse checks that Parse never panics, rejects with ErrInvalid, and that
// every accepted string round-trips through String up to case.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"0000000000001", "FZZZZZZZZZZZZ", "G000000000000", "0000000000000",
		"01hzzzzzzzzzz", "000000000000I", "", "00000000000é", "0000000040803",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := Parse(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse(%q) error %v does not wrap ErrInvalid", s, err)
			}
			return
		}
		if id == 0 {
			t.Fatalf("Parse(%q) = 0 without an error", s)
		}
		if got := id.String(); got != strings.ToUpper(s) {
			t.Fatalf("Parse(%q).String() = %q, want %q", s, got, strings.ToUpper(s))
		}
		var u ID
		if err := u.UnmarshalText([]byte(s)); err != nil || u != id {
			t.Fatalf("UnmarshalText(%q) = %v, %v; want %v", s, u, err, id)
		}
	})
}

// FuzzDecodeMark checks that the high-water mark decoder never panics, that
// it rejects with ErrCorrupt, and that what it accepts is exactly what
// encodeMark writes: a torn or foreign file is refused, never read as a
// lower limit.
func FuzzDecodeMark(f *testing.F) {
	valid := encodeMark(1 << 30)
	f.Add(valid)
	f.Add(valid[:11])
	f.Add(append(slices.Clone(valid), 0))
	f.Add(make([]byte, markSize))
	f.Add(encodeMark(maxMillis + 2))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		limit, err := decodeMark(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decodeMark(%x) error %v does not wrap ErrCorrupt", b, err)
			}
			return
		}
		if enc := encodeMark(limit); !slices.Equal(enc, b) {
			t.Fatalf("decodeMark(%x) = %d, which encodes as %x", b, limit, enc)
		}
	})
}
