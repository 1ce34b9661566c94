package chaos

import (
	"strings"
	"testing"

	"github.com/txlog/txlog/api/wire"
)

// consumerGood is a good consumer history: writes of "acct" at 2, 3 and 5,
// consumer token 4 commits through 3, token 6 takes over and commits
// through 5; a write of token 4 after the takeover is refused.
func consumerGood() (ConsumerHistory, []wire.LogEntry) {
	const lease = "consumer/g"
	write := func(i uint64) wire.LogEntry {
		return wire.LogEntry{Index: i, Status: wire.StatusCommitted, Ops: []wire.Op{{Op: wire.OpPut, Key: "acct"}}}
	}
	commit := func(i, token, offset uint64) wire.LogEntry {
		return wire.LogEntry{Index: i, Status: wire.StatusCommitted, Fence: &wire.Fence{Lease: lease, Token: token},
			Ops: []wire.Op{{Op: wire.OpPut, Key: "proj"}, {Op: wire.OpCommitOffset, Group: "g", Offset: offset}}}
	}
	log := []wire.LogEntry{
		write(2), write(3), commit(4, 1, 3), write(5),
		commit(7, 6, 5),
		{Index: 8, Status: wire.StatusRejected, Fence: &wire.Fence{Lease: lease, Token: 1}, Conflict: &wire.Conflict{Fence: lease, Expected: 1, Actual: 6}},
	}
	h := ConsumerHistory{Group: "g", Lease: lease, From: 2, To: 5,
		Source:     func(e wire.LogEntry) bool { return len(e.Ops) == 1 && e.Ops[0].Key == "acct" },
		Projection: map[uint64]int{2: 1, 3: 1, 5: 1},
		// n2 lags: it answers 3 after n1 answered 5, from an older state.
		Offsets: []OffsetRead{{Node: "n1", Offset: 3, Applied: 5}, {Node: "n1", Offset: 5, Applied: 8},
			{Node: "n2", Offset: 3, Applied: 6}, {Node: "n3", Offset: 5, Applied: 8}},
	}
	return h, log
}

func TestCheckConsumerPasses(t *testing.T) {
	h, log := consumerGood()
	res, st := checkConsumer(h, log)
	if !res.Pass {
		t.Fatalf("good history failed: %s %v", res.Summary, res.Evidence)
	}
	if st.Source != 3 || st.Commits != 2 || st.Refused != 1 || st.Terms != 2 || st.Reads != 4 {
		t.Errorf("stats %+v", st)
	}
}

// TestCheckConsumerFails: each bad history fails with its rule.
func TestCheckConsumerFails(t *testing.T) {
	for _, tc := range []struct {
		name, rule string
		bad        func(h *ConsumerHistory, log []wire.LogEntry) []wire.LogEntry
	}{
		{"entry projected twice", "rule 1", func(h *ConsumerHistory, log []wire.LogEntry) []wire.LogEntry {
			h.Projection[3] = 2
			return log
		}},
		{"entry missing", "rule 1", func(h *ConsumerHistory, log []wire.LogEntry) []wire.LogEntry {
			delete(h.Projection, 5)
			return log
		}},
		{"projection of a rejected entry", "rule 1", func(h *ConsumerHistory, log []wire.LogEntry) []wire.LogEntry {
			h.Projection[8] = 1
			return log
		}},
		{"offset back in the log", "rule 2", func(h *ConsumerHistory, log []wire.LogEntry) []wire.LogEntry {
			log[4].Ops[1].Offset = 2
			return log
		}},
		{"offset read back", "rule 2", func(h *ConsumerHistory, log []wire.LogEntry) []wire.LogEntry {
			h.Offsets = append(h.Offsets, OffsetRead{Node: "n2", Offset: 3, Applied: 9})
			return log
		}},
		{"two offsets at one applied index", "rule 2", func(h *ConsumerHistory, log []wire.LogEntry) []wire.LogEntry {
			h.Offsets = append(h.Offsets, OffsetRead{Node: "n2", Offset: 4, Applied: 5})
			return log
		}},
		{"fenced-out write applied after the new holder's", "rule 3", func(h *ConsumerHistory, log []wire.LogEntry) []wire.LogEntry {
			log[5].Status, log[5].Conflict = wire.StatusCommitted, nil
			return log
		}},
		{"write applied after its token was refused", "rule 3", func(h *ConsumerHistory, log []wire.LogEntry) []wire.LogEntry {
			refused := wire.LogEntry{Index: 6, Status: wire.StatusRejected, Fence: &wire.Fence{Lease: h.Lease, Token: 1}, Conflict: &wire.Conflict{Fence: h.Lease, Expected: 1, Actual: 6}}
			late := wire.LogEntry{Index: 7, Status: wire.StatusCommitted, Fence: &wire.Fence{Lease: h.Lease, Token: 1}, Ops: []wire.Op{{Op: wire.OpPut, Key: "proj"}}}
			return append(log[:4:4], refused, late)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, log := consumerGood()
			log = tc.bad(&h, log)
			res := CheckConsumer(h, log)
			if res.Pass {
				t.Fatalf("bad history passed: %s", res.Summary)
			}
			if !strings.Contains(strings.Join(res.Evidence, "\n"), tc.rule) {
				t.Errorf("evidence %v, want a %s violation", res.Evidence, tc.rule)
			}
		})
	}
}
