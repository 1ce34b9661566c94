package chaos

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/txid"
)

// maxEvidence is how many violations a checker quotes; it counts them all.
const maxEvidence = 10

// CheckResult is the verdict of one checker, with what it saw.
type CheckResult struct {
	// Number is the checker's place in the report, from 1: the same in the
	// text, the JSON and the HTML (Report.number sets it).
	Number  int    `json:"number"`
	Name    string `json:"name"`
	Pass    bool   `json:"pass"`
	Summary string `json:"summary"`
	// Evidence quotes up to maxEvidence violations, or facts behind a pass.
	Evidence []string `json:"evidence,omitempty"`
	// Files are written by the checker, such as a linearizability visualization.
	Files []string `json:"files,omitempty"`
}

// Names of the checkers, in the order a run reports them.
const (
	NameLost         = "no acknowledged write lost"
	NameResolved     = "every 202 resolved"
	NameDuplicates   = "no transaction twice"
	NameIdentical    = "identical logs on every node"
	NameLinearizable = "linearizable history"
	NameAvailability = "unavailability per fault"
	NameRestarts     = "every stopped node started again"
)

// violations collects the violations of one checker.
type violations struct {
	n     int
	lines []string
}

func (v *violations) addf(format string, args ...any) {
	v.n++
	if len(v.lines) < maxEvidence {
		v.lines = append(v.lines, fmt.Sprintf(format, args...))
	}
}

func (v *violations) result(name, okSummary, what string) CheckResult {
	if v.n == 0 {
		return CheckResult{Name: name, Pass: true, Summary: okSummary}
	}
	return CheckResult{Name: name, Summary: fmt.Sprintf("%d %s", v.n, what), Evidence: v.lines}
}

// entriesByKey indexes log entries by idempotency key (the first one of a key).
func entriesByKey(log []wire.LogEntry) map[string]wire.LogEntry {
	m := make(map[string]wire.LogEntry, len(log))
	for _, e := range log {
		if e.IdempotencyKey == "" {
			continue
		}
		if _, ok := m[e.IdempotencyKey]; !ok {
			m[e.IdempotencyKey] = e
		}
	}
	return m
}

// ReferenceLog returns the longest of logs (the first node in ID order among
// equals), the log the history checkers compare the clients' answers with.
func ReferenceLog(logs map[string][]wire.LogEntry) (string, []wire.LogEntry) {
	ids := slices.Sorted(maps.Keys(logs))
	best := ""
	for _, id := range ids {
		if best == "" || len(logs[id]) > len(logs[best]) {
			best = id
		}
	}
	return best, logs[best]
}

// FillFromLog completes the writes in ops whose outcome the clients never
// learned (indeterminate, or a 202 not resolved) from the final log: their
// Result gets the log's outcome with FromLog set, and End stays as it was. It
// must run after the cluster settled, so that the log is final.
func FillFromLog(ops []Op, log []wire.LogEntry) {
	byKey := entriesByKey(log)
	for i := range ops {
		op := &ops[i]
		if !op.IsWrite() || !op.End.IsZero() || op.Result.Status == AnswerFailed {
			continue
		}
		e, ok := byKey[op.IdempotencyKey]
		if !ok {
			continue
		}
		op.Result = OpResult{Status: e.Status, TxID: e.TxID, Index: e.Index, Version: e.Versions[op.Key], FromLog: true}
		if e.Conflict != nil {
			op.Result.Actual = e.Conflict.Actual
		}
	}
}

// CheckNoLostWrites checks that every write the cluster answered with a final
// outcome (200, 409, or a 202 or retry resolved later) is in the log with that
// outcome, txid, index and version.
func CheckNoLostWrites(ops []Op, log []wire.LogEntry) CheckResult {
	byKey := entriesByKey(log)
	var v violations
	checked := 0
	for _, op := range ops {
		r := op.Result
		if !op.IsWrite() || r.FromLog || (r.Status != wire.StatusCommitted && r.Status != wire.StatusRejected) {
			continue
		}
		checked++
		e, ok := byKey[op.IdempotencyKey]
		switch {
		case !ok:
			v.addf("%s on %s answered %s %s (txid %s, index %d) at %s is missing from the log",
				op.Kind, op.Key, op.Answer, r.Status, r.TxID, r.Index, op.End.Format(time.StampMilli))
		case e.Status != r.Status:
			v.addf("%s (txid %s) answered %s, the log says %s at index %d", op.IdempotencyKey, r.TxID, r.Status, e.Status, e.Index)
		case r.TxID != 0 && e.TxID != r.TxID:
			v.addf("%s answered txid %s, the log has txid %s", op.IdempotencyKey, r.TxID, e.TxID)
		case r.Index != 0 && e.Index != r.Index:
			v.addf("%s (txid %s) answered index %d, the log has it at %d", op.IdempotencyKey, r.TxID, r.Index, e.Index)
		case r.Status == wire.StatusCommitted && e.Versions[op.Key] != r.Version:
			v.addf("%s (txid %s) answered version %d of %s, the log says %d", op.IdempotencyKey, r.TxID, r.Version, op.Key, e.Versions[op.Key])
		}
	}
	return v.result(NameLost, fmt.Sprintf("all %d answered writes are in the log as answered", checked), "answered writes lost or changed")
}

// CheckPendingResolved checks that every write answered 202 (on its first or a
// later attempt) resolved to committed or rejected while the run asked.
func CheckPendingResolved(ops []Op) CheckResult {
	var v violations
	var waits []time.Duration
	for _, op := range ops {
		if !op.IsWrite() || !op.Accepted {
			continue
		}
		if op.End.IsZero() || (op.Result.Status != wire.StatusCommitted && op.Result.Status != wire.StatusRejected) {
			v.addf("%s on %s (txid %s, ack=%s) answered 202 at %s never resolved (status %q)",
				op.IdempotencyKey, op.Key, op.Result.TxID, op.Ack, op.Answered.Format(time.StampMilli), op.Result.Status)
			continue
		}
		waits = append(waits, op.End.Sub(op.Answered))
	}
	if v.n > 0 {
		return v.result(NameResolved, "", fmt.Sprintf("of %d answers 202 never resolved", v.n+len(waits)))
	}
	p50, pmax := percentiles(waits)
	return CheckResult{Name: NameResolved, Pass: true,
		Summary: fmt.Sprintf("all %d answers 202 resolved; time to resolve p50 %v, max %v", len(waits), round(p50), round(pmax))}
}

// CheckNoDuplicates checks that no node's log holds a txid or an idempotency key
// twice.
func CheckNoDuplicates(logs map[string][]wire.LogEntry) CheckResult {
	var v violations
	total := 0
	for _, id := range slices.Sorted(maps.Keys(logs)) {
		ids := map[txid.ID]uint64{}
		keys := map[string]uint64{}
		for _, e := range logs[id] {
			total++
			if first, ok := ids[e.TxID]; ok {
				v.addf("%s: txid %s at index %d and again at %d", id, e.TxID, first, e.Index)
			}
			ids[e.TxID] = e.Index
			if e.IdempotencyKey == "" {
				continue
			}
			if first, ok := keys[e.IdempotencyKey]; ok {
				v.addf("%s: idempotency key %s at index %d and again at %d (txid %s, %s)", id, e.IdempotencyKey, first, e.Index, e.TxID, e.Status)
			}
			keys[e.IdempotencyKey] = e.Index
		}
	}
	return v.result(NameDuplicates, fmt.Sprintf("%d entries on %d nodes, no txid or idempotency key twice", total, len(logs)), "duplicates")
}

// CheckLogsIdentical checks that every node's log holds the same transactions in
// the same order with the same outcomes as the longest one.
func CheckLogsIdentical(logs map[string][]wire.LogEntry) CheckResult {
	refID, ref := ReferenceLog(logs)
	var v violations
	for _, id := range slices.Sorted(maps.Keys(logs)) {
		if id == refID {
			continue
		}
		l := logs[id]
		if len(l) != len(ref) {
			v.addf("%s has %d entries, %s has %d", id, len(l), refID, len(ref))
		}
		for i := range min(len(l), len(ref)) {
			if d := entryDiff(ref[i], l[i]); d != "" {
				v.addf("%s and %s diverge at entry %d: %s", refID, id, i, d)
				break
			}
		}
	}
	if len(logs) < 2 {
		v.addf("only %d node's log was read", len(logs))
	}
	last := uint64(0)
	if len(ref) > 0 {
		last = ref[len(ref)-1].Index
	}
	return v.result(NameIdentical, fmt.Sprintf("%d nodes hold the same %d entries (up to index %d)", len(logs), len(ref), last), "differences")
}

// entryDiff describes how b differs from a, or "" when they agree.
func entryDiff(a, b wire.LogEntry) string {
	switch {
	case a.Index != b.Index:
		return fmt.Sprintf("index %d vs %d", a.Index, b.Index)
	case a.TxID != b.TxID:
		return fmt.Sprintf("index %d: txid %s vs %s", a.Index, a.TxID, b.TxID)
	case a.Status != b.Status:
		return fmt.Sprintf("index %d (txid %s): %s vs %s", a.Index, a.TxID, a.Status, b.Status)
	case a.IdempotencyKey != b.IdempotencyKey:
		return fmt.Sprintf("index %d (txid %s): idempotency key %q vs %q", a.Index, a.TxID, a.IdempotencyKey, b.IdempotencyKey)
	case !maps.Equal(a.Versions, b.Versions):
		return fmt.Sprintf("index %d (txid %s): versions %v vs %v", a.Index, a.TxID, a.Versions, b.Versions)
	case (a.Conflict == nil) != (b.Conflict == nil) || a.Conflict != nil && *a.Conflict != *b.Conflict:
		return fmt.Sprintf("index %d (txid %s): conflict %v vs %v", a.Index, a.TxID, a.Conflict, b.Conflict)
	}
	return ""
}

// percentiles returns the median and the maximum of ds (zero for none).
func percentiles(ds []time.Duration) (p50, pmax time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	s := slices.Clone(ds)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)/2], s[len(s)-1]
}

func round(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
