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
// dashboard; Manager.Firing lists what is firing now, including the cluster
// episodes this node keeps but another node sent.
//
// Who sends what, so that a cluster pages once per episode
// (docs/operations.md, "One page per outage"): the ClusterRules (no leader,
// leader changed, member unreachable) have a scope of "cluster" and an
// episode name that every node gives alike; the others are about the node
// that sends them. Leader rules run only on a leader confirmed by a quorum
// this sample (the node's sampler sets Snapshot.IsLeader from a read index).
// "No leader" is sent by the lowest-ID voter that is up: a leaderless node
// sends it only when no voter with a lower ID answers HTTP
// (Snapshot.LowerVoterUp); once it sent it, it keeps it until it sees a
// leader. After a gap between two samples (a pause), cluster conditions
// count from the resume, so a node never sends from the view it had before
// it was stopped. With Config.Episodes (Redis, given by the node) every
// node records the episodes it sends: one that another node sent is kept
// silently, and only the node that closes the record sends the resolved
// event; a leader that steps down leaves an unreachable member's episode to
// the next leader, which resolves it once the member answers it
// (Config.Reachable) if its own view never flagged the member.
//
// Imports only: std
package alert
