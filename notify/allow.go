package notify

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"path"
	"strconv"
	"strings"
)

// ErrNotAllowed is the error of AllowList.Check for a URL the list refuses,
// and of AllowList.CheckConn for a connection the deliverer refuses; the
// error returned wraps it with the reason.
var ErrNotAllowed = errors.New("notify url not allowed")

// MaxURLBytes bounds a callback url.
const MaxURLBytes = 2048

// AllowList is a parsed --webhook-allow: the hosts and ports a callback may
// go to. The nil or empty list allows nothing.
//
// A url is allowed when one pattern matches both its host and its port:
//
//   - A pattern's host is an IP address (IPv4 dotted, IPv6 in brackets), which
//     matches that address exactly (compared as addresses, so [::1] and
//     [0:0::1] are one), or a DNS name, which matches names only. In a name,
//     "*" matches any run of characters within one label (the empty run
//     too, but a label is never empty): "*.example.com"
//     matches a.example.com but neither example.com nor a.b.example.com, and
//     "hook-*.example.com" matches hook-1.example.com. An IP address has no
//     wildcard: name each one.
//   - A pattern's port is a number, which matches that port; "*", which
//     matches every port; or absent, which matches only the default port of
//     the url's scheme (80 for http, 443 for https).
//
// A url naming an IP address is matched by IP patterns only; a host that is
// neither an IP address nor a well-formed DNS name (for example 2130706433 or
// 0x7f.1, which some resolvers read as 127.0.0.1) is refused.
//
// The deliverer checks the address it actually connects to as well
// (CheckConn): see Class for the addresses a pattern must name.
type AllowList struct {
	pats []pattern
}

// portDefault and portAny are the pattern ports that are not a number.
const (
	portDefault = 0  // no port in the pattern: the scheme's default
	portAny     = -1 // "*"
)

// pattern is one entry of an AllowList: ip is valid for an IP pattern, else
// labels holds the name's labels (lower case, "*" a wildcard within one).
type pattern struct {
	ip     netip.Addr
	labels []string
	port   int // 1-65535, portDefault or portAny
}

// ParseAllowList parses a comma-separated list of host or host:port patterns
// (see AllowList), for example "hooks.example.com,10.0.0.5:8080,[::1]:9000".
// An empty string gives an empty list.
func ParseAllowList(s string) (*AllowList, error) {
	l := &AllowList{}
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		pat, err := parsePattern(p)
		if err != nil {
			return nil, fmt.Errorf("webhook allow pattern %q: %w", p, err)
		}
		l.pats = append(l.pats, pat)
	}
	return l, nil
}

func parsePattern(p string) (pattern, error) {
	host, port := p, ""
	switch {
	case strings.HasPrefix(p, "[") && strings.HasSuffix(p, "]"):
		host = p[1 : len(p)-1]
	case strings.HasPrefix(p, "[") || strings.Count(p, ":") == 1:
		var err error
		if host, port, err = net.SplitHostPort(p); err != nil {
			return pattern{}, err
		}
		if port == "" {
			return pattern{}, errors.New("empty port")
		}
	case strings.Contains(p, ":"):
		return pattern{}, errors.New("an IPv6 address goes in brackets: [::1]:9000")
	}
	pat := pattern{port: portDefault}
	switch {
	case port == "*":
		pat.port = portAny
	case port != "":
		n, ok := parsePort(port)
		if !ok {
			return pattern{}, fmt.Errorf("port %q: want 1-65535 or *", port)
		}
		pat.port = n
	}
	bracketed := strings.HasPrefix(p, "[")
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return pattern{}, errors.New("an IPv6 zone is not allowed")
		}
		if a.Is6() && !bracketed {
			return pattern{}, errors.New("an IPv6 address goes in brackets: [::1]:9000")
		}
		pat.ip = a.Unmap()
		return pat, nil
	}
	if bracketed {
		return pattern{}, fmt.Errorf("%q is not an IPv6 address", host)
	}
	labels, err := nameLabels(strings.ToLower(host), true)
	if err != nil {
		return pattern{}, err
	}
	pat.labels = labels
	return pat, nil
}

// parsePort parses a decimal port 1-65535.
func parsePort(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	return n, true
}

// nameLabels splits a lower-case DNS name into its labels: each non-empty,
// of letters, digits, '-' and '_' (and '*' when wild), the last neither all
// digits nor hex (a number that is not an IP address is not a name), and not
// all digits and wildcards (10.0.0.*: a wildcard in an IP address).
func nameLabels(host string, wild bool) ([]string, error) {
	labels := strings.Split(host, ".")
	for _, lb := range labels {
		if lb == "" {
			return nil, fmt.Errorf("host %q: empty label", host)
		}
		for _, c := range lb {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || wild && c == '*') {
				return nil, fmt.Errorf("host %q: want an IP address or a DNS name (letters, digits, '-', '_'; * a wildcard in a pattern)", host)
			}
		}
	}
	last := labels[len(labels)-1]
	ipLike, digits := true, false // every label digits or "*", one digits: 10.0.0.*
	for _, lb := range labels {
		d := strings.Trim(lb, "0123456789") == ""
		digits = digits || d
		ipLike = ipLike && (d || strings.Trim(lb, "0123456789*") == "")
	}
	if strings.Trim(last, "0123456789") == "" || strings.HasPrefix(last, "0x") || ipLike && digits {
		return nil, fmt.Errorf("host %q: neither an IP address nor a DNS name (a wildcard does not apply to an IP address: name each one)", host)
	}
	return labels, nil
}

// Empty reports whether the list allows nothing.
func (l *AllowList) Empty() bool { return l == nil || len(l.pats) == 0 }

// Check returns nil if raw is an absolute http or https URL with a host and
// port the list allows, and an error wrapping ErrNotAllowed saying why not
// otherwise. It does no network I/O.
func (l *AllowList) Check(raw string) error {
	_, err := l.check(raw)
	return err
}

// check is Check, which also returns the url's destination, "host:port"
// with the port always given: what the deliverer keeps fair.
func (l *AllowList) check(raw string) (string, error) {
	if l.Empty() {
		return "", fmt.Errorf("%w: no --webhook-allow list is set on this node", ErrNotAllowed)
	}
	if len(raw) > MaxURLBytes {
		return "", fmt.Errorf("%w: longer than %d bytes", ErrNotAllowed, MaxURLBytes)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrNotAllowed, err)
	}
	def, ok := defaultPort[u.Scheme]
	if !ok {
		return "", fmt.Errorf("%w: scheme must be http or https", ErrNotAllowed)
	}
	if u.User != nil {
		return "", fmt.Errorf("%w: user info is not allowed", ErrNotAllowed)
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return "", fmt.Errorf("%w: no host", ErrNotAllowed)
	}
	port := def
	if s := u.Port(); s != "" {
		if port, ok = parsePort(s); !ok {
			return "", fmt.Errorf("%w: port %q", ErrNotAllowed, s)
		}
	}
	dest := net.JoinHostPort(host, strconv.Itoa(port))
	var labels []string
	ip, err := netip.ParseAddr(host)
	switch {
	case err == nil && ip.Zone() != "":
		return "", fmt.Errorf("%w: an IPv6 zone is not allowed", ErrNotAllowed)
	case err == nil:
		ip = ip.Unmap()
	default:
		if labels, err = nameLabels(host, false); err != nil {
			return "", fmt.Errorf("%w: %v", ErrNotAllowed, err)
		}
	}
	for _, p := range l.pats {
		if p.matchPort(port, def) && (ip.IsValid() && p.ip == ip || labels != nil && p.matchName(labels)) {
			return dest, nil
		}
	}
	return "", fmt.Errorf("%w: %s is not in --webhook-allow", ErrNotAllowed, dest)
}

// defaultPort is the port of a url without one, by scheme; the only schemes
// allowed.
var defaultPort = map[string]int{"http": 80, "https": 443}

// matchPort reports whether the pattern admits port for a scheme whose
// default port is def.
func (p pattern) matchPort(port, def int) bool {
	switch p.port {
	case portAny:
		return true
	case portDefault:
		return port == def
	}
	return port == p.port
}

// matchName reports whether the name pattern p matches a name's labels.
// path.Match's "*" matches any run of characters but '/', and neither a
// label nor a pattern holds '/' or another metacharacter (nameLabels), so a
// label's "*" matches any run within it.
func (p pattern) matchName(labels []string) bool {
	if len(p.labels) != len(labels) {
		return false
	}
	for i, pl := range p.labels {
		if ok, err := path.Match(pl, labels[i]); err != nil || !ok {
			return false
		}
	}
	return true
}
