package chaos

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is the outcome of a run: what was done, what happened, and the
// checkers' verdicts. It is written as JSON, as HTML and as a text summary.
type Report struct {
	Seed     uint64        `json:"seed"`
	Mode     string        `json:"mode"` // "local" or "targets"
	Redis    string        `json:"redis"`
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration"`
	Counts   OpCounts      `json:"counts"`
	// Acks is the mix of ack levels the clients' writes drew from.
	Acks []AckWeight `json:"acks"`
	// LeaderKills counts SIGKILLs of the leader, in all faults together.
	LeaderKills int `json:"leader_kills"`
	// PowerLosses counts the powerloss faults; NotRestarted the nodes that
	// could not be started again after any fault.
	PowerLosses  int          `json:"power_losses"`
	NotRestarted int          `json:"not_restarted"`
	Faults       []FaultEvent `json:"faults"`
	// FaultsConfigured are the fault kinds the run was given (--faults);
	// FaultsNeverInjected those of them that never ran (left out, or never
	// drawn in the time).
	FaultsConfigured    []Fault        `json:"faults_configured"`
	FaultsNeverInjected []Fault        `json:"faults_never_injected"`
	FaultStats          []FaultStats   `json:"fault_stats"`
	Leaders             []LeaderChange `json:"leaders"`
	Series              []Bucket       `json:"series"`
	Checks              []CheckResult  `json:"checks"`
	// Leases is the lease workload's part; nil when it did not run.
	Leases *LeaseReport `json:"leases,omitempty"`
	// Consumers is the consumer workload's part; nil when it did not run.
	Consumers *ConsumerReport `json:"consumers,omitempty"`
	// Dir holds the cluster's data and logs (local mode) and other artifacts.
	Dir string `json:"dir"`
}

// OpCounts counts the operations of a run by what their first answer was.
type OpCounts struct {
	Total  int `json:"total"`
	Writes int `json:"writes"`
	Reads  int `json:"reads"`
	OK     int `json:"ok_200"`
	// Accepted is the writes answered 202 on their first attempt.
	Accepted int `json:"accepted_202"`
	Rejected int `json:"rejected_409"`
	// Indeterminate is the writes whose first attempt left the outcome open.
	Indeterminate int `json:"indeterminate"`
	// StillUnknown is the writes whose outcome no client learned; the final log
	// decided them.
	StillUnknown int `json:"still_unknown"`
	ReadErrors   int `json:"read_errors"`
	Failed       int `json:"failed_writes"`
}

// Bucket is one second of the run: answers by class, by the time they came.
type Bucket struct {
	T        int `json:"t"` // seconds since the start
	OK       int `json:"ok"`
	Accepted int `json:"accepted"`
	Rejected int `json:"rejected"`
	Reads    int `json:"reads"`
	Errors   int `json:"errors"`
}

// number numbers the checkers from 1, for every form of the report.
func (r *Report) number() {
	for i := range r.Checks {
		r.Checks[i].Number = i + 1
	}
}

// neverInjected returns the kinds of configured that no event of faults
// injected (the idle leader change after the workload does not count).
func neverInjected(configured []FaultWeight, faults []FaultEvent) (kinds, never []Fault) {
	for _, w := range configured {
		if slices.Contains(kinds, w.Fault) {
			continue
		}
		kinds = append(kinds, w.Fault)
		if !slices.ContainsFunc(faults, func(f FaultEvent) bool { return f.Kind == w.Fault && !f.Idle && !f.Injected.IsZero() }) {
			never = append(never, w.Fault)
		}
	}
	return kinds, never
}

// NameAllFaults is the checker --require-all-faults adds.
const NameAllFaults = "every configured fault kind injected"

// CheckAllFaults fails when a configured fault kind never ran
// (--require-all-faults).
func CheckAllFaults(configured, never []Fault) CheckResult {
	c := CheckResult{Name: NameAllFaults, Pass: len(never) == 0,
		Summary: fmt.Sprintf("%d of %d configured fault kinds injected", len(configured)-len(never), len(configured))}
	for _, f := range never {
		c.Evidence = append(c.Evidence, fmt.Sprintf("%s: never injected", f))
	}
	return c
}

// neverLine is the summary's line about the fault kinds that never ran.
func (r *Report) neverLine() string {
	if len(r.FaultsNeverInjected) == 0 {
		return fmt.Sprintf("fault kinds never injected: none (of %d configured)\n", len(r.FaultsConfigured))
	}
	return fmt.Sprintf("fault kinds never injected: %d of %d configured: %s\n", len(r.FaultsNeverInjected), len(r.FaultsConfigured), faultNames(r.FaultsNeverInjected))
}

// seconds is d in seconds, the unit of every duration in the JSON report.
func seconds(d time.Duration) float64 { return d.Seconds() }

// MarshalJSON writes the durations in seconds.
func (r Report) MarshalJSON() ([]byte, error) {
	type plain Report
	return json.Marshal(struct {
		plain
		Duration float64 `json:"duration"`
	}{plain(r), seconds(r.Duration)})
}

// MarshalJSON writes the durations in seconds.
func (s FaultStats) MarshalJSON() ([]byte, error) {
	type plain FaultStats
	return json.Marshal(struct {
		plain
		To200P50    float64 `json:"to_200_p50"`
		To200Max    float64 `json:"to_200_max"`
		To202P50    float64 `json:"to_202_p50"`
		To202Max    float64 `json:"to_202_max"`
		ElectionP50 float64 `json:"election_p50,omitempty"`
		ElectionMax float64 `json:"election_max,omitempty"`
		RecoveryP50 float64 `json:"recovery_p50"`
		RecoveryMax float64 `json:"recovery_max"`
	}{plain(s), seconds(s.To200P50), seconds(s.To200Max), seconds(s.To202P50), seconds(s.To202Max),
		seconds(s.ElectionP50), seconds(s.ElectionMax), seconds(s.RecoveryP50), seconds(s.RecoveryMax)})
}

// MarshalJSON writes the durations in seconds.
func (f FaultEvent) MarshalJSON() ([]byte, error) {
	type plain FaultEvent
	return json.Marshal(struct {
		plain
		Election float64 `json:"election,omitempty"`
	}{plain(f), seconds(f.Election)})
}

// Failed reports whether a checker failed.
func (r *Report) Failed() bool {
	for _, c := range r.Checks {
		if !c.Pass {
			return true
		}
	}
	return false
}

// countOps fills in OpCounts.
func countOps(ops []Op) OpCounts {
	var c OpCounts
	for _, op := range ops {
		c.Total++
		if !op.IsWrite() {
			c.Reads++
			if op.Answer == AnswerFailed {
				c.ReadErrors++
			}
			continue
		}
		c.Writes++
		switch op.Answer {
		case AnswerOK:
			c.OK++
		case AnswerPending:
			c.Accepted++
		case AnswerRejected:
			c.Rejected++
		case AnswerUnknown:
			c.Indeterminate++
		case AnswerFailed:
			c.Failed++
		}
		if op.End.IsZero() && op.Answer != AnswerFailed {
			c.StillUnknown++
		}
	}
	return c
}

// series buckets the answers per second from start.
func series(ops []Op, start time.Time, d time.Duration) []Bucket {
	n := int(d/time.Second) + 1
	out := make([]Bucket, n)
	for i := range out {
		out[i].T = i
	}
	for _, op := range ops {
		if op.Answered.IsZero() {
			continue
		}
		i := int(op.Answered.Sub(start) / time.Second)
		if i < 0 || i >= n {
			continue
		}
		b := &out[i]
		switch {
		case op.Answer == AnswerFailed || op.Answer == AnswerUnknown:
			b.Errors++
		case !op.IsWrite():
			b.Reads++
		case op.Answer == AnswerOK:
			b.OK++
		case op.Answer == AnswerPending:
			b.Accepted++
		case op.Answer == AnswerRejected:
			b.Rejected++
		}
	}
	return out
}

// ms formats d to the millisecond, and 0 as "–" (nothing measured).
func ms(d time.Duration) string {
	if d == 0 {
		return "–"
	}
	return d.Round(time.Millisecond).String()
}

// WriteJSON writes the report as indented JSON to path.
func (r *Report) WriteJSON(path string) error {
	r.number()
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// WriteSummary writes the human summary of the run.
func (r *Report) WriteSummary(w io.Writer) error {
	r.number()
	var b strings.Builder
	c := r.Counts
	fmt.Fprintf(&b, "chaos run: seed %d, %s cluster, redis %s, %v\n", r.Seed, r.Mode, r.Redis, r.Duration.Round(time.Second))
	fmt.Fprintf(&b, "operations: %d (%d writes, %d reads): %d×200, %d×202, %d×409, %d indeterminate (%d never learned, decided by the log), %d read errors, %d refused\n",
		c.Total, c.Writes, c.Reads, c.OK, c.Accepted, c.Rejected, c.Indeterminate, c.StillUnknown, c.ReadErrors, c.Failed)
	if len(r.Acks) > 0 {
		fmt.Fprintf(&b, "ack mix of the writes: %s\n", FormatAcks(r.Acks))
	}
	fmt.Fprintf(&b, "faults: %d, leader SIGKILLs: %d, leader changes seen: %d\n", len(r.Faults), r.LeaderKills, max(0, len(r.Leaders)-1))
	b.WriteString(r.neverLine())
	if r.PowerLosses > 0 || r.NotRestarted > 0 {
		b.WriteString(r.powerLossLine())
	}
	if c := r.Consumers; c != nil {
		st := c.Stats
		fmt.Fprintf(&b, "consumers: %d of group %s: %d source entries, %d projected, %d batches, %d offset commits in %d terms, %d late writes, %d fenced-out entries refused, %d offset reads, %d paused consumers\n",
			c.Consumers, c.Group, st.Source, st.Projected, c.Batches, st.Commits, st.Terms, c.LateWrites, st.Refused, st.Reads, c.Pauses)
	}
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nFAULT\tCOUNT\tTO 200 p50/max\tTO 202 p50/max\tNEW LEADER p50/max\tRECOVERED p50/max\tFAILED")
	for _, s := range r.FaultStats {
		fmt.Fprintf(tw, "%s\t%d\t%s / %s\t%s / %s\t%s / %s\t%s / %s\t%d\n", s.Kind, s.Count,
			ms(s.To200P50), ms(s.To200Max), ms(s.To202P50), ms(s.To202Max),
			ms(s.ElectionP50), ms(s.ElectionMax), ms(s.RecoveryP50), ms(s.RecoveryMax), s.Failed)
	}
	tw.Flush()
	b.WriteString("\ncheckers:\n")
	for _, ch := range r.Checks {
		verdict := "PASS"
		if !ch.Pass {
			verdict = "FAIL"
		}
		fmt.Fprintf(&b, "  %d. %s  %s: %s\n", ch.Number, verdict, ch.Name, ch.Summary)
		if !ch.Pass {
			for _, e := range ch.Evidence {
				fmt.Fprintf(&b, "       %s\n", e)
			}
		}
		for _, f := range ch.Files {
			fmt.Fprintf(&b, "       see %s\n", f)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// powerLossLine sums up the power losses: by victims, by mode, the directory
// rule, what was dropped, and the nodes that could not restart.
func (r *Report) powerLossLine() string {
	targets, modes, dirs := map[string]int{}, map[string]int{}, map[string]int{}
	dirtyPages, written, dirOps := 0, 0, 0
	for _, f := range r.Faults {
		pl := f.PowerLoss
		if pl == nil {
			continue
		}
		targets[pl.Target]++
		modes[string(pl.Mode)]++
		dirs[string(pl.Dirs)]++
		for _, l := range pl.Losses {
			dirtyPages += l.DirtyPages
			written += l.WrittenPages
			dirOps += l.DirOps
		}
	}
	return fmt.Sprintf("power losses: %d (all nodes %d, leader %d, leader+follower %d; mode all %d, torn %d; dirs %s): %d unsynced pages (%d written back torn) and %d directory changes dropped; nodes that could not restart: %d\n",
		r.PowerLosses, targets[PowerLossAll], targets[PowerLossLeader], targets[PowerLossLeaderFollower],
		modes["all"], modes["torn"], counted(dirs), dirtyPages, written, dirOps, r.NotRestarted)
}

// counted writes m as "k1 n1, k2 n2" in key order, or "none".
func counted(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// MarshalJSON writes the durations in seconds.
func (l LeaseReport) MarshalJSON() ([]byte, error) {
	type plain LeaseReport
	return json.Marshal(struct {
		plain
		TTL float64 `json:"ttl"`
	}{plain(l), seconds(l.TTL)})
}

// MarshalJSON writes the durations in seconds.
func (s LeaseStats) MarshalJSON() ([]byte, error) {
	type plain LeaseStats
	return json.Marshal(struct {
		plain
		MaxReplace float64 `json:"max_replace"`
	}{plain(s), seconds(s.MaxReplace)})
}

// MarshalJSON writes the durations in seconds.
func (c ConsumerReport) MarshalJSON() ([]byte, error) {
	type plain ConsumerReport
	return json.Marshal(struct {
		plain
		TTL float64 `json:"ttl"`
	}{plain(c), seconds(c.TTL)})
}
