package chaos

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/txlog/txlog/api/wire"
)

// NameConsumer is the name of CheckConsumer.
const NameConsumer = "consumers project exactly once"

// ConsumerHistory is what CheckConsumer reads of the consumer workload,
// beside the applied log.
type ConsumerHistory struct {
	// Group is the consumer group, and Lease its lease ("consumer/<group>").
	Group, Lease string
	// From and To bound the followed range of log indexes (both included).
	From, To uint64
	// Source tells the entries the consumers project: the workload's writes.
	Source func(wire.LogEntry) bool
	// Projection counts, per log index, how many times the projection read
	// at the end of the run reflects that entry.
	Projection map[uint64]int
	// Offsets are the group's offset as the workload read it, from any
	// node, each with the applied index of the state it was read from.
	Offsets []OffsetRead
}

// OffsetRead is one read of the group's offset (GET /v1/consumers/{group}):
// the node that answered, the offset, and the applied index of the state it
// was read from (the offset plus the answer's lag). A node answers from its
// own applied state, so reads in time order may go back (a lagging node
// answers after the leader); reads in order of their applied index may not.
type OffsetRead struct {
	Node    string    `json:"node"`
	Offset  uint64    `json:"offset"`
	Applied uint64    `json:"applied"`
	At      time.Time `json:"at"`
}

// ConsumerStats sums up a consumer history; the report shows them.
type ConsumerStats struct {
	Source    int `json:"source"`    // committed source entries in the range
	Projected int `json:"projected"` // entries the projection reflects
	Commits   int `json:"commits"`   // applied offset commits of the group
	Refused   int `json:"refused"`   // the group's fenced entries refused by the fence
	Terms     int `json:"terms"`     // tokens the group's applied fenced entries carry
	Reads     int `json:"reads"`     // offset reads
}

// CheckConsumer checks the consumer workload against the applied log. The
// rules:
//
//  1. every committed source entry of the followed range is reflected in
//     the projection exactly once, and the projection reflects nothing else;
//  2. the group's offset never goes back: not along the log (its applied
//     commit_offset ops without reset), nor between the workload's reads in
//     the order of the applied index they were read at (two reads at the
//     same applied index read the same offset);
//  3. no write of a fenced-out consumer is applied: tokens are the Raft
//     indexes of grants, so the token of the group's applied fenced entries
//     never goes down along the log, and none is below a token that the
//     fence refused an entry with before it.
func CheckConsumer(h ConsumerHistory, log []wire.LogEntry) CheckResult {
	res, _ := checkConsumer(h, log)
	return res
}

func checkConsumer(h ConsumerHistory, log []wire.LogEntry) (CheckResult, ConsumerStats) {
	var v violations
	var st ConsumerStats
	source := map[uint64]bool{}
	var offset, token, fencedAt uint64 // along the log
	terms := map[uint64]bool{}
	for _, e := range log {
		committed := e.Status == wire.StatusCommitted
		if committed && e.Index >= h.From && e.Index <= h.To && h.Source != nil && h.Source(e) {
			source[e.Index] = true
		}
		if e.Fence != nil && e.Fence.Lease == h.Lease {
			switch {
			case committed && e.Fence.Token < token:
				v.addf("rule 3: entry %d applied with token %d of lease %s after token %d's entries", e.Index, e.Fence.Token, h.Lease, token)
			case committed && e.Fence.Token < fencedAt:
				v.addf("rule 3: entry %d applied with token %d of lease %s, which the fence refused before for token %d", e.Index, e.Fence.Token, h.Lease, fencedAt)
			case committed:
				token = e.Fence.Token
				terms[token] = true
			case e.Conflict != nil && e.Conflict.Fence != "":
				st.Refused++
				fencedAt = max(fencedAt, e.Conflict.Actual)
			}
		}
		if !committed {
			continue
		}
		for _, op := range e.Ops {
			if op.Op != wire.OpCommitOffset || op.Group != h.Group || op.Reset {
				continue
			}
			st.Commits++
			if op.Offset <= offset {
				v.addf("rule 2: entry %d moved group %s's offset from %d back to %d", e.Index, h.Group, offset, op.Offset)
			}
			offset = op.Offset
		}
	}
	reads := slices.SortedStableFunc(slices.Values(h.Offsets), func(a, b OffsetRead) int { return cmp.Compare(a.Applied, b.Applied) })
	for i := 1; i < len(reads); i++ {
		p, r := reads[i-1], reads[i]
		if r.Offset < p.Offset || (r.Applied == p.Applied && r.Offset != p.Offset) {
			v.addf("rule 2: group %s's offset read as %d from %s at applied index %d, but as %d from %s at applied index %d",
				h.Group, p.Offset, p.Node, p.Applied, r.Offset, r.Node, r.Applied)
		}
	}
	st.Terms, st.Reads = len(terms), len(h.Offsets)
	st.Source = len(source)
	for _, i := range slices.Sorted(maps.Keys(source)) {
		if n := h.Projection[i]; n != 1 {
			v.addf("rule 1: committed entry %d reflected %d times in the projection", i, n)
		}
	}
	for _, i := range slices.Sorted(maps.Keys(h.Projection)) {
		if h.Projection[i] > 0 {
			st.Projected++
		}
		if !source[i] && h.Projection[i] > 0 {
			v.addf("rule 1: the projection reflects entry %d, not a committed source entry of %d..%d", i, h.From, h.To)
		}
	}
	ok := fmt.Sprintf("%d entries projected once each, %d offset commits moving forward, %d fenced-out entries refused", st.Source, st.Commits, st.Refused)
	return v.result(NameConsumer, ok, "consumer violations"), st
}
