package chaos

import (
	"fmt"

	"github.com/txlog/txlog/api/wire"
)

// NameVersionChains names CheckVersionChains. The verifier's own run does not
// report it (its linearizability check covers the versions it reads and
// writes); the process-level tests (systemtest) run it on their logs.
const NameVersionChains = "version chains without gaps"

// CheckVersionChains checks that the committed writes of log form gap-free
// version chains: each committed put of a key is at the key's previous version
// plus one (a delete starts the key over), and a put with if_version N commits
// version N+1. commit_offset ops (a consumer group's offset, docs/consuming.md)
// write no key and are skipped.
func CheckVersionChains(log []wire.LogEntry) CheckResult {
	var v violations
	versions := map[string]uint64{}
	writes := 0
	for _, e := range log {
		if e.Status != wire.StatusCommitted {
			continue
		}
		for _, op := range e.Ops {
			switch op.Op {
			case wire.OpDelete:
				versions[op.Key] = 0
				continue
			case wire.OpPut:
			default:
				continue // commit_offset: a group's offset, no key's version
			}
			writes++
			want := versions[op.Key] + 1
			got := e.Versions[op.Key]
			if got != want {
				v.addf("index %d: %s at version %d, want %d (gap in the chain)", e.Index, op.Key, got, want)
			}
			if op.IfVersion != nil && *op.IfVersion+1 != want {
				v.addf("index %d: %s committed with if_version %d over version %d", e.Index, op.Key, *op.IfVersion, want-1)
			}
			versions[op.Key] = got
		}
	}
	return v.result(NameVersionChains, fmt.Sprintf("%d committed writes of %d keys, each at its key's version before plus one", writes, len(versions)), "version chain errors")
}
