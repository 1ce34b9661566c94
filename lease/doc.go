// Package lease runs a job on exactly one of several processes: an Elector
// campaigns for one txlog lease, runs a function while it holds it, renews it
// and stops the function before the lease can have run out.
//
// It imports only client and api/wire. The lease itself — grants, renewals, expiry by the
// leader-stamped time, tokens — lives in txlog's replicated state machine
// (store/lease.go, docs/leases.md); the Elector is the client's half: it
// keeps its own, conservative, view of when its lease runs out and acts on
// that view alone.
//
// # The holder's deadline
//
// A renewal (or grant) sent at local time s extends the lease to the stamp of
// the entry that applied it plus the TTL; that stamp is a leader's clock read
// after s. The Elector takes s + TTL as its deadline, which no leader whose
// clock is within LeaseClockSkew of real time puts earlier by more than that
// skew, and it cancels the function's context at deadline - Margin, with
// Margin (default TTL/5) above the skew: before the store can judge the
// lease expired. A renewal refused as fenced cancels at once.
//
// # Goroutines
//
// An Elector is for one goroutine at a time: Campaign, Run and Resign must
// not run concurrently. Observe may run beside them.
//
// # What it must not import
//
// lease imports only client and api/wire from txlog (and, through them, txid;
// and the standard library): it is a client, like chaos.
//
// Imports only: std, github.com/txlog/txlog/client, github.com/txlog/txlog/api/wire, github.com/txlog/txlog/txid
package lease
