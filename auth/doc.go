// Package auth is who may do what on a node's HTTP API: the credentials of
// --auth-file (bearer tokens stored as SHA-256 hashes, client certificate
// names), their roles (read, write, admin) and key scopes (Principal), and
// the file's live reload. The API (package api) asks it who a request is
// and applies the role and the scope on every route.
//
// # What it owns
//
//   - principal.go: Role, Principal (its role and key prefixes), the
//     reserved prefix of the node's own keys, and the context that carries a
//     Principal from the API's check to the handlers and the node.
//   - parse.go: the auth file's format and its strict parser (every bad
//     line reported; a file is taken whole or not at all), Line.
//   - file.go: File, the credentials in force, re-read when the file
//     changes (a stat every Config.Interval: mtime, size, inode, mode; read
//     once two stats agree) and on Reload; a file that does not parse, or that anyone may write, is
//     refused and the previous credentials stay. Generation counts the
//     files put in force, so that a decision may be kept until the next
//     (the client stream's). NewToken and HashToken
//     (the format itself is package auth/token's, which the launcher uses too).
//   - authenticate.go: Authenticate, the request's credential (a bearer
//     token, Basic on GET and HEAD only, or a verified client certificate's
//     CN) matched against the file, tokens by SHA-256 in constant time.
//
// Tokens are 32 bytes from crypto/rand; the file holds only their SHA-256:
// a token has 256 bits of entropy, so a fast unsalted hash is as good as a
// slow one for it (no dictionary to try), and a request costs one SHA-256.
//
// # What it must not import
//
// auth imports only the standard library, the Prometheus client (its
// reload counter) and auth/token: the API and the node import it, never the reverse.
//
// Imports only: std, github.com/prometheus/client_golang/prometheus, github.com/txlog/txlog/auth/token
package auth
