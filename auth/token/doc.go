// Package token makes bearer tokens and the auth file's lines for them: the
// one definition of their format, for the node (package auth), the launcher
// and the CLI alike.
//
// A token is "txlog_" and 32 bytes from crypto/rand in unpadded base64url;
// the auth file stores only its SHA-256 in hex, on a line
// "sha256:<hex> <role> <name> prefix=<p>...".
//
// # What it must not import
//
// The standard library only, so that a program that makes tokens (the
// launcher, a test) does not take in the node's auth package and its
// metrics.
//
// Imports only: std
package token
