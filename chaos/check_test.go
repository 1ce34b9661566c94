package chaos

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/txid"
)

// t0 is the origin of the hand-written histories.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// hist builds a small history and its log. Unless changed, every write
// commits, in the order given, with versions counted per key.
type hist struct {
	ops []Op
	log []wire.LogEntry
	ver map[string]uint64
}

func newHist() *hist { return &hist{ver: map[string]uint64{}} }

// put adds a blind put of value to key from start to end (ms), answered 200.
func (h *hist) put(client int, key string, value int64, start, end int) *Op {
	h.ver[key]++
	return h.commit(Op{Client: client, Kind: OpPut, Key: key, Value: value, Start: at(start), Answered: at(end), End: at(end), Answer: AnswerOK})
}

// cas adds a put with if_version ifv; it commits when ifv holds, else it is
// rejected.
func (h *hist) cas(client int, key string, ifv uint64, value int64, start, end int) *Op {
	op := Op{Client: client, Kind: OpCAS, Key: key, Value: value, IfVersion: ifv, Start: at(start), Answered: at(end), End: at(end), Answer: AnswerOK}
	if h.ver[key] != ifv {
		op.Answer = AnswerRejected
		return h.reject(op)
	}
	h.ver[key]++
	return h.commit(op)
}

func (h *hist) entry(op Op, status string) wire.LogEntry {
	n := len(h.log) + 1
	return wire.LogEntry{Index: uint64(n + 10), TxID: txid.ID(1000 + n), IdempotencyKey: op.IdempotencyKey, Status: status}
}

func (h *hist) commit(op Op) *Op {
	op.IdempotencyKey = "k" + string(rune('a'+len(h.ops)))
	e := h.entry(op, wire.StatusCommitted)
	e.Versions = map[string]uint64{op.Key: h.ver[op.Key]}
	h.log = append(h.log, e)
	op.Result = OpResult{Status: wire.StatusCommitted, TxID: e.TxID, Index: e.Index, Version: h.ver[op.Key]}
	h.ops = append(h.ops, op)
	return &h.ops[len(h.ops)-1]
}

func (h *hist) reject(op Op) *Op {
	op.IdempotencyKey = "k" + string(rune('a'+len(h.ops)))
	e := h.entry(op, wire.StatusRejected)
	e.Conflict = &wire.Conflict{Key: op.Key, Expected: op.IfVersion, Actual: h.ver[op.Key]}
	h.log = append(h.log, e)
	op.Result = OpResult{Status: wire.StatusRejected, TxID: e.TxID, Index: e.Index, Actual: h.ver[op.Key]}
	h.ops = append(h.ops, op)
	return &h.ops[len(h.ops)-1]
}

// read adds a read of key that returned version ver holding value.
func (h *hist) read(client int, key string, ver uint64, value int64, start, end int) {
	op := Op{Client: client, Kind: OpRead, Key: key, Start: at(start), Answered: at(end), End: at(end), Answer: AnswerOK,
		Result: OpResult{Status: wire.StatusCommitted, Found: ver > 0, Version: ver, ReadValue: value}}
	if ver == 0 {
		op.Answer = AnswerNotFound
	}
	h.ops = append(h.ops, op)
}

// good is a history that every checker accepts: puts, a chain of
// compare-and-sets, a rejected one, concurrent reads, and a 202 resolved later.
func good() *hist {
	h := newHist()
	h.put(0, "x", 1, 0, 10)
	h.read(1, "x", 1, 1, 5, 15)
	h.cas(1, "x", 1, 2, 20, 30)
	h.cas(2, "x", 1, 3, 22, 35) // lost the race: rejected
	h.read(0, "x", 2, 2, 40, 45)
	h.read(2, "y", 0, 0, 0, 5)
	op := h.put(2, "y", 7, 50, 51)
	op.Answer, op.Accepted, op.End = AnswerPending, true, at(80)
	h.read(0, "y", 1, 7, 90, 95)
	return h
}

func logsOf(l []wire.LogEntry, ids ...string) map[string][]wire.LogEntry {
	m := map[string][]wire.LogEntry{}
	for _, id := range ids {
		m[id] = append([]wire.LogEntry(nil), l...)
	}
	return m
}

func wantPass(t *testing.T, r CheckResult) {
	t.Helper()
	if !r.Pass {
		t.Fatalf("%s failed on a good history: %s\n%s", r.Name, r.Summary, strings.Join(r.Evidence, "\n"))
	}
}

func wantFail(t *testing.T, r CheckResult, evidence string) {
	t.Helper()
	if r.Pass {
		t.Fatalf("%s passed a broken history: %s", r.Name, r.Summary)
	}
	if !strings.Contains(strings.Join(r.Evidence, "\n"), evidence) {
		t.Fatalf("%s evidence = %q, want it to mention %q", r.Name, r.Evidence, evidence)
	}
}

func TestCheckersPassGoodHistory(t *testing.T) {
	h := good()
	logs := logsOf(h.log, "n1", "n2", "n3")
	wantPass(t, CheckNoLostWrites(h.ops, h.log))
	wantPass(t, CheckPendingResolved(h.ops))
	wantPass(t, CheckNoDuplicates(logs))
	wantPass(t, CheckLogsIdentical(logs))
	wantPass(t, CheckLinearizable(h.ops, t0, 10*time.Second, ""))
	wantPass(t, CheckAvailability(h.ops, nil))
}

func TestCheckNoLostWrites(t *testing.T) {
	tests := []struct {
		name     string
		breakIt  func(h *hist)
		evidence string
	}{
		{"lost write", func(h *hist) { h.log = h.log[1:] }, "missing from the log"},
		{"lost 202", func(h *hist) { h.log = h.log[:len(h.log)-1] }, "missing from the log"},
		{"other outcome", func(h *hist) { h.log[1].Status = wire.StatusRejected }, "the log says rejected"},
		{"other txid", func(h *hist) { h.log[0].TxID = 99 }, "has txid"},
		{"other index", func(h *hist) { h.log[0].Index = 99 }, "at 99"},
		{"other version", func(h *hist) { h.log[0].Versions = map[string]uint64{"x": 5} }, "version 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := good()
			tt.breakIt(h)
			wantFail(t, CheckNoLostWrites(h.ops, h.log), tt.evidence)
		})
	}
}

func TestCheckPendingResolved(t *testing.T) {
	h := good()
	h.ops[6].End = time.Time{}
	h.ops[6].Result.Status = wire.StatusPending
	wantFail(t, CheckPendingResolved(h.ops), "never resolved")

	// Learned from the log only, the 202 still counts as unresolved.
	FillFromLog(h.ops, h.log)
	if !h.ops[6].Result.FromLog || h.ops[6].Result.Status != wire.StatusCommitted {
		t.Fatalf("FillFromLog() left %+v", h.ops[6].Result)
	}
	wantFail(t, CheckPendingResolved(h.ops), "never resolved")
}

func TestCheckNoDuplicates(t *testing.T) {
	tests := []struct {
		name     string
		dup      func(e wire.LogEntry) wire.LogEntry
		evidence string
	}{
		{"txid twice", func(e wire.LogEntry) wire.LogEntry { e.IdempotencyKey = "other"; return e }, "txid"},
		{"idempotency key twice", func(e wire.LogEntry) wire.LogEntry { e.TxID = 4242; return e }, "idempotency key ka"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := good()
			e := tt.dup(h.log[0])
			e.Index = 99
			logs := logsOf(append(h.log, e), "n1")
			wantFail(t, CheckNoDuplicates(logs), tt.evidence)
		})
	}
}

func TestCheckLogsIdentical(t *testing.T) {
	tests := []struct {
		name     string
		breakIt  func(l []wire.LogEntry) []wire.LogEntry
		evidence string
	}{
		{"other txid", func(l []wire.LogEntry) []wire.LogEntry { l[1].TxID = 77; return l }, "diverge at entry 1"},
		{"other order", func(l []wire.LogEntry) []wire.LogEntry { l[0], l[1] = l[1], l[0]; return l }, "diverge at entry 0"},
		{"other outcome", func(l []wire.LogEntry) []wire.LogEntry { l[2].Status = wire.StatusCommitted; return l }, "rejected vs committed"},
		{"missing tail", func(l []wire.LogEntry) []wire.LogEntry { return l[:2] }, "has 2 entries"},
		{"other versions", func(l []wire.LogEntry) []wire.LogEntry { l[0].Versions = map[string]uint64{"x": 9}; return l }, "versions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := good()
			logs := logsOf(h.log, "n1", "n2", "n3")
			logs["n2"] = tt.breakIt(logs["n2"])
			wantFail(t, CheckLogsIdentical(logs), tt.evidence)
		})
	}
}

func TestCheckLinearizable(t *testing.T) {
	tests := []struct {
		name    string
		breakIt func(h *hist)
	}{
		// A read that starts after the cas to v2 was answered sees v1.
		{"stale read", func(h *hist) { h.read(1, "x", 1, 1, 50, 55) }},
		// A read sees a value nobody wrote.
		{"phantom value", func(h *hist) { h.read(1, "x", 2, 99, 50, 55) }},
		// A committed write that a later read does not see: lost.
		{"lost write", func(h *hist) { h.read(1, "y", 0, 0, 100, 110) }},
		// A cas rejected although its version held.
		{"wrong rejection", func(h *hist) {
			h.ops = append(h.ops, Op{Client: 3, Kind: OpCAS, Key: "x", IfVersion: 2, Value: 8, Start: at(60), End: at(61),
				Answer: AnswerRejected, Result: OpResult{Status: wire.StatusRejected, Actual: 2}})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := good()
			tt.breakIt(h)
			dir := t.TempDir()
			r := CheckLinearizable(h.ops, t0, 10*time.Second, dir)
			wantFail(t, r, "not linearizable")
			if len(r.Files) != 1 {
				t.Fatalf("Files = %v, want the visualization", r.Files)
			}
			if b, err := os.ReadFile(filepath.Join(dir, "linearizability.html")); err != nil || !strings.Contains(string(b), "<html") {
				t.Fatalf("visualization: %v, %.100q", err, b)
			}
		})
	}
}

// TestCheckLinearizableIndeterminate shows how writes whose outcome no client
// learned are checked: one the final log decided (FromLog) may have taken effect
// at any time after it started, but not before; one the log does not hold never
// took effect, so a read that sees it fails the check.
func TestCheckLinearizableIndeterminate(t *testing.T) {
	unknown := Op{Client: 3, Kind: OpCAS, Key: "x", IfVersion: 2, Value: 50, Start: at(100), Answer: AnswerUnknown,
		Result: OpResult{Status: wire.StatusUnknown}}

	h := good()
	h.ops = append(h.ops, unknown)
	h.read(0, "x", 2, 2, 110, 115)
	FillFromLog(h.ops, h.log) // not in the log: it never happened
	wantPass(t, CheckLinearizable(h.ops, t0, 10*time.Second, ""))
	h.read(1, "x", 3, 50, 120, 125)
	wantFail(t, CheckLinearizable(h.ops, t0, 10*time.Second, ""), "not linearizable")

	h = good()
	unknown.IdempotencyKey = "late"
	h.ops = append(h.ops, unknown)
	h.log = append(h.log, wire.LogEntry{Index: 50, TxID: 5000, IdempotencyKey: "late", Status: wire.StatusCommitted, Versions: map[string]uint64{"x": 3}})
	FillFromLog(h.ops, h.log)
	if r := h.ops[len(h.ops)-1].Result; !r.FromLog || r.Version != 3 {
		t.Fatalf("FillFromLog() = %+v, want committed v3 from the log", r)
	}
	h.read(0, "x", 2, 2, 200, 205)
	h.read(0, "x", 3, 50, 300, 305)
	wantPass(t, CheckLinearizable(h.ops, t0, 10*time.Second, ""))

	h.read(0, "x", 3, 50, 50, 55) // before it started
	wantFail(t, CheckLinearizable(h.ops, t0, 10*time.Second, ""), "not linearizable")
}

func TestCheckAvailability(t *testing.T) {
	h := good()
	faults := []FaultEvent{
		{Kind: FaultKillLeader, Injected: at(15), Healed: at(20), Recovered: at(25), Election: 5 * time.Millisecond},
		{Kind: FaultKillLeader, Injected: at(45), Healed: at(47), Recovered: at(48), Election: 2 * time.Millisecond},
		{Kind: FaultPauseLeader, Injected: at(60), Healed: at(70), Recovered: at(75)},
	}
	r := CheckAvailability(h.ops, faults)
	wantPass(t, r)
	stats := FaultSummary(h.ops, faults)
	if len(stats) != 2 || stats[0].Kind != FaultKillLeader || stats[0].Count != 2 {
		t.Fatalf("FaultSummary() = %+v", stats)
	}
	// From 15ms the first 200 to a write sent later is the cas answered at 30ms;
	// from 45ms it is the put of y answered (202) at 51ms; no 200 after 45ms.
	if got := stats[0].To200Max; got != 15*time.Millisecond {
		t.Errorf("To200Max = %v, want 15ms", got)
	}
	if got := stats[0].No200; got != 1 {
		t.Errorf("No200 = %d, want 1", got)
	}
	if got := stats[0].To202P50; got != 6*time.Millisecond {
		t.Errorf("To202P50 = %v, want 6ms", got)
	}

	// An idle fault (after the workload) counts for its recovery only: no
	// write follows it, which is not a missing 200.
	idle := append(slices.Clone(faults), FaultEvent{Kind: FaultKillLeader, Idle: true, Injected: at(100), Healed: at(101), Recovered: at(130)})
	wantPass(t, CheckAvailability(h.ops, idle))
	stats = FaultSummary(h.ops, idle)
	if stats[0].Count != 3 || stats[0].No200 != 1 || stats[0].RecoveryMax != 30*time.Millisecond {
		t.Fatalf("FaultSummary() with an idle kill-leader = %+v; want 3 kill-leaders, still one without a 200, recovery max 30ms", stats[0])
	}
	idle[3].Recovered = time.Time{}
	wantFail(t, CheckAvailability(h.ops, idle), "kill-leader (idle, after the workload)")

	faults = append(faults, FaultEvent{Kind: FaultQuorumLoss, Nodes: []string{"n1", "n2"}, Injected: at(80), Healed: at(90)})
	wantFail(t, CheckAvailability(h.ops, faults), "did not recover")
	faults[3] = FaultEvent{Kind: FaultPartitionLeader, Injected: at(80), Recovered: at(90), Err: "run \"cut\": exit status 1"}
	wantFail(t, CheckAvailability(h.ops, faults), "exit status 1")
}

func TestParseFaults(t *testing.T) {
	got, err := ParseFaults("kill-leader*3, pause-leader")
	if err != nil || len(got) != 2 || got[0] != (FaultWeight{FaultKillLeader, 3}) || got[1] != (FaultWeight{FaultPauseLeader, 1}) {
		t.Fatalf("ParseFaults() = %v, %v", got, err)
	}
	for _, bad := range []string{"", "kill-all", "kill-leader*0", "kill-leader*x"} {
		if _, err := ParseFaults(bad); err == nil {
			t.Errorf("ParseFaults(%q) = nil error", bad)
		}
	}
	if _, err := ParseFaults(DefaultFaults); err != nil {
		t.Fatalf("ParseFaults(DefaultFaults) = %v", err)
	}
}

func TestScheduleReplays(t *testing.T) {
	w, _ := ParseFaults("kill-leader*3,pause-leader,quorum-loss")
	a, b, c := NewSchedule(7, w), NewSchedule(7, w), NewSchedule(8, w)
	var sa, sb, sc []Fault
	counts := map[Fault]int{}
	for range 10 {
		sa, sb, sc = append(sa, a.Next()), append(sb, b.Next()), append(sc, c.Next())
		counts[sa[len(sa)-1]]++
	}
	if faultNames(sa) != faultNames(sb) {
		t.Fatalf("same seed, different schedules:\n%v\n%v", sa, sb)
	}
	if faultNames(sa) == faultNames(sc) {
		t.Errorf("seeds 7 and 8 give the same schedule %v", sa)
	}
	// Two full rounds: every fault as often as its weight, twice.
	if counts[FaultKillLeader] != 6 || counts[FaultPauseLeader] != 2 || counts[FaultQuorumLoss] != 2 {
		t.Fatalf("counts over two rounds = %v", counts)
	}
}
