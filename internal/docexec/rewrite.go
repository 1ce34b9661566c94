package docexec

import (
	"regexp"
	"strconv"
	"strings"
)

// The ports `txlog local` opens with its defaults, node n1 first: cmd/txlog's
// TestDocsTargets checks them against its flags.
var (
	LocalHTTPPorts = []int{8081, 8082, 8083}
	LocalRaftPorts = []int{7101, 7102, 7103}
)

// hostPort is a loopback host:port as the docs write one.
var hostPort = regexp.MustCompile(`\b(localhost|127\.0\.0\.1):([0-9]{1,5})\b`)

// HostPorts returns the loopback host:ports (localhost or 127.0.0.1) in s,
// in order.
func HostPorts(s string) []string { return hostPort.FindAllString(s, -1) }

// Rewrite replaces each loopback host:port of s whose port is a key of to
// with its value, the real node's host:port.
func Rewrite(s string, to map[int]string) string {
	return hostPort.ReplaceAllStringFunc(s, func(hp string) string {
		_, p, _ := strings.Cut(hp, ":")
		n, _ := strconv.Atoi(p)
		if r, ok := to[n]; ok {
			return r
		}
		return hp
	})
}

// Substitute replaces in s each doc value of bs with the real one it was
// bound to: a txid or cluster ID wherever it stands, a lease token as
// "token":N in a body or answer and token=N in a query.
func Substitute(s string, bs []Binding) string {
	for _, b := range bs {
		if b.Field == "token" {
			s = strings.ReplaceAll(s, `"token":`+b.Doc, `"token":`+b.Got)
			s = strings.ReplaceAll(s, "token="+b.Doc, "token="+b.Got)
			continue
		}
		doc, err1 := strconv.Unquote(b.Doc)
		got, err2 := strconv.Unquote(b.Got)
		if err1 != nil || err2 != nil || doc == "" {
			continue
		}
		s = strings.ReplaceAll(s, doc, got)
	}
	return s
}
