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
//
// # What it must not import
//
// auth imports only the standard library.
//
// Imports only: std
package auth
