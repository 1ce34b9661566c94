// Package consumer follows txlog's log as one consumer group: a Consumer
// takes the group's lease (named "consumer/<group>", docs/leases.md), reads
// the group's committed offset, streams the log from offset + 1 (waiting
// reads, GET /v1/log?wait=: an entry is handed over as soon as the node it
// reads from applies it, with no polling pause), hands batches
// of entries to a Handler and, once the Handler succeeds, commits the offset
// of the batch's last entry in a transaction fenced by the lease's token. It
// stops — cancels the Handler's context — when the lease is lost.
//
// ExactlyOnce builds the exactly-once pattern: its function returns the ops
// of a batch's effects, and the Consumer submits them and the offset commit
// as one fenced transaction, so that an effect is applied if and only if the
// offset moves past its entry (docs/consuming.md, Offsets and the
// exactly-once recipe).
//
// # The offset a term starts from
//
// A term (one holding of the lease) does not trust a read of the group's
// offset, which a lagging node may answer: it learns it by a probe, a
// commit_offset of offset 1 fenced by its token, which the store refuses
// with the group's offset (Conflict.Actual) in log order after the lease's
// grant — or refuses by the fence, if the lease is already lost. A new group
// moves from 0 to 1 by it, which skips nothing: log index 1 is raft's
// bootstrap configuration, never a transaction. After a
// write whose outcome is unknown the Consumer probes again.
//
// The group's own commits are log entries too: a run of entries that hold
// nothing but commit_offset ops of the group is skipped, not handed on, and
// the next batch's commit moves the offset past it.
//
// # Goroutines
//
// Run blocks; one Run at a time per Consumer.
//
// # What it must not import
//
// consumer is a client, like lease: it imports client, lease and api/wire.
//
// Imports only: std, github.com/txlog/txlog/client, github.com/txlog/txlog/lease, github.com/txlog/txlog/api/wire, github.com/txlog/txlog/txid
package consumer
