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

// numberRef is where a bound number stands in a request or an answer: a
// lease token in a body or answer and in a query, a Raft index in an answer
// and as a log read's from.
var numberRef = regexp.MustCompile(`("token":|\btoken=|"index":|\bfrom=)([0-9]+)\b`)

// Substitute replaces in s each doc value of bs with the real one it was
// bound to, all in one pass (a value put in is never replaced again): a txid
// or cluster ID wherever it stands, a lease token as "token":N and token=N,
// a Raft index as "index":N and from=N. Of two bindings of one doc value, the
// later one wins.
func Substitute(s string, bs []Binding) string {
	nums := map[string]string{} // "token 8123" -> "17"
	var olds []string
	strs := map[string]string{}
	for _, b := range bs {
		switch b.Field {
		case "token", "index":
			nums[b.Field+" "+b.Doc] = b.Got
			continue
		}
		doc, err1 := strconv.Unquote(b.Doc)
		got, err2 := strconv.Unquote(b.Got)
		if err1 != nil || err2 != nil || doc == "" {
			continue
		}
		if _, ok := strs[doc]; !ok {
			olds = append(olds, regexp.QuoteMeta(doc))
		}
		strs[doc] = got
	}
	pats := []string{numberRef.String()}
	if len(olds) > 0 {
		pats = append(pats, strings.Join(olds, "|"))
	}
	re := regexp.MustCompile(strings.Join(pats, "|"))
	return re.ReplaceAllStringFunc(s, func(m string) string {
		if got, ok := strs[m]; ok {
			return got
		}
		sm := numberRef.FindStringSubmatch(m)
		if sm == nil {
			return m
		}
		field := "index"
		if strings.Contains(sm[1], "token") {
			field = "token"
		}
		if got, ok := nums[field+" "+sm[2]]; ok {
			return sm[1] + got
		}
		return m
	})
}
