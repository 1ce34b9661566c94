package notify

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path"
	"strings"
)

// ErrNotAllowed is the error of AllowList.Check for a URL the list refuses;
// the error returned wraps it with the reason.
var ErrNotAllowed = errors.New("notify url not allowed")

// MaxURLBytes bounds a callback url.
const MaxURLBytes = 2048

// AllowList is a parsed --webhook-allow: the hosts a callback may go to. The
// nil or empty list allows nothing.
type AllowList struct {
	pats []pattern
}

// pattern is one entry: a host glob and, if given, a port glob. "*" matches
// any run of characters; nothing else is special.
type pattern struct {
	host string
	port string // "" matches any port
}

// ParseAllowList parses a comma-separated list of host or host:port patterns,
// "*" a wildcard, for example "127.0.0.1:*,hooks.example.com". A pattern
// without a port matches every port. An empty string gives an empty list.
func ParseAllowList(s string) (*AllowList, error) {
	l := &AllowList{}
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		host, port := p, ""
		if strings.HasPrefix(p, "[") || strings.Count(p, ":") == 1 {
			var err error
			if host, port, err = net.SplitHostPort(p); err != nil {
				if !strings.HasPrefix(p, "[") || !strings.HasSuffix(p, "]") {
					return nil, fmt.Errorf("webhook allow pattern %q: %w", p, err)
				}
				host, port = p[1:len(p)-1], ""
			}
			if port == "" && strings.HasSuffix(p, ":") {
				return nil, fmt.Errorf("webhook allow pattern %q: empty port", p)
			}
		}
		bracketed := strings.HasPrefix(p, "[")
		if host == "" || strings.ContainsAny(host, "?[]\\/@ ") || !bracketed && strings.Contains(host, ":") || strings.ContainsAny(port, "?[]\\/@ :") {
			return nil, fmt.Errorf("webhook allow pattern %q: want host or host:port, * the only wildcard", p)
		}
		l.pats = append(l.pats, pattern{host: strings.ToLower(host), port: port})
	}
	return l, nil
}

// Empty reports whether the list allows nothing.
func (l *AllowList) Empty() bool { return l == nil || len(l.pats) == 0 }

// Check returns nil if raw is an absolute http or https URL with a host the
// list allows, and an error wrapping ErrNotAllowed saying why not otherwise.
func (l *AllowList) Check(raw string) error {
	if l.Empty() {
		return fmt.Errorf("%w: no --webhook-allow list is set on this node", ErrNotAllowed)
	}
	if len(raw) > MaxURLBytes {
		return fmt.Errorf("%w: longer than %d bytes", ErrNotAllowed, MaxURLBytes)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotAllowed, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%w: scheme must be http or https", ErrNotAllowed)
	}
	if u.User != nil {
		return fmt.Errorf("%w: user info is not allowed", ErrNotAllowed)
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return fmt.Errorf("%w: no host", ErrNotAllowed)
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	for _, p := range l.pats {
		if glob(p.host, host) && (p.port == "" || glob(p.port, port)) {
			return nil
		}
	}
	return fmt.Errorf("%w: host %s is not in --webhook-allow", ErrNotAllowed, net.JoinHostPort(host, port))
}

// glob matches s against pat, where "*" matches any run of characters. The
// patterns hold no other metacharacter of path.Match (ParseAllowList refuses
// them) and hosts hold no '/', so path.Match does exactly that.
func glob(pat, s string) bool {
	ok, err := path.Match(pat, s)
	return err == nil && ok
}
