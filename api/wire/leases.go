package wire

import (
	"errors"
	"time"
)

// Leases on the wire (docs/leases.md):
//
//	PUT    /v1/leases/{name}   {"holder","ttl"[,"token"]}  acquire, or renew with token
//	DELETE /v1/leases/{name}?holder=H&token=N               release
//	GET    /v1/leases/{name}[?wait=30s&after_token=N]       read, or long-poll
//	GET    /v1/leases                                       every live lease
//
// The name is the rest of the path, with the rules of a key.

// TTL bounds of a lease: part of the contract, like the store's.
const (
	MinLeaseTTL         = time.Second
	MaxLeaseTTL         = time.Hour
	MaxLeaseHolderBytes = 128
)

// Wire codes of the lease answers, both 409.
const (
	// CodeLeaseHeld: another holder has the lease.
	CodeLeaseHeld = "lease_held"
	// CodeFenced: the token is not the lease's current one, the lease
	// expired, or another holder has it: a renewal, release or fenced
	// transaction refused.
	CodeFenced = "fenced"
)

// Sentinels of the lease answers; a *LeaseError is one of them (errors.Is).
var (
	ErrLeaseHeld = errors.New("lease held by another holder")
	ErrFenced    = errors.New("fenced: not the lease's current token")
)

// Lease is a lease as the API shows it. TTL and ExpiresIn are Go durations
// ("5s", "4.2s").
type Lease struct {
	Name      string `json:"name"`
	Holder    string `json:"holder"`
	Token     uint64 `json:"token"`
	TTL       string `json:"ttl,omitempty"`
	ExpiresIn string `json:"expires_in"`
}

// Remaining returns ExpiresIn as a duration, 0 if it does not parse.
func (l Lease) Remaining() time.Duration {
	d, _ := time.ParseDuration(l.ExpiresIn)
	return d
}

// LeaseResult is the answer of PUT /v1/leases/{name}. Acquired is true when
// this request granted the lease (a new token); false for a renewal and for
// an acquire by the holder that already held it (nothing changed).
type LeaseResult struct {
	Lease
	Acquired bool `json:"acquired"`
}

// LeaseList is the answer of GET /v1/leases.
type LeaseList struct {
	Leases []Lease `json:"leases"`
}

// LeaseReleased is the answer of DELETE /v1/leases/{name}.
type LeaseReleased struct {
	Name     string `json:"name"`
	Released bool   `json:"released"`
}

// LeaseRequest is an acquire (Token 0) or a renewal of the lease Name.
type LeaseRequest struct {
	Name   string
	Holder string
	TTL    time.Duration
	Token  uint64
}

// LeaseBody is the body of PUT /v1/leases/{name}.
type LeaseBody struct {
	Holder string `json:"holder"`
	TTL    string `json:"ttl"`
	Token  uint64 `json:"token,omitempty"`
}

// LeaseError is a lease_held or fenced answer, with the lease as it is.
type LeaseError struct {
	Code    string // CodeLeaseHeld or CodeFenced
	Message string
	Lease   Lease
}

func (e *LeaseError) Error() string { return e.Code + ": " + e.Message }

// Unwrap gives the *Error of the code, which maps the answer through the
// code table.
func (e *LeaseError) Unwrap() error { return &Error{Code: e.Code, Message: e.Message} }

// Is makes errors.Is(err, ErrLeaseHeld) or (err, ErrFenced) true by code.
func (e *LeaseError) Is(target error) bool {
	return (target == ErrLeaseHeld && e.Code == CodeLeaseHeld) || (target == ErrFenced && e.Code == CodeFenced)
}

// LeaseErrorAnswer is the body of a lease_held or fenced answer.
type LeaseErrorAnswer struct {
	Error ErrorBody `json:"error"`
	Lease *Lease    `json:"lease,omitempty"`
}
