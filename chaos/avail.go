package chaos

import (
	"fmt"
	"slices"
	"time"
)

// FaultStats sums up how the cluster took one kind of fault.
type FaultStats struct {
	Kind  Fault `json:"kind"`
	Count int   `json:"count"`
	// To200 is the time from injection until the first answer 200 to a write
	// sent after the injection; To202 the same for 202. Faults after which
	// no such answer came are left out and counted in No200 and No202.
	To200P50 time.Duration `json:"to_200_p50"`
	To200Max time.Duration `json:"to_200_max"`
	No200    int           `json:"no_200,omitempty"`
	To202P50 time.Duration `json:"to_202_p50"`
	To202Max time.Duration `json:"to_202_max"`
	No202    int           `json:"no_202,omitempty"`
	// Election is the time until another node led (hand-over for term-leader).
	ElectionP50 time.Duration `json:"election_p50,omitempty"`
	ElectionMax time.Duration `json:"election_max,omitempty"`
	// Recovery is the time from injection until every node was ready again.
	RecoveryP50 time.Duration `json:"recovery_p50"`
	RecoveryMax time.Duration `json:"recovery_max"`
	Failed      int           `json:"failed,omitempty"` // faults with an error or no recovery
}

// firstAnswerAfter returns the time from t until the first answer of class to a
// write that started at or after t; false when there is none.
func firstAnswerAfter(ops []Op, t time.Time, class string) (time.Duration, bool) {
	var best time.Duration
	found := false
	for _, op := range ops {
		if !op.IsWrite() || op.Answer != class || op.Start.Before(t) {
			continue
		}
		if d := op.Answered.Sub(t); !found || d < best {
			best, found = d, true
		}
	}
	return best, found
}

// FaultSummary computes FaultStats for every kind of fault in faults, in the
// order of AllFaults.
func FaultSummary(ops []Op, faults []FaultEvent) []FaultStats {
	type acc struct{ to200, to202, election, recovery []time.Duration }
	accs := map[Fault]*acc{}
	stats := map[Fault]*FaultStats{}
	for _, f := range faults {
		s, a := stats[f.Kind], accs[f.Kind]
		if s == nil {
			s, a = &FaultStats{Kind: f.Kind}, &acc{}
			stats[f.Kind], accs[f.Kind] = s, a
		}
		s.Count++
		if f.Err != "" || f.Recovered.IsZero() {
			s.Failed++
		}
		if !f.Injected.IsZero() && !f.Recovered.IsZero() {
			a.recovery = append(a.recovery, f.Recovered.Sub(f.Injected))
		}
		if f.Injected.IsZero() || f.Idle {
			continue // no write was sent after an idle fault
		}
		if d, ok := firstAnswerAfter(ops, f.Injected, AnswerOK); ok {
			a.to200 = append(a.to200, d)
		} else {
			s.No200++
		}
		if d, ok := firstAnswerAfter(ops, f.Injected, AnswerPending); ok {
			a.to202 = append(a.to202, d)
		} else {
			s.No202++
		}
		if f.Election > 0 {
			a.election = append(a.election, f.Election)
		}
	}
	var out []FaultStats
	for _, k := range AllFaults {
		s := stats[k]
		if s == nil {
			continue
		}
		a := accs[k]
		s.To200P50, s.To200Max = percentiles(a.to200)
		s.To202P50, s.To202Max = percentiles(a.to202)
		s.ElectionP50, s.ElectionMax = percentiles(a.election)
		s.RecoveryP50, s.RecoveryMax = percentiles(a.recovery)
		out = append(out, *s)
	}
	return out
}

// CheckAvailability reports the unavailability after each kind of fault and
// fails when a fault could not be injected or undone, or the cluster did not
// recover from it (a leader and every node ready) within the recovery timeout.
func CheckAvailability(ops []Op, faults []FaultEvent) CheckResult {
	var v violations
	for _, f := range faults {
		kind := string(f.Kind)
		if f.Idle {
			kind += " (idle, after the workload)"
		}
		switch {
		case f.Err != "":
			v.addf("%s on %v at %s: %s", kind, f.Nodes, f.Injected.Format(time.StampMilli), f.Err)
		case f.Recovered.IsZero():
			v.addf("%s on %v at %s: the cluster did not recover", kind, f.Nodes, f.Injected.Format(time.StampMilli))
		}
	}
	stats := FaultSummary(ops, faults)
	var lines []string
	for _, s := range stats {
		lines = append(lines, fmt.Sprintf("%s ×%d: to 200 p50 %s max %s; to 202 p50 %s max %s; new leader p50 %s max %s; recovered p50 %s max %s",
			s.Kind, s.Count, ms(s.To200P50), ms(s.To200Max), ms(s.To202P50), ms(s.To202Max),
			ms(s.ElectionP50), ms(s.ElectionMax), ms(s.RecoveryP50), ms(s.RecoveryMax)))
	}
	res := v.result(NameAvailability, fmt.Sprintf("the cluster recovered from all %d faults", len(faults)), "faults without recovery")
	if res.Pass {
		res.Evidence = lines
	} else {
		res.Evidence = slices.Concat(res.Evidence, lines)
	}
	return res
}
