// Package notify holds the pieces of outcome callbacks (docs/consuming.md,
// "Callbacks"): the operator's allow-list of callback hosts (--webhook-allow),
// which the API checks on submit and the deliverer again before each POST, and
// the X-Txlog-Signature of a callback body (--webhook-secret).
//
// Imports only: std, github.com/cenkalti/backoff/v5
package notify
