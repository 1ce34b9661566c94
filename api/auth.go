package api

import (
	"net/http"

	"github.com/txlog/txlog/auth"
)

// Authenticator says who a request is. *auth.File implements it.
//
// Authenticate returns the request's Principal, or an error wrapping
// auth.ErrUnauthenticated that names what is wrong (no credential, an
// unknown token, a certificate no line names). Over TLS r.TLS is set on both
// of the client port's paths (net/http's and api/fastpath's).
type Authenticator interface {
	Authenticate(r *http.Request) (*auth.Principal, error)
}
