package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/txlog/txlog/api/wire"
)

// TestCheckValue feeds CheckValue the values a client could not have
// written, and some it could, and sees each refused with its code or taken.
func TestCheckValue(t *testing.T) {
	cases := []struct {
		name, v string
		code    string // "" passes
	}{
		{"object", `{"a":[1,2.5e3,"x",true,null]}`, ""},
		{"string with escapes", `"\u00e9\n\udc00"`, ""}, // a lone surrogate escape is kept, as the body decoders keep it
		{"deeper than the fast path", strings.Repeat("[", 150) + strings.Repeat("]", 150), ""},
		{"at the limit", `"` + strings.Repeat("v", 14) + `"`, ""},
		{"empty", ``, wire.CodeInvalidJSON},
		{"not JSON", `{oops`, wire.CodeInvalidJSON},
		{"two values", `1 2`, wire.CodeInvalidJSON},
		{"leading space", ` 1`, wire.CodeInvalidJSON},
		{"inner space", `{"a": 1}`, wire.CodeInvalidJSON},
		{"deep with space", strings.Repeat("[", 150) + " " + strings.Repeat("]", 150), wire.CodeInvalidJSON},
		{"bad UTF-8", "\"\xff\"", wire.CodeInvalidUTF8},
		{"over the limit", `"` + strings.Repeat("v", 15) + `"`, wire.CodeInvalidTx},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckValue([]byte(tc.v), "ops[0].value", 400)
			if tc.name == "at the limit" || tc.name == "over the limit" {
				err = CheckValue([]byte(tc.v), "ops[0].value", 16)
			}
			if tc.code == "" {
				if err != nil {
					t.Fatalf("CheckValue(%q) = %v, want nil", tc.v, err)
				}
				return
			}
			var we *wire.Error
			if !errors.As(err, &we) || we.Code != tc.code || !strings.HasPrefix(we.Message, "ops[0].value") {
				t.Fatalf("CheckValue(%q) = %v, want %s naming ops[0].value", tc.v, err, tc.code)
			}
		})
	}
}

// FuzzCheckValue checks that CheckValue takes exactly the values the body
// decoders store: valid UTF-8, one JSON value, compact, within the limit.
func FuzzCheckValue(f *testing.F) {
	for _, s := range []string{`1`, `{"a":1}`, `{"a": 1}`, `[1,2`, "\"\xff\"", `"\udc00"`, `nul`, `-0.5e+3`, `[[[]]]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		const max = 256
		err := CheckValue(v, "v", max)
		var buf bytes.Buffer
		want := len(v) <= max && utf8.Valid(v) && json.Valid(v) && json.Compact(&buf, v) == nil && bytes.Equal(buf.Bytes(), v)
		if (err == nil) != want {
			t.Fatalf("CheckValue(%q) = %v; want accepted %v", v, err, want)
		}
		if err != nil {
			if _, ok := errors.AsType[*wire.Error](err); !ok {
				t.Fatalf("CheckValue(%q) = %v (%T), want a *wire.Error", v, err, err)
			}
		}
	})
}
