// Package notify holds the pieces of outcome callbacks (docs/consuming.md,
// "Callbacks"): the operator's allow-list of callback hosts and ports
// (--webhook-allow, allow.go), which the API checks on submit and the
// deliverer again when it reads a delivery; the check of every address the
// deliverer connects to, in its dialer after the name is resolved, with the
// client that uses no proxy and follows no redirect (dial.go); the deliverer,
// fair across destinations and bounded in memory (deliver.go); and the
// X-Txlog-Signature of a callback body (--webhook-secret, sign.go).
//
// Imports only: std, github.com/cenkalti/backoff/v5
package notify
