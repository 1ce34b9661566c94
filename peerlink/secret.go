package peerlink

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
)

// NonceBytes is the length of each side's nonce in the shared-secret
// exchange (header.go draws it).
const NonceBytes = 32

// macBytes is the length of an HMAC-SHA256.
const macBytes = sha256.Size

// The labels that keep the dialer's proof and the acceptor's apart: one can
// never stand for the other.
const (
	dialLabel   = "txlp-dial"
	acceptLabel = "txlp-accept"
)

// Errors of the shared-secret exchange.
var (
	// ErrSecretRequired: the peer challenged for a shared secret and this
	// link has none (Config.Secrets).
	ErrSecretRequired = errors.New("peer wants a shared secret and this node has none")
	// ErrUnauthenticated: the peer found our proof of the shared secret
	// wrong (or, on the acceptor, the dialer's proof was wrong or missing).
	ErrUnauthenticated = errors.New("shared secret refused")
	// ErrPeerUnproven: this link has a shared secret and the peer did not
	// prove it has it too (it did not challenge, or its proof was wrong).
	ErrPeerUnproven = errors.New("peer did not prove the shared secret")
)

// secrets returns the link's current shared secrets, the empty ones left out.
func (l *Link) secrets() [][]byte {
	if l.cfg.Secrets == nil {
		return nil
	}
	var out [][]byte
	for _, s := range l.cfg.Secrets() {
		if len(s) > 0 {
			out = append(out, s)
		}
	}
	return out
}

// exchange is one connection's shared-secret exchange: the header as sent
// and both nonces.
type exchange struct {
	header         []byte
	nonceA, nonceD []byte
}

// dialMAC is the dialer's proof.
func (x exchange) dialMAC(secret []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(dialLabel))
	m.Write(x.header)
	m.Write(x.nonceA)
	m.Write(x.nonceD)
	return m.Sum(nil)
}

// acceptMAC is the acceptor's proof, bound to the answer it sends.
func (x exchange) acceptMAC(secret []byte, status byte, cluster ClusterID) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(acceptLabel))
	m.Write(x.header)
	m.Write(x.nonceA)
	m.Write(x.nonceD)
	m.Write([]byte{status})
	m.Write(cluster[:])
	return m.Sum(nil)
}

// challenge runs the acceptor's side of the exchange on c, whose header h
// was read: it sends nonce A, reads the dialer's nonce and proof (64 bytes,
// under c's header deadline) and returns the secret the proof was made
// with. A proof that matches none is ErrUnauthenticated; a read that fails
// is returned as it is.
func challenge(c io.ReadWriter, h Header, secrets [][]byte) (exchange, []byte, error) {
	x := exchange{header: h.Append(nil), nonceA: make([]byte, NonceBytes)}
	_, _ = rand.Read(x.nonceA)
	if _, err := c.Write(append([]byte{StatusChallenge}, x.nonceA...)); err != nil {
		return x, nil, fmt.Errorf("write challenge: %w", err)
	}
	var resp [NonceBytes + macBytes]byte
	if _, err := io.ReadFull(c, resp[:]); err != nil {
		return x, nil, fmt.Errorf("read proof of the shared secret: %w", err)
	}
	x.nonceD = resp[:NonceBytes]
	got := resp[NonceBytes:]
	// Every secret is tried, so the time taken does not say which matched.
	var key []byte
	for _, s := range secrets {
		if hmac.Equal(got, x.dialMAC(s)) && key == nil {
			key = s
		}
	}
	if key == nil {
		return x, nil, ErrUnauthenticated
	}
	return x, key, nil
}

// respond runs the dialer's side once the acceptor challenged with nonceA:
// it sends nonce D and its proof made with secret.
func respond(w io.Writer, header, nonceA, secret []byte) (exchange, error) {
	x := exchange{header: header, nonceA: nonceA, nonceD: make([]byte, NonceBytes)}
	_, _ = rand.Read(x.nonceD)
	if _, err := w.Write(append(append([]byte(nil), x.nonceD...), x.dialMAC(secret)...)); err != nil {
		return x, fmt.Errorf("write proof of the shared secret: %w", err)
	}
	return x, nil
}

// checkAccept reads the acceptor's proof that follows its answer and
// checks it against secret: ErrPeerUnproven when it differs.
func checkAccept(r io.Reader, x exchange, secret []byte, status byte, cluster ClusterID) error {
	var got [macBytes]byte
	if _, err := io.ReadFull(r, got[:]); err != nil {
		return fmt.Errorf("%w: read its proof: %w", ErrPeerUnproven, err)
	}
	if !hmac.Equal(got[:], x.acceptMAC(secret, status, cluster)) {
		return ErrPeerUnproven
	}
	return nil
}
