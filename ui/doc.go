// Package ui is the node's dashboard: the page served at GET /ui/ (plain HTML,
// CSS and JavaScript embedded in the binary with go:embed; no front-end build),
// the per-node ring of write samples behind GET /v1/stats, and the ring of node
// events behind GET /v1/events. docs/api.md describes both JSON answers and
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
//   - handler.go: Handler, the http.Handler of /ui/, /v1/stats and /v1/events.
//     /v1/stats answers with Access-Control-Allow-Origin: * so that a page
//     served by one node can read every member's stats from the browser.
//   - assets/: the page. It polls /v1/cluster, /v1/events, /v1/leases,
//     /v1/consumers (hidden when it answers 404) and each member's /v1/stats
//     every 2 s.
//
// # What it must not import
//
// ui imports only the standard library: node feeds it and api routes to it.
//
// Imports only: std
package ui
