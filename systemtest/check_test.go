package systemtest

import (
	"strings"
	"testing"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/txid"
)

func u64(v uint64) *uint64 { return &v }

// TestCheckClusterFails feeds the integration checker (checkCluster, built from
// the chaos checkers) broken histories and expects each to be caught.
func TestCheckClusterFails(t *testing.T) {
	put := func(index uint64, id txid.ID, key, k string, ifv *uint64, ver uint64) wire.LogEntry {
		return wire.LogEntry{Index: index, TxID: id, IdempotencyKey: key, Status: wire.StatusCommitted,
			Ops: []wire.Op{{Op: "put", Key: k, Value: []byte("1"), IfVersion: ifv}}, Versions: map[string]uint64{k: ver}}
	}
	good := []wire.LogEntry{put(5, 101, "a", "x", nil, 1), put(6, 102, "b", "x", u64(1), 2)}
	acked := []ack{{key: "a", res: wire.TxResult{TxID: 101, Index: 5, Status: wire.StatusCommitted}}}
	clone := func(l []wire.LogEntry) []wire.LogEntry { return append([]wire.LogEntry(nil), l...) }

	tests := []struct {
		name    string
		results []ack
		logs    map[string][]wire.LogEntry
		want    string
	}{
		{"good history passes", acked, map[string][]wire.LogEntry{"n1": good, "n2": clone(good)}, ""},
		{"lost write", append(acked, ack{key: "z", res: wire.TxResult{TxID: 999, Index: 9, Status: wire.StatusCommitted}}),
			map[string][]wire.LogEntry{"n1": good, "n2": clone(good)}, "missing from the log"},
		{"duplicate txid", acked, map[string][]wire.LogEntry{"n1": append(clone(good), put(7, 101, "c", "y", nil, 1))}, "txid"},
		{"duplicate idempotency key", acked, map[string][]wire.LogEntry{"n1": append(clone(good), put(7, 103, "a", "y", nil, 1))}, "idempotency key a"},
		{"divergent logs", acked, map[string][]wire.LogEntry{"n1": good, "n2": {good[0], put(6, 104, "b", "x", u64(1), 2)}}, "diverge"},
		{"missing entry on one node", acked, map[string][]wire.LogEntry{"n1": good, "n2": good[:1]}, "entries"},
		{"version gap", acked, map[string][]wire.LogEntry{"n1": {good[0], put(6, 102, "b", "x", nil, 3)}}, "gap"},
		{"stale compare-and-set", acked, map[string][]wire.LogEntry{"n1": {good[0], put(6, 102, "b", "x", u64(0), 2)}}, "if_version"},
		{"acknowledged differently", []ack{{key: "a", res: wire.TxResult{TxID: 101, Index: 5, Status: wire.StatusRejected}}},
			map[string][]wire.LogEntry{"n1": good}, "answered rejected, the log says committed"},
		{"acknowledged without an index", []ack{{key: "a", res: wire.TxResult{TxID: 101, Status: wire.StatusCommitted}}},
			map[string][]wire.LogEntry{"n1": good}, "without a txid or an index"},
		{"202 never resolved", append(acked, ack{key: "b", res: wire.TxResult{TxID: 102, Status: wire.StatusPending}}),
			map[string][]wire.LogEntry{"n1": good}, "never resolved"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkCluster(tt.results, tt.logs)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("checkCluster() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("checkCluster() = %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
}
