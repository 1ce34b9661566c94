// Package ui is the node's dashboard: the page served at GET /ui/ (plain HTML,
// CSS and JavaScript embedded in the binary with go:embed; no front-end build),
// the per-node ring of write samples behind GET /v1/stats (and every member's,
// GET /v1/stats/members), and the ring of node events behind GET /v1/events. docs/api.md describes both JSON answers and
// docs/operations.md the page.
//
// # What it owns
//
//   - stats.go: Stats, a fixed-bucket histogram of write answer latencies that
//     the write path feeds with two atomic adds and no lock or allocation
//     (Observe), and Sample, which swaps the histogram every interval and keeps
//     the last 150 samples (5 minutes at 2 s) of writes/s, p50 and p99, and
//     their histograms for the 5-minute quantiles (Window).
//   - events.go: Events, a small ring of what a node saw happen: leader
//     changes, joins, removals and, through Config.ExtraEvents, alerts.
//   - handler.go: Handler, the http.Handler of /ui/, /v1/stats,
//     /v1/stats/members and /v1/events.
//   - members.go: GET /v1/stats/members, every member's /v1/stats as this
//     node reads them (Config.PeerStats: over the peer link), all at once,
//     each within Config.PeerTimeout; a member that does not answer by then
//     gets an entry saying so. Requests that come together or within
//     MembersMaxAge share one answer (membersShare), so the page's readers
//     never multiply the node's requests to the others. The page reads its own node only, so that a
//     browser's credentials for that node (Basic, a client certificate) apply
//     to every request it makes; /v1/stats has no CORS header.
//   - assets/: the page. It polls /v1/cluster, /v1/stats/members,
//     /v1/events, /v1/leases and /v1/consumers (hidden when it answers 404),
//     the first and the last two with consistency=stale (the serving node's
//     own view, which it has with a leader or without), every 2 s, all of its own origin, and says in words when an answer is
//     401 (sign in) or 403 (the credential cannot read that part).
//
// # What it must not import
//
// ui imports only the standard library: node feeds it and api routes to it.
//
// Imports only: std
package ui
