package token

import (
	"encoding/base64"
	"strings"
	"testing"
)

func TestNew(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		tok, err := New()
		if err != nil {
			t.Fatal(err)
		}
		raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(tok, Prefix))
		if !strings.HasPrefix(tok, Prefix) || err != nil || len(raw) != 32 || len(tok) != 49 {
			t.Fatalf("New() = %q (%v): want %q and 32 bytes in base64url", tok, err, Prefix)
		}
		if seen[tok] {
			t.Fatalf("New() repeated %q", tok)
		}
		seen[tok] = true
	}
}

func TestHashAndLine(t *testing.T) {
	// sha256("abc"), from FIPS 180-2.
	const abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	if got := Hash("abc"); got != abc {
		t.Fatalf("Hash(abc) = %s, want %s", got, abc)
	}
	if got, want := Line(abc, "read", "ops", []string{"a/", "b/"}), "sha256:"+abc+" read ops prefix=a/ prefix=b/"; got != want {
		t.Fatalf("Line = %q, want %q", got, want)
	}
	if got, want := Line("h", "admin", "root", nil), "sha256:h admin root"; got != want {
		t.Fatalf("Line = %q, want %q", got, want)
	}
}
