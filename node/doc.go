// Package node wires one txlog node together: it reads the configuration from
// flags and TXLOG_* environment variables (ParseConfig), opens the parts in order
// (the txid generator, the store, Raft, the HTTP API), runs them, and closes them
// in reverse. It implements api.Backend: it validates and converts requests,
// assigns transaction IDs, proposes transactions to the leader (forwarding them
// over HTTP from a follower), waits for their outcome and answers.
//
// node imports api, replication, store and txid. It does not import hashicorp/raft
// or bbolt directly: replication and store own those. Nothing imports node except
// cmd/txlogd.
package node
