package api

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/auth"
)

// Who may do what on the client port (docs/api.md, "Authentication and
// authorization"). Three checks, in this order:
//
//  1. The Host header (checkHost), on every request of the client port
//     whenever the Server knows its name (Config.AdvertiseHost), has an
//     allow list (Config.AllowedHosts) or authenticates (Config.Auth): an IP
//     literal, "localhost", AdvertiseHost or an AllowedHosts entry; else 403.
//     A page that rebinds its own DNS name to a node's address carries that
//     name, never an IP literal.
//  2. The Origin header (checkOrigin), always: absent, the request's own
//     origin or an AllowedOrigins entry; else 403. A cross-site form or
//     fetch (a text/plain POST needs no preflight) carries its site's origin.
//  3. With Config.Auth set, the route's access (guard; each route's is
//     written next to it in routes): a credential Authenticate knows (else
//     401), with the role the route needs (else 403). Its Principal goes into
//     the request's context, where the handlers find the key scope they
//     apply (scope.go).
//
// Requests over the peer link (PeerHandler) pass none: the link
// authenticates the node that sends them.

// access is what a route asks of a request's credential when Config.Auth is
// set.
type access uint8

const (
	// accessOpen: no credential (/healthz, /readyz; /metrics with
	// MetricsOpen, /ui/ with UIOpen).
	accessOpen access = iota
	// accessAny: any credential Authenticate knows (the 404 and 405 answers
	// of no route, so that they list no route to a stranger).
	accessAny
	accessRead
	accessWrite
	accessAdmin
)

// role returns the role acc needs.
func (acc access) role() auth.Role {
	switch acc {
	case accessRead:
		return auth.RoleRead
	case accessWrite:
		return auth.RoleWrite
	case accessAdmin:
		return auth.RoleAdmin
	}
	return auth.RoleNone
}

// realmBearer and realmBasic are the WWW-Authenticate challenges of a 401:
// Bearer always, Basic too on a GET or HEAD (auth takes Basic on those only),
// so that a browser asks on /ui/ and answers the page's own fetches of
// /v1/stats, /v1/cluster, … with the credentials it was given for the realm.
const (
	realmBearer = `Bearer realm="txlog"`
	realmBasic  = `Basic realm="txlog"`
)

// guard returns h behind the credential check of acc (step 3 above): h
// itself when Config.Auth is nil or acc is accessOpen. An admin route's
// answer is given to Config.Audit once h returns.
func (s *Server) guard(acc access, h http.Handler) http.Handler {
	if s.cfg.Auth == nil || acc == accessOpen {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := s.cfg.Auth.Authenticate(r)
		if err != nil || p == nil {
			s.writeUnauthenticated(w, r, err)
			return
		}
		if need := acc.role(); !p.Can(need) {
			s.writeError(w, &wire.Error{Code: wire.CodeForbidden, Message: fmt.Sprintf("%s %s needs role %s; credential %q has %s", r.Method, r.URL.EscapedPath(), need, p.Name, p.Role)})
			return
		}
		r = r.WithContext(auth.NewContext(r.Context(), p))
		if acc != accessAdmin || s.cfg.Audit == nil {
			h.ServeHTTP(w, r)
			return
		}
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		s.cfg.Audit(wire.AuditRecord{
			Who: p.Name, Role: p.Role.String(), Via: p.Via,
			Action: r.Method + " " + r.URL.EscapedPath(),
			From:   r.RemoteAddr, At: time.Now(), Status: sw.status,
		})
	})
}

// unscoped returns h behind a refusal of credentials with key prefixes
// (403): h answers for every scope at once. GET /metrics is such a route:
// its txlog_consumer_lag series carry every consumer group's name. Without
// a credential in the context (auth off, or the route open) h answers.
func (s *Server) unscoped(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := auth.FromContext(r.Context()); p.Scoped() {
			s.writeError(w, everyScopeRefused(r.Method+" "+r.URL.EscapedPath()+" names consumer groups of every key scope", p))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// everyScopeRefused is the 403 answer to p, a credential with key
// prefixes, on a route whose answer holds every key scope; what says what
// the route holds.
func everyScopeRefused(what string, p *auth.Principal) error {
	return &wire.Error{Code: wire.CodeForbidden, Message: fmt.Sprintf("%s; credential %q has key prefixes", what, p.Name)}
}

// writeUnauthenticated answers 401 unauthenticated with err's message and
// the challenges.
func (s *Server) writeUnauthenticated(w http.ResponseWriter, r *http.Request, err error) {
	msg := "no credential"
	if err != nil {
		// The code says unauthenticated already: the message says why.
		msg = strings.TrimPrefix(err.Error(), auth.ErrUnauthenticated.Error()+": ")
	}
	hdr := w.Header()
	hdr.Add("WWW-Authenticate", realmBearer)
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		hdr.Add("WWW-Authenticate", realmBasic)
	}
	s.writeError(w, &wire.Error{Code: wire.CodeUnauthenticated, Message: msg})
}

// statusWriter remembers the status of an answer for its audit record.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	w.status = status
	w.ResponseWriter.WriteHeader(status)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// hostCheck reports whether the Server checks the Host header (step 1).
func (c *Config) hostCheck() bool {
	return c.Auth != nil || c.AdvertiseHost != "" || len(c.AllowedHosts) > 0
}

// checkHeaders runs steps 1 and 2 on a request of the client port.
func (s *Server) checkHeaders(r *http.Request) error {
	if s.cfg.hostCheck() && !s.hostAllowed(r.Host) {
		return &wire.Error{Code: wire.CodeForbidden, Message: fmt.Sprintf("host %q not allowed (the node's --allowed-hosts)", r.Host)}
	}
	if o := r.Header.Values("Origin"); len(o) > 0 && !s.originAllowed(r, o) {
		return &wire.Error{Code: wire.CodeForbidden, Message: fmt.Sprintf("origin %q not allowed (the node's --allowed-origins)", strings.Join(o, ","))}
	}
	return nil
}

// hostAllowed reports whether the Host header hostport names this node: an
// IP literal, localhost, Config.AdvertiseHost or an AllowedHosts entry (a
// name, or a name and port). An empty Host (HTTP/1.0) is not a browser's.
func (s *Server) hostAllowed(hostport string) bool {
	if hostport == "" {
		return true
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	if strings.EqualFold(host, "localhost") || (s.cfg.AdvertiseHost != "" && strings.EqualFold(host, s.cfg.AdvertiseHost)) {
		return true
	}
	for _, a := range s.cfg.AllowedHosts {
		if a == "*" || strings.EqualFold(a, host) || strings.EqualFold(a, hostport) {
			return true
		}
	}
	return false
}

// originAllowed reports whether the Origin header values o (one, from a
// browser) are the request's own origin or AllowedOrigins entries. No route
// is an exception: the dashboard reads its own node only (the other
// members' stats through GET /v1/stats/members).
func (s *Server) originAllowed(r *http.Request, o []string) bool {
	if len(o) != 1 {
		return false
	}
	origin := strings.TrimSuffix(o[0], "/")
	scheme := "http://"
	if r.TLS != nil {
		scheme = "https://"
	}
	if r.Host != "" && strings.EqualFold(origin, scheme+r.Host) {
		return true
	}
	for _, a := range s.cfg.AllowedOrigins {
		if a == "*" || strings.EqualFold(strings.TrimSuffix(a, "/"), origin) {
			return true
		}
	}
	return false
}
