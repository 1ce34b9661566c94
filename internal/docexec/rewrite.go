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
	// FourthHTTPPort and FourthRaftPort are the ports of n4, the server
	// docs/api.md joins by hand: the runner starts a fourth txlogd, not a
	// member, before the first example that names either.
	FourthHTTPPort = 8084
	FourthRaftPort = 7104
)

// NamesFourth reports whether e names a port of the fourth node in its URL,
// body or answer.
func NamesFourth(e Example) bool {
	s := e.Host + e.Target + e.Body
	if e.Answer != nil {
		s += string(e.Answer.Body)
	}
	for _, hp := range HostPorts(s) {
		_, p, _ := strings.Cut(hp, ":")
		if p == strconv.Itoa(FourthHTTPPort) || p == strconv.Itoa(FourthRaftPort) {
			return true
		}
	}
	return false
}

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

// indexRef is where a bound Raft index stands in a request or an answer:
// "index":N in an answer, from=N in a log read's query.
var indexRef = regexp.MustCompile(`("index":|\bfrom=)([0-9]+)\b`)

// Substitute replaces in s each doc value of bs with the real one it was
// bound to, all in one pass (a value put in is never replaced again): a txid,
// cluster ID or lease token wherever it stands (a token as a whole number:
// docs give tokens distinct values such as 8123), a Raft index as "index":N
// and from=N. Of two bindings of one doc value, the later one wins.
func Substitute(s string, bs []Binding) string {
	index := map[string]string{} // doc's index -> real one
	whole := map[string]string{} // doc's txid, cluster ID or token -> real one
	var olds []string
	for _, b := range bs {
		doc, got := b.Doc, b.Got
		switch b.Field {
		case "index":
			index[doc] = got
			continue
		case "token":
		default:
			var err1, err2 error
			doc, err1 = strconv.Unquote(b.Doc)
			got, err2 = strconv.Unquote(b.Got)
			if err1 != nil || err2 != nil || doc == "" {
				continue
			}
		}
		if _, ok := whole[doc]; !ok {
			olds = append(olds, `\b`+regexp.QuoteMeta(doc)+`\b`)
		}
		whole[doc] = got
	}
	pats := append([]string{indexRef.String()}, olds...)
	re := regexp.MustCompile(strings.Join(pats, "|"))
	return re.ReplaceAllStringFunc(s, func(m string) string {
		if got, ok := whole[m]; ok {
			return got
		}
		if sm := indexRef.FindStringSubmatch(m); sm != nil {
			if got, ok := index[sm[2]]; ok {
				return sm[1] + got
			}
		}
		return m
	})
}
