package auth

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	tokens "github.com/txlog/txlog/auth/token"
	"slices"
	"strings"
)

// The auth file, one credential a line (docs/operations.md, "The auth
// file"):
//
//	# comment (a line whose first non-blank character is #)
//	sha256:<64 lowercase hex digits> <role> <name> [prefix=<p>]...
//	cert:<CN> <role> <name> [prefix=<p>]...
//
// Fields are separated by blanks (spaces or tabs; a trailing \r is a
// blank). The first names the credential: the SHA-256 of a bearer token
// (HashToken), or the subject common name of a client certificate, which
// therefore cannot contain a blank. <role> is read, write or admin
// (ParseRole). <name> is what logs and audit records call the credential:
// 1..maxNameBytes printable ASCII characters, no '#'. Each prefix= limits
// the credential to the keys under it (Principal.Prefixes); a prefix is
// not empty and not under ReservedPrefix.
//
// A file is all good or refused: every bad line is reported (LineError,
// joined), and a hash, a CN or a name on two lines is a bad line.

// maxFileBytes bounds the auth file: a larger one is refused, not read.
const maxFileBytes = 4 << 20

// maxNameBytes bounds a credential's name.
const maxNameBytes = 128

// Credential-kind prefixes of a line's first field.
const (
	kindHash = tokens.HashKind
	kindCert = "cert:"
)

// LineError is a bad line of the auth file.
type LineError struct {
	Line int    // 1-based
	Msg  string // what is wrong with it
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// token is one sha256: line.
type token struct {
	hash [32]byte
	p    Principal
}

// creds is one parsed auth file; it is never modified once parsed.
type creds struct {
	tokens []token
	certs  map[string]Principal // by CN
}

// count returns how many credentials c holds.
func (c *creds) count() int { return len(c.tokens) + len(c.certs) }

// parse parses an auth file's contents. It reports every bad line.
func parse(data []byte) (*creds, error) {
	c := &creds{certs: map[string]Principal{}}
	var errs []error
	names := map[string]int{}    // name → line
	hashes := map[[32]byte]int{} // hash → line
	cns := map[string]int{}      // CN → line
	for i, raw := range bytes.Split(data, []byte("\n")) {
		num := i + 1
		bad := func(format string, args ...any) {
			errs = append(errs, &LineError{Line: num, Msg: fmt.Sprintf(format, args...)})
		}
		line := string(raw)
		fields := strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' || r == '\r' })
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		if len(fields) < 3 {
			bad("want <sha256:HEX|cert:CN> <role> <name> [prefix=P]..., got %d fields", len(fields))
			continue
		}
		var p Principal
		var hash [32]byte
		var cn string
		ok := true
		switch first := fields[0]; {
		case strings.HasPrefix(first, kindHash):
			h := first[len(kindHash):]
			if err := parseHash(h, &hash); err != nil {
				bad("%s", err)
				ok = false
			} else if prev, dup := hashes[hash]; dup {
				bad("the token hash of line %d again", prev)
				ok = false
			} else {
				hashes[hash] = num
			}
			p.Via = "token"
		case strings.HasPrefix(first, kindCert):
			cn = first[len(kindCert):]
			if err := checkCN(cn); err != nil {
				bad("%s", err)
				ok = false
			} else if prev, dup := cns[cn]; dup {
				bad("cert:%s of line %d again", quoteIfOdd(cn), prev)
				ok = false
			} else {
				cns[cn] = num
			}
			p.Via = "cert"
		default:
			bad("first field %.40q: want sha256:<hex of the token's SHA-256> or cert:<CN>", first)
			ok = false
		}
		role, err := ParseRole(fields[1])
		if err != nil {
			bad("%s", err)
			ok = false
		}
		p.Role = role
		p.Name = fields[2]
		if err := checkName(p.Name); err != nil {
			bad("%s", err)
			ok = false
		} else if prev, dup := names[p.Name]; dup {
			bad("name %q already names line %d", p.Name, prev)
			ok = false
		} else {
			names[p.Name] = num
		}
		for _, f := range fields[3:] {
			pre, isPrefix := strings.CutPrefix(f, "prefix=")
			switch {
			case !isPrefix:
				bad("unknown field %.40q: want prefix=<p>", f)
				ok = false
			case pre == "":
				bad("empty prefix=: a credential without prefixes sees every key")
				ok = false
			case strings.HasPrefix(pre, ReservedPrefix):
				bad("prefix %q is under the reserved %q", pre, ReservedPrefix)
				ok = false
			case slices.Contains(p.Prefixes, pre):
				bad("prefix %q twice", pre)
				ok = false
			default:
				p.Prefixes = append(p.Prefixes, pre)
			}
		}
		if !ok {
			continue
		}
		if p.Via == "token" {
			c.tokens = append(c.tokens, token{hash: hash, p: p})
		} else {
			c.certs[cn] = p
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

// parseHash decodes 64 lowercase hex digits into h.
func parseHash(s string, h *[32]byte) error {
	if len(s) != 2*len(h) {
		return fmt.Errorf("sha256: has %d characters, want 64 lowercase hex digits", len(s))
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return fmt.Errorf("sha256: character %d is %q, want 64 lowercase hex digits", i+1, c)
		}
	}
	_, err := hex.Decode(h[:], []byte(s))
	return err
}

// checkCN checks a cert: line's common name: not empty, printable.
func checkCN(cn string) error {
	if cn == "" {
		return errors.New("cert: with an empty CN")
	}
	for _, r := range cn {
		if r < 0x20 || r == 0x7f || r == '\uFFFD' {
			return fmt.Errorf("cert:%q: a control or invalid character", cn)
		}
	}
	return nil
}

// checkName checks a credential's name.
func checkName(name string) error {
	if len(name) > maxNameBytes {
		return fmt.Errorf("name of %d bytes, want at most %d", len(name), maxNameBytes)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x21 || c > 0x7e || c == '#' {
			return fmt.Errorf("name %q: character %d is %q, want printable ASCII without '#'", name, i+1, c)
		}
	}
	return nil
}

// quoteIfOdd returns s, quoted when it has a character a log would mangle.
func quoteIfOdd(s string) string {
	for _, r := range s {
		if r <= ' ' || r >= 0x7f || r == '"' {
			return fmt.Sprintf("%q", s)
		}
	}
	return s
}

// Line returns the auth file's line for a token with the given hash
// (HashToken), role, name and prefixes:
// "sha256:<hash> <role> <name> prefix=<p>...". It checks nothing: parse it
// to know whether the file will take it.
func Line(hash string, role Role, name string, prefixes []string) string {
	return tokens.Line(hash, role.String(), name, prefixes)
}

// CheckLine reports what the auth file would refuse of line, as a file of
// that one line: nil when it takes it.
func CheckLine(line string) error {
	if strings.ContainsAny(line, "\n") {
		return errors.New("more than one line")
	}
	_, err := parse([]byte(line))
	return err
}
