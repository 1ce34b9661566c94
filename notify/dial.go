package notify

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// Class is what an address is to the deliverer, which checks every address
// it connects to (the one a name resolved to, not the name):
//
//   - Public: any address not below; a url the list allows may reach it.
//   - Private: 10/8, 172.16/12, 192.168/16, 100.64/10 (shared address
//     space), 198.18/15 (benchmarking), fc00::/7 and fec0::/10: reached only
//     when a pattern names the address as an IP (with the port dialed), or,
//     with --webhook-allow-private, through a name a pattern matches.
//   - Local: loopback (127/8, ::1), unspecified and "this network" (0/8,
//     ::), link-local (169.254/16, fe80::/10), multicast and broadcast:
//     reached only when a pattern names the address as an IP, with the port
//     dialed. No name and no flag leads there, so a name that resolves (or is
//     rebound) to 127.0.0.1 or 169.254.169.254 is refused unless the list
//     holds "127.0.0.1:port" or "169.254.169.254:port".
//
// An IPv4 address inside IPv6 (::ffff:a.b.c.d, ::a.b.c.d, NAT64's
// 64:ff9b::/96, 6to4's 2002::/16) is judged as that IPv4 address.
type Class int

// The classes of an address.
const (
	Public Class = iota
	Private
	Local
)

// String returns "public", "private" or "local".
func (c Class) String() string {
	switch c {
	case Private:
		return "private"
	case Local:
		return "local"
	}
	return "public"
}

var (
	compat      = netip.MustParsePrefix("::/96") // IPv4-compatible, deprecated
	nat64       = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour   = netip.MustParsePrefix("2002::/16")
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")
	broadcast   = netip.MustParseAddr("255.255.255.255")
	privateNets = []netip.Prefix{
		netip.MustParsePrefix("100.64.0.0/10"),
		netip.MustParsePrefix("198.18.0.0/15"),
		netip.MustParsePrefix("fec0::/10"),
	}
)

// AddrClass returns the Class of a.
func AddrClass(a netip.Addr) Class {
	a = a.Unmap()
	switch {
	case compat.Contains(a) && !a.IsUnspecified() && !a.IsLoopback(),
		nat64.Contains(a):
		b := a.As16()
		return AddrClass(netip.AddrFrom4([4]byte(b[12:16])))
	case sixToFour.Contains(a):
		b := a.As16()
		return AddrClass(netip.AddrFrom4([4]byte(b[2:6])))
	case a.IsLoopback(), a.IsUnspecified(), a.IsLinkLocalUnicast(), a.IsMulticast(),
		thisNetwork.Contains(a), a == broadcast:
		return Local
	case a.IsPrivate():
		return Private
	}
	for _, p := range privateNets {
		if p.Contains(a) {
			return Private
		}
	}
	return Public
}

// CheckConn returns nil if the deliverer may connect to ap for a url whose
// scheme's default port is def (80 or 443): ap is Public, or a pattern names
// its IP with a port that admits ap's, or it is Private and privateNames
// (--webhook-allow-private) is set. Otherwise an error wrapping
// ErrNotAllowed. The url itself was checked by Check first.
func (l *AllowList) CheckConn(ap netip.AddrPort, def int, privateNames bool) error {
	a := ap.Addr().Unmap().WithZone("")
	c := AddrClass(a)
	if c == Public {
		return nil
	}
	if ap.Addr().Zone() == "" && l != nil {
		for _, p := range l.pats {
			if p.ip == a && p.matchPort(int(ap.Port()), def) {
				return nil
			}
		}
	}
	if c == Private && privateNames {
		return nil
	}
	return fmt.Errorf("%w: connection to %s, a %s address no pattern names", ErrNotAllowed, ap, c)
}

// newClient returns the client that POSTs callbacks: it uses no proxy,
// follows no redirect (a 3xx is an answer, so a failure), bounds the
// answer's headers, and checks each address it connects to with CheckConn,
// in the dialer (net.Dialer.Control), after the name is resolved. One
// transport per scheme, so that the check knows the scheme's default port.
func newClient(allow *AllowList, privateNames bool, timeout time.Duration) *http.Client {
	rt := schemeTransport{}
	for scheme, def := range defaultPort {
		d := &net.Dialer{Timeout: timeout, Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: connection to %q", ErrNotAllowed, address)
			}
			return allow.CheckConn(ap, def, privateNames)
		}}
		rt[scheme] = &http.Transport{
			Proxy:                  nil,
			DialContext:            d.DialContext,
			TLSHandshakeTimeout:    timeout,
			MaxResponseHeaderBytes: 64 << 10,
			MaxIdleConnsPerHost:    DefaultDestConcurrency,
			IdleConnTimeout:        90 * time.Second,
		}
	}
	return &http.Client{
		Transport:     rt,
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// schemeTransport sends each request through the transport of its scheme.
type schemeTransport map[string]*http.Transport

var errScheme = errors.New("scheme must be http or https")

func (t schemeTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	tr := t[r.URL.Scheme]
	if tr == nil {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, fmt.Errorf("%w: %w", ErrNotAllowed, errScheme)
	}
	return tr.RoundTrip(r)
}

// CloseIdleConnections closes every transport's idle connections.
func (t schemeTransport) CloseIdleConnections() {
	for _, tr := range t {
		tr.CloseIdleConnections()
	}
}
