package peerlink

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// The kinds of connection, the byte after the header's version: what the
// rest of the connection carries.
const (
	// KindRaft carries hashicorp/raft's transport (replication's StreamLayer).
	KindRaft byte = 'R'
	// KindStream carries a propose stream (api/wire/stream.go) from the first
	// byte after the answer: no HTTP upgrade.
	KindStream byte = 'S'
	// KindHTTP carries HTTP/1.1 requests to the node's internal router.
	KindHTTP byte = 'H'
	// KindBootstrap carries one answer of at most MaxProbeBytes from the
	// acceptor's Config.Bootstrap, then the acceptor closes.
	KindBootstrap byte = 'B'
)

// Answer statuses, the first byte the acceptor writes back.
const (
	StatusOK           byte = 0
	StatusOtherCluster byte = 1
	StatusBadHeader    byte = 2
	StatusRefused      byte = 3
	// StatusChallenge opens the shared-secret exchange (secret.go): a nonce
	// of NonceBytes follows instead of a cluster ID.
	StatusChallenge byte = 4
	// StatusUnauthenticated: the dialer's proof of the shared secret was
	// missing, cut short or matched none of the acceptor's secrets.
	StatusUnauthenticated byte = 5
	// StatusTLSRequired: a plain connection to an acceptor that takes TLS
	// alone (Config.TLSMode "tls").
	StatusTLSRequired byte = 6
)

const (
	// Magic opens every connection on the peer link.
	Magic = "TXLP"
	// Version is the header's version.
	Version byte = 1
	// MaxNodeIDBytes bounds the node ID in a header.
	MaxNodeIDBytes = 64
	// MaxProbeBytes bounds a bootstrap probe's answer (KindBootstrap).
	MaxProbeBytes = 4 << 10

	// fixedHeaderBytes is the header without the node ID's bytes: magic,
	// version, kind, cluster ID, node ID length.
	fixedHeaderBytes = len(Magic) + 1 + 1 + 16 + 1
	// answerBytes is the acceptor's answer: status, cluster ID.
	answerBytes = 1 + 16
)

// Errors of reading a header, each wrapping ErrBadHeader.
var (
	ErrBadHeader     = errors.New("bad peer link header")
	ErrBadMagic      = fmt.Errorf("%w: magic", ErrBadHeader)
	ErrBadVersion    = fmt.Errorf("%w: version", ErrBadHeader)
	ErrBadKind       = fmt.Errorf("%w: kind", ErrBadHeader)
	ErrNodeIDTooLong = fmt.Errorf("%w: node ID longer than %d bytes", ErrBadHeader, MaxNodeIDBytes)
	ErrBadNodeID     = fmt.Errorf("%w: node ID not printable UTF-8", ErrBadHeader)
)

// ClusterID identifies a cluster; all zero is none.
type ClusterID = [16]byte

// Header is the connection header the dialer writes first on every
// connection of the peer link:
//
//	+--------+---------+------+-----------------+-------------+-------------+
//	| "TXLP" | version | kind | cluster ID (16) | len (1, ≤64) | node ID     |
//	+--------+---------+------+-----------------+-------------+-------------+
//
// The acceptor reads it under Config.HeaderTimeout (every length bounded
// before anything is allocated) and answers:
//
//	+------------+-----------------+
//	| status (1) | cluster ID (16) |
//	+------------+-----------------+
//
// With shared secrets (Config.Secrets non-empty on the acceptor), the
// acceptor first challenges, and the answer above comes only after the
// dialer proved the secret, followed by the acceptor's own proof:
//
//	acceptor: +-------+---------------+
//	          | 4 (1) | nonce A (32)  |
//	          +-------+---------------+
//	dialer:   +---------------+-----------------------------------------+
//	          | nonce D (32)  | HMAC-SHA256(secret, "txlp-dial" | header |
//	          |               |             nonce A | nonce D)  (32)     |
//	          +---------------+-----------------------------------------+
//	acceptor: +------------+-----------------+------------------------------+
//	          | status (1) | cluster ID (16) | HMAC-SHA256(secret,          |
//	          |            |                 |  "txlp-accept" | header |    |
//	          |            |                 |  nonce A | nonce D |         |
//	          |            |                 |  status | cluster ID) (32)   |
//	          +------------+-----------------+------------------------------+
//
// where header is the header's bytes as sent and secret is the first of
// the dialer's secrets, which the acceptor finds among its own (any of them
// is accepted). When none matches, the answer is status 5 with a zero
// cluster ID and no HMAC. Every part has a fixed length and is read under
// the header deadline. The dialer refuses an acceptor whose HMAC is wrong
// or that answers without challenging, and the acceptor without secrets
// never challenges. With TLS (Config.TLSMode), all of this runs inside the
// TLS connection, after its handshake.
type Header struct {
	Kind    byte
	Cluster ClusterID
	Node    string
}

// Append appends h's bytes to b. It panics on a node ID longer than
// MaxNodeIDBytes, which Config.Validate refuses.
func (h Header) Append(b []byte) []byte {
	if len(h.Node) > MaxNodeIDBytes {
		panic("peerlink: node ID too long")
	}
	b = append(b, Magic...)
	b = append(b, Version, h.Kind)
	b = append(b, h.Cluster[:]...)
	b = append(b, byte(len(h.Node)))
	return append(b, h.Node...)
}

// knownKind reports whether k is one of the kinds.
func knownKind(k byte) bool {
	switch k {
	case KindRaft, KindStream, KindHTTP, KindBootstrap:
		return true
	}
	return false
}

// ReadHeader reads one header from r. It reads the fixed part into fixed
// arrays, magic, version and kind first, checking each part before it reads
// the next (so that a stranger's bytes are refused as soon as they differ),
// then at most MaxNodeIDBytes more: a header never makes it allocate more
// than the node ID. Errors wrap ErrBadHeader, or are r's
// (io.ErrUnexpectedEOF for a header cut short).
func ReadHeader(r io.Reader) (Header, error) {
	var h Header
	var fixed [fixedHeaderBytes]byte
	p := len(Magic)
	if err := readFull(r, fixed[:p]); err != nil {
		return h, err
	}
	if !bytes.Equal(fixed[:p], []byte(Magic)) {
		return h, ErrBadMagic
	}
	if err := readFull(r, fixed[p:p+2]); err != nil {
		return h, err
	}
	if fixed[p] != Version {
		return h, fmt.Errorf("%w %d, want %d", ErrBadVersion, fixed[p], Version)
	}
	h.Kind = fixed[p+1]
	if !knownKind(h.Kind) {
		return h, fmt.Errorf("%w %q", ErrBadKind, h.Kind)
	}
	if err := readFull(r, fixed[p+2:]); err != nil {
		return h, err
	}
	copy(h.Cluster[:], fixed[p+2:p+18])
	n := int(fixed[p+18])
	if n > MaxNodeIDBytes {
		return h, fmt.Errorf("%w (%d)", ErrNodeIDTooLong, n)
	}
	var id [MaxNodeIDBytes]byte
	if err := readFull(r, id[:n]); err != nil {
		return h, err
	}
	if !validNodeID(id[:n]) {
		return h, ErrBadNodeID
	}
	h.Node = string(id[:n])
	return h, nil
}

// readFull reads len(b) bytes; a header cut short is io.ErrUnexpectedEOF.
func readFull(r io.Reader, b []byte) error {
	if _, err := io.ReadFull(r, b); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("read peer link header: %w", err)
	}
	return nil
}

// validNodeID reports whether b is UTF-8 without control characters or spaces.
func validNodeID(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if r <= ' ' || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return false
		}
	}
	return true
}

// appendAnswer appends the acceptor's answer.
func appendAnswer(b []byte, status byte, cluster ClusterID) []byte {
	b = append(b, status)
	return append(b, cluster[:]...)
}

// readAnswer reads the acceptor's answer. A challenge (StatusChallenge) is
// returned with its nonce: its status byte is followed by NonceBytes, not a
// cluster ID.
func readAnswer(r io.Reader) (status byte, cluster ClusterID, nonce []byte, err error) {
	var s [1]byte
	if _, err := io.ReadFull(r, s[:]); err != nil {
		return 0, cluster, nil, err
	}
	if s[0] == StatusChallenge {
		nonce = make([]byte, NonceBytes)
		if _, err := io.ReadFull(r, nonce); err != nil {
			return 0, cluster, nil, err
		}
		return s[0], cluster, nonce, nil
	}
	if _, err := io.ReadFull(r, cluster[:]); err != nil {
		return 0, cluster, nil, err
	}
	return s[0], cluster, nil, nil
}
