package chaos

import (
	"testing"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/txid"
)

// TestCheckVersionChains feeds the version chain checker good and broken logs.
func TestCheckVersionChains(t *testing.T) {
	u64 := func(v uint64) *uint64 { return &v }
	put := func(index uint64, k string, ifv *uint64, ver uint64) wire.LogEntry {
		return wire.LogEntry{Index: index, TxID: txid.ID(100 + index), Status: wire.StatusCommitted,
			Ops: []wire.Op{{Op: wire.OpPut, Key: k, Value: []byte("1"), IfVersion: ifv}}, Versions: map[string]uint64{k: ver}}
	}
	del := func(index uint64, k string) wire.LogEntry {
		return wire.LogEntry{Index: index, TxID: txid.ID(100 + index), Status: wire.StatusCommitted, Ops: []wire.Op{{Op: wire.OpDelete, Key: k}}}
	}
	rejected := func(index uint64, k string) wire.LogEntry {
		e := put(index, k, u64(7), 0)
		e.Status, e.Versions = wire.StatusRejected, nil
		return e
	}
	// withOffset is e with a consumer's commit_offset too, as ExactlyOnce
	// commits a batch's effects.
	withOffset := func(e wire.LogEntry) wire.LogEntry {
		e.Ops = append(e.Ops, wire.Op{Op: wire.OpCommitOffset, Group: "g", Offset: e.Index - 1})
		return e
	}
	offset := func(index uint64) wire.LogEntry {
		return wire.LogEntry{Index: index, TxID: txid.ID(100 + index), Status: wire.StatusCommitted, Ops: []wire.Op{{Op: wire.OpCommitOffset, Group: "g", Offset: index - 1}}}
	}
	tests := []struct {
		name string
		log  []wire.LogEntry
		want string // "" for a pass, else a piece of the evidence
	}{
		{"chain", []wire.LogEntry{put(1, "x", nil, 1), put(2, "x", u64(1), 2), put(3, "y", nil, 1)}, ""},
		{"delete starts over", []wire.LogEntry{put(1, "x", nil, 1), del(2, "x"), put(3, "x", u64(0), 1)}, ""},
		{"rejected writes nothing", []wire.LogEntry{put(1, "x", nil, 1), rejected(2, "x"), put(3, "x", nil, 2)}, ""},
		{"offset commits write no key", []wire.LogEntry{offset(1), put(2, "x", nil, 1), offset(3), withOffset(put(4, "x", u64(1), 2)), offset(5)}, ""},
		{"gap past an offset commit", []wire.LogEntry{put(1, "x", nil, 1), offset(2), withOffset(put(3, "x", nil, 3))}, "index 3: x at version 3, want 2"},
		{"gap", []wire.LogEntry{put(1, "x", nil, 1), put(2, "x", nil, 3)}, "index 2: x at version 3, want 2 (gap in the chain)"},
		{"version twice", []wire.LogEntry{put(1, "x", nil, 1), put(2, "x", nil, 1)}, "gap in the chain"},
		{"stale compare-and-set", []wire.LogEntry{put(1, "x", nil, 1), put(2, "x", u64(0), 2)}, "index 2: x committed with if_version 0 over version 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := CheckVersionChains(tt.log)
			if tt.want == "" {
				wantPass(t, r)
				return
			}
			wantFail(t, r, tt.want)
		})
	}
}
