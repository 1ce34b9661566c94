package txid

import (
	"errors"
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
