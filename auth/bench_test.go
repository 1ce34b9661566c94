package auth

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkAuthenticate is the cost of a bearer token on each request, by
// the number of token lines (each compared, whichever matches).
func BenchmarkAuthenticate(b *testing.B) {
	for _, n := range []int{1, 10, 1000} {
		b.Run(fmt.Sprint("lines=", n), func(b *testing.B) {
			var sb strings.Builder
			for i := range n {
				fmt.Fprintln(&sb, Line(HashToken(fmt.Sprint("tok", i)), RoleWrite, fmt.Sprint("n", i), []string{"a/"}))
			}
			c, err := parse([]byte(sb.String()))
			if err != nil {
				b.Fatal(err)
			}
			f := &File{}
			f.creds.Store(c)
			r := req("POST", "Bearer tok0")
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f.Authenticate(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
