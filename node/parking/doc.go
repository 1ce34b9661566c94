// Package parking keeps transactions that arrive while the cluster has no
// leader in a Redis stream, so that whichever node becomes leader can drain
// them into Raft. It is the only txlog package that imports go-redis.
//
// While there is no leader, a node appends each transaction to its local WAL,
// parks it here with Park, and answers 202 "pending". The leader calls Claim
// in a loop, proposes each entry, and calls Ack once the entry is committed
// (or rejected): only then does the entry leave Redis. A leader that dies
// mid-drain leaves its claimed entries in the consumer group's pending list,
// and the next leader's Claim takes them over after Config.ClaimIdle. Entries
// can therefore be delivered more than once; dedup by txid makes that
// harmless. docs/parking.md describes the stream layout, the protocol and what
// survives a Redis crash.
//
// Redis is optional and may fail. Every call is bounded by Config.OpTimeout
// and guarded by a circuit breaker: after a few consecutive failures the
// breaker opens and calls return ErrUnavailable at once, without touching the
// network, so a down or hanging Redis never stalls a request; the node then
// parks in its WAL only. After a cool-down one probe call goes through, and
// its success closes the breaker again.
//
// node uses *Redis through an interface it declares on its side, along these
// lines:
//
//	type parker interface {
//		Park(ctx context.Context, txid uint64, payload []byte) error
//		Claim(ctx context.Context, max int) ([]parking.Entry, error)
//		Ack(ctx context.Context, streamIDs ...string) error
//		State() parking.BreakerState
//	}
//
// Pending (the stream's length) is there for status pages. All methods are
// safe for concurrent use; the payload is opaque bytes (store's encoding).
//
// The subpackage redistest starts real redis-server processes for tests (a thin
// test wrapper around launcher.Redis).
//
// parking imports nothing from txlog, and nothing outside node imports it.
//
// Must not import: github.com/txlog/txlog/...
// Sole importer of: github.com/redis/go-redis/...
package parking
