package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Role is what a credential may do; each role may do all that the ones
// below it may.
type Role int

// Roles, lowest first.
const (
	// RoleNone is no role: what an unauthenticated request has.
	RoleNone Role = iota
	// RoleRead: GET of kv, log, stream, tx status, leases, consumers,
	// stats, events and the dashboard.
	RoleRead
	// RoleWrite: read, and transactions, leases and consumer offsets.
	RoleWrite
	// RoleAdmin: write, and membership, leadership transfer, and the
	// reserved keys (ReservedPrefix).
	RoleAdmin
)

// ReservedPrefix starts the keys the node writes itself (the audit records,
// AuditPrefix). With auth on, only an admin credential without a prefix
// reads them, and no credential writes them.
const ReservedPrefix = "_txlog/"

// AuditPrefix starts the key of each audit record.
const AuditPrefix = ReservedPrefix + "audit/"

// String returns the role's name in the auth file.
func (r Role) String() string {
	switch r {
	case RoleRead:
		return "read"
	case RoleWrite:
		return "write"
	case RoleAdmin:
		return "admin"
	}
	return "none"
}

// ParseRole parses a role's name: read, write or admin.
func ParseRole(s string) (Role, error) {
	switch s {
	case "read":
		return RoleRead, nil
	case "write":
		return RoleWrite, nil
	case "admin":
		return RoleAdmin, nil
	}
	return RoleNone, fmt.Errorf("role %q: want read, write or admin", s)
}

// Principal is who a request's credential names.
type Principal struct {
	// Name is the credential's name in the auth file (for logs and audit
	// records).
	Name string
	// Role is what it may do.
	Role Role
	// Prefixes, when not empty, are the only key prefixes it sees and
	// touches: keys, lease names and consumer group names.
	Prefixes []string
	// Via is how it was presented: "token" or "cert".
	Via string
}

// Can reports whether p's role includes r. A nil p has no role.
func (p *Principal) Can(r Role) bool { return p != nil && p.Role >= r }

// Scoped reports whether p sees only some keys.
func (p *Principal) Scoped() bool { return p != nil && len(p.Prefixes) > 0 }

// Sees reports whether p may read name (a key, lease or consumer group):
// it is under one of p's prefixes, or p has none; a reserved name
// (ReservedPrefix) needs an admin without prefixes. A nil p sees
// everything: auth is off.
func (p *Principal) Sees(name string) bool {
	if p == nil {
		return true
	}
	if strings.HasPrefix(name, ReservedPrefix) {
		return p.Role >= RoleAdmin && len(p.Prefixes) == 0
	}
	if len(p.Prefixes) == 0 {
		return true
	}
	for _, pre := range p.Prefixes {
		if strings.HasPrefix(name, pre) {
			return true
		}
	}
	return false
}

// Touches reports whether p may write name: it Sees it and it is not
// reserved. A nil p touches everything but reserved names... which with
// auth off are ordinary keys: it touches everything.
func (p *Principal) Touches(name string) bool {
	if p == nil {
		return true
	}
	return !strings.HasPrefix(name, ReservedPrefix) && p.Sees(name)
}

type ctxKey struct{}

// NewContext returns ctx carrying p.
func NewContext(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, ctxKey{}, p)
}

// FromContext returns the Principal ctx carries, nil when none (auth off,
// or a request from another node over the peer link).
func FromContext(ctx context.Context) *Principal {
	p, _ := ctx.Value(ctxKey{}).(*Principal)
	return p
}

// ErrUnauthenticated is what Authenticate's errors wrap: the request has no
// credential, or one the auth file does not know.
var ErrUnauthenticated = errors.New("unauthenticated")
