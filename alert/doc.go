// Package alert evaluates txlog's alert rules on one node and POSTs firing and
// resolved alerts to webhooks (--alert-webhook).
//
// A Manager samples a Snapshot of the node's state once a second (the node
// gives it a Sampler), runs the rules over it (rules.go: small pure functions
// of a Snapshot and Thresholds), and keeps one state per alert key (name plus
// labels) so that an alert is sent once when it fires and once when it
// resolves. Each webhook has its own delivery queue, sent in order with
// retries and exponential backoff (notify.go; a few lines, so no library).
// The last events stay in an in-memory ring (Manager.Events) for the
// dashboard.
//
// Who sends what, so that a cluster pages once: a cluster rule (leader
// changed, member unreachable) is evaluated only on the leader; a node rule
// (parked backlog, Redis breaker, fsync, disk) by the node it is about. "No
// leader" is sent by the lowest-ID voter that is up: a leaderless node sends
// it only when no voter with a lower ID answers HTTP (Snapshot.LowerVoterUp,
// probed by the node); once it sent it, it keeps it (a lower voter that comes
// up leaderless does not take over, and sends its own if it stays leaderless)
// until it sees a leader and resolves it. A
// node that sent a firing alert sends its resolved; a
// leader that steps down resolves the cluster alerts it had firing.
//
// Imports only: std
package alert
