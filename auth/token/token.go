package token

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
)

// Prefix starts every token New makes, so that one is easy to recognise (in
// a leaked file, by a secret scanner).
const Prefix = "txlog_"

// HashKind starts an auth file line that names a token by its hash.
const HashKind = "sha256:"

// New returns a new random bearer token: Prefix and 32 bytes from
// crypto/rand in unpadded base64url (RFC 4648 §5), 49 characters that need
// no quoting in a header, a URL or a shell.
func New() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("new token: %w", err)
	}
	return Prefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// Hash returns the lowercase hex SHA-256 of token's bytes: what the auth
// file stores of it.
func Hash(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// Line returns the auth file's line for a token with the given hash (Hash),
// role, name and prefixes: "sha256:<hash> <role> <name> prefix=<p>...". It
// checks nothing: the auth package's parser says whether a file takes it.
func Line(hash, role, name string, prefixes []string) string {
	var b strings.Builder
	b.WriteString(HashKind + hash + " " + role + " " + name)
	for _, p := range prefixes {
		b.WriteString(" prefix=" + p)
	}
	return b.String()
}
