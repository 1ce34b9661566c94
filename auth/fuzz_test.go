package auth

import (
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// render returns c as an auth file.
func render(c *creds) string {
	var b strings.Builder
	for _, tk := range c.tokens {
		b.WriteString(Line(hexOf(tk.hash), tk.p.Role, tk.p.Name, tk.p.Prefixes) + "\n")
	}
	for cn, p := range c.certs {
		b.WriteString(kindCert + cn + strings.TrimPrefix(Line("", p.Role, p.Name, p.Prefixes), kindHash) + "\n")
	}
	return b.String()
}

func hexOf(h [32]byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 64)
	for _, c := range h {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

// FuzzParse: any bytes parse to credentials or to LineErrors, never a
// panic; credentials parsed render to a file that parses to the same.
func FuzzParse(f *testing.F) {
	f.Add([]byte(goodFile()))
	f.Add([]byte("cert:c read n prefix=a/ prefix=b/\n"))
	f.Add([]byte("sha256:" + HashToken("x") + " admin n\r\n# c\n\n"))
	f.Add([]byte("cert:c root n\ncert:c read n\nsha256:AB read m prefix=\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := parse(data)
		if err != nil {
			for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
				var le *LineError
				if !errors.As(e, &le) || le.Line < 1 {
					t.Fatalf("parse() error %v is not a LineError", e)
				}
			}
			return
		}
		again, err := parse([]byte(render(c)))
		if err != nil {
			t.Fatalf("parse(render(parse(data))) = %v", err)
		}
		if !reflect.DeepEqual(c.certs, again.certs) || len(c.tokens) != len(again.tokens) {
			t.Fatalf("round trip: %+v, want %+v", again, c)
		}
		for i := range c.tokens {
			if !reflect.DeepEqual(c.tokens[i], again.tokens[i]) {
				t.Fatalf("round trip token %d: %+v, want %+v", i, again.tokens[i], c.tokens[i])
			}
		}
		for _, tk := range c.tokens {
			for _, p := range tk.p.Prefixes {
				if p == "" || strings.HasPrefix(p, ReservedPrefix) {
					t.Fatalf("prefix %q taken", p)
				}
			}
		}
	})
}

// FuzzAuthorization: any Authorization header on any method is a
// Principal or an unauthenticated error, never a panic; Basic never
// authorizes anything but GET and HEAD; a Principal is one of the file's.
func FuzzAuthorization(f *testing.F) {
	file, err := parse([]byte(goodFile()))
	if err != nil {
		f.Fatal(err)
	}
	a := &File{}
	a.creds.Store(file)
	f.Add("GET", "Bearer "+tokRead)
	f.Add("POST", "Bearer "+tokWrite)
	f.Add("GET", basic("u", tokAdmin))
	f.Add("POST", basic("u", tokAdmin))
	f.Add("GET", "Basic !!")
	f.Add("GET", "bearer  "+tokRead)
	f.Add("GET", "Bearer "+strings.Repeat("x", 2000))
	f.Add("DELETE", "Negotiate abc")
	f.Fuzz(func(t *testing.T, method, header string) {
		r, err := http.NewRequest(http.MethodGet, "http://node/v1/kv/x", nil)
		if err != nil {
			t.Fatal(err)
		}
		r.Method = method
		r.Header.Set("Authorization", header)
		p, err := a.Authenticate(r)
		if err != nil {
			if p != nil || !errors.Is(err, ErrUnauthenticated) {
				t.Fatalf("Authenticate() = %+v, %v", p, err)
			}
			return
		}
		scheme, _, _ := strings.Cut(header, " ")
		if strings.EqualFold(scheme, "Basic") && method != http.MethodGet && method != http.MethodHead {
			t.Fatalf("Basic authorized %s: %+v", method, p)
		}
		if len(header) > MaxAuthorizationBytes {
			t.Fatalf("a header of %d bytes authorized", len(header))
		}
		switch p.Name {
		case "reader", "writer", "admin@ops":
		default:
			t.Fatalf("Authenticate() = %+v, not a token line of the file", p)
		}
	})
}
