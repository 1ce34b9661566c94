package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// MaxAuthorizationBytes bounds the Authorization header Authenticate
// decodes; a token line's is under 100 bytes.
const MaxAuthorizationBytes = 1024

// Authenticate returns who r is, by the auth file's credentials in force:
//
//   - Authorization: Bearer <token>;
//   - Authorization: Basic base64(<anything>:<token>), only on GET and
//     HEAD: a browser sends Basic credentials it was once given with any
//     request to the node, a cross-site one too, so they never authorize a
//     write (Basic lets a browser open the dashboard);
//   - else a verified client certificate (r.TLS.VerifiedChains not empty)
//     whose subject CN a cert: line names.
//
// A token, when present, decides: a certificate is not looked at. The
// token's SHA-256 is compared with every token line's, in constant time, so
// the time taken tells nothing of which line matched or how closely. The
// error wraps ErrUnauthenticated and says what is wrong; it never repeats
// the token. The Principal returned is the caller's.
func (f *File) Authenticate(r *http.Request) (*Principal, error) {
	c := f.creds.Load()
	hs := r.Header.Values("Authorization")
	switch {
	case len(hs) > 1:
		return nil, unauthenticated("malformed Authorization header: %d of them", len(hs))
	case len(hs) == 1:
		tok, err := bearer(r.Method, hs[0])
		if err != nil {
			return nil, err
		}
		p, ok := c.token(tok)
		if !ok {
			return nil, unauthenticated("unknown token")
		}
		return p, nil
	}
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.VerifiedChains[0]) > 0 {
		cn := r.TLS.VerifiedChains[0][0].Subject.CommonName
		p, ok := c.certs[cn]
		if !ok {
			return nil, unauthenticated("certificate CN %q not in the auth file", cn)
		}
		return p.clone(), nil
	}
	return nil, unauthenticated("no credential: want Authorization: Bearer <token> or a client certificate")
}

// bearer returns the token of an Authorization header value h on a
// request with method.
func bearer(method, h string) (string, error) {
	if len(h) > MaxAuthorizationBytes {
		return "", unauthenticated("malformed Authorization header: %d bytes, want at most %d", len(h), MaxAuthorizationBytes)
	}
	scheme, rest, _ := strings.Cut(h, " ")
	rest = strings.TrimLeft(rest, " ")
	var tok string
	switch {
	case strings.EqualFold(scheme, "Bearer"): // schemes are case-insensitive (RFC 9110 §11.1)
		tok = rest
	case strings.EqualFold(scheme, "Basic"):
		if method != http.MethodGet && method != http.MethodHead {
			return "", unauthenticated("Basic credentials only for GET and HEAD: send Authorization: Bearer <token>")
		}
		raw, err := base64.StdEncoding.DecodeString(rest)
		if err != nil {
			return "", unauthenticated("malformed Authorization header: Basic credentials are not base64")
		}
		_, pass, ok := strings.Cut(string(raw), ":")
		if !ok {
			return "", unauthenticated("malformed Authorization header: Basic credentials without ':'")
		}
		tok = pass
	default:
		// The scheme is not repeated: without one, it is the token.
		return "", unauthenticated("malformed Authorization header: want Bearer <token>")
	}
	if tok == "" || strings.ContainsAny(tok, " \t") {
		return "", unauthenticated("malformed Authorization header: want one token after the scheme")
	}
	return tok, nil
}

// token returns the principal of the token line whose hash is tok's. Every
// line is compared, whichever matches.
func (c *creds) token(tok string) (*Principal, bool) {
	h := sha256.Sum256([]byte(tok))
	found := -1
	for i := range c.tokens {
		eq := subtle.ConstantTimeCompare(h[:], c.tokens[i].hash[:])
		found = subtle.ConstantTimeSelect(eq, i, found)
	}
	if found < 0 {
		return nil, false
	}
	return c.tokens[found].p.clone(), true
}

// clone returns a copy of p the caller may keep and change.
func (p Principal) clone() *Principal {
	p.Prefixes = slices.Clone(p.Prefixes)
	return &p
}

// unauthenticated returns an error wrapping ErrUnauthenticated.
func unauthenticated(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUnauthenticated, fmt.Sprintf(format, args...))
}
