package chaos

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/txlog/txlog/api/wire"
)

// NameLeases is the name of CheckLeases.
const NameLeases = "leases fence their holders"

// LeaseBounds are the time bounds CheckLeases holds a run to.
type LeaseBounds struct {
	// Replace is how soon after a pause-holder fault's SIGSTOP another
	// contender must have been granted the lease: the TTL, the leaders'
	// clock skew and an election's worth of campaigning (leaseReplaceSlack).
	Replace time.Duration
}

// LeasePause is one pause-holder fault, as CheckLeases reads it.
type LeasePause struct {
	LeasePauseEvent
	Paused, Resumed time.Time
}

// LeaseStats sums up a lease history; the report shows them.
type LeaseStats struct {
	Grants       int           `json:"grants"`
	Renewals     int           `json:"renewals"`        // answered ok
	RenewsFenced int           `json:"renewals_fenced"` // answered fenced
	Releases     int           `json:"releases"`
	Writes       int           `json:"writes"`
	Applied      int           `json:"applied"`     // committed in the log
	Refused      int           `json:"refused"`     // rejected in the log, by the fence
	Pauses       int           `json:"pauses"`      // pause-holder faults that found a holder
	LateWrites   int           `json:"late_writes"` // paused holders' writes under the old token after SIGCONT
	MaxReplace   time.Duration `json:"max_replace"` // the slowest replacement of a paused holder
}

// CheckLeases checks the lease workload's history against the applied log
// (the ground truth of which fenced writes took effect) and the
// pause-holder faults. Tokens are Raft indexes of grants, so a grant's token
// places it in the log among the transactions. The rules:
//
//  1. tokens granted per lease only grow: one token is never granted to two
//     contenders, a grant answered before another was asked for has the
//     smaller token, a renewal keeps its token, and the lease's token a
//     fenced entry shows (its own when applied, the conflict's when refused)
//     never goes down along the log;
//  2. no fenced write is applied with a token other than the lease's current
//     one (the largest token granted below its index), none after its
//     holder released that token, and the contenders' answers agree with
//     the log;
//  3. two holders never both have an applied write between the same two
//     grants, and the writes there are the grant's holder's;
//  4. a holder paused past its TTL is replaced, by another contender with a
//     larger token, within b.Replace of the SIGSTOP, and its writes under
//     the old token sent after the SIGCONT are all refused.
func CheckLeases(ops []LeaseOp, log []wire.LogEntry, pauses []LeasePause, b LeaseBounds) CheckResult {
	res, _ := checkLeases(ops, log, pauses, b)
	return res
}

func checkLeases(ops []LeaseOp, log []wire.LogEntry, pauses []LeasePause, b LeaseBounds) (CheckResult, LeaseStats) {
	var v violations
	var st LeaseStats
	leases := map[string]bool{}
	known := map[string][]uint64{}             // tokens known granted, per lease
	holderOf := map[string]map[uint64]string{} // from ok acquires
	writes := map[string]*LeaseOp{}
	addKnown := func(lease string, t uint64) {
		if t != 0 {
			known[lease] = append(known[lease], t)
		}
	}
	var grants []*LeaseOp
	newGrants := map[[2]any]int{}
	for i := range ops {
		op := &ops[i]
		leases[op.Lease] = true
		switch op.Kind {
		case LeaseAcquire:
			if op.Answer != LeaseOK {
				addKnown(op.Lease, op.Actual)
				continue
			}
			addKnown(op.Lease, op.Token)
			if holderOf[op.Lease] == nil {
				holderOf[op.Lease] = map[uint64]string{}
			}
			if h, ok := holderOf[op.Lease][op.Token]; ok && h != op.Contender {
				v.addf("rule 1: lease %s token %d granted to both %s and %s", op.Lease, op.Token, h, op.Contender)
			}
			holderOf[op.Lease][op.Token] = op.Contender
			if op.Acquired {
				st.Grants++
				grants = append(grants, op)
				k := [2]any{op.Lease, op.Token}
				if newGrants[k]++; newGrants[k] == 2 {
					v.addf("rule 1: lease %s token %d granted as new twice", op.Lease, op.Token)
				}
			}
		case LeaseRenew:
			switch op.Answer {
			case LeaseOK:
				st.Renewals++
				if op.Actual != 0 && op.Actual != op.Token {
					v.addf("rule 1: %s's renewal of lease %s token %d answered with token %d", op.Contender, op.Lease, op.Token, op.Actual)
				}
			case LeaseFenced:
				st.RenewsFenced++
			}
			addKnown(op.Lease, op.Actual)
		case LeaseRelease:
			if op.Answer == LeaseOK {
				st.Releases++
			}
		case LeaseWrite:
			st.Writes++
			if op.IdempotencyKey != "" {
				writes[op.IdempotencyKey] = op
			}
		}
	}
	// A grant answered before another was asked for has the smaller token.
	for _, g1 := range grants {
		for _, g2 := range grants {
			if g1.Lease == g2.Lease && g1.End.Before(g2.Start) && g1.Token >= g2.Token {
				v.addf("rule 1: lease %s granted token %d to %s at %s, then token %d to %s asked for at %s",
					g1.Lease, g1.Token, g1.Contender, g1.End.Format(time.StampMilli), g2.Token, g2.Contender, g2.Start.Format(time.StampMilli))
			}
		}
	}

	// The fenced entries of the workload's leases, in log order.
	var fenced []wire.LogEntry
	for _, e := range log {
		if e.Fence != nil && leases[e.Fence.Lease] {
			fenced = append(fenced, e)
			if e.Status == wire.StatusRejected && e.Conflict != nil {
				addKnown(e.Fence.Lease, e.Conflict.Actual)
			}
		}
	}
	for l := range known {
		slices.Sort(known[l])
		known[l] = slices.Compact(known[l])
	}
	// current returns the largest token of lease granted below index.
	current := func(lease string, index uint64) uint64 {
		ts := known[lease]
		i, _ := slices.BinarySearch(ts, index)
		if i == 0 {
			return 0
		}
		return ts[i-1]
	}
	released := map[[2]any]time.Time{}
	for _, op := range ops {
		if op.Kind == LeaseRelease && op.Answer == LeaseOK {
			k := [2]any{op.Lease, op.Token}
			if t, ok := released[k]; !ok || op.End.Before(t) {
				released[k] = op.End
			}
		}
	}

	lastToken := map[string]uint64{}
	holders := map[[2]any]string{} // (lease, grant token) → the first holder with an applied write
	inLog := map[string]wire.LogEntry{}
	for _, e := range fenced {
		l, tok := e.Fence.Lease, e.Fence.Token
		if e.IdempotencyKey != "" {
			if _, ok := inLog[e.IdempotencyKey]; !ok {
				inLog[e.IdempotencyKey] = e
			}
		}
		shown := uint64(0)
		switch e.Status {
		case wire.StatusCommitted:
			st.Applied++
			shown = tok
		case wire.StatusRejected:
			st.Refused++
			if e.Conflict != nil {
				shown = e.Conflict.Actual
				if shown != 0 && shown == tok {
					v.addf("rule 2: index %d on lease %s refused with its own token %d named current", e.Index, l, tok)
				}
			}
		}
		if shown != 0 {
			if shown < lastToken[l] {
				v.addf("rule 1: lease %s's token went down from %d to %d at index %d", l, lastToken[l], shown, e.Index)
			}
			lastToken[l] = max(lastToken[l], shown)
		}
		if e.Status != wire.StatusCommitted {
			continue
		}
		cur := current(l, e.Index)
		if tok >= e.Index || cur != tok {
			v.addf("rule 2: index %d on lease %s applied under token %d; the lease's token then was %d", e.Index, l, tok, cur)
		}
		if w := writes[e.IdempotencyKey]; w != nil {
			if r, ok := released[[2]any{l, tok}]; ok && w.Start.After(r) {
				v.addf("rule 2: %s's write %s under lease %s token %d, sent after the token was released, was applied at index %d", w.Contender, w.IdempotencyKey, l, tok, e.Index)
			}
		}
		holder := "?"
		if len(e.Ops) == 1 {
			var val leaseWriteValue
			if json.Unmarshal(e.Ops[0].Value, &val) == nil && val.Holder != "" {
				holder = val.Holder
			}
		}
		g := cur
		k := [2]any{l, g}
		if h, ok := holders[k]; !ok {
			holders[k] = holder
		} else if h != holder {
			v.addf("rule 3: lease %s: %s and %s both have applied writes between grant %d and the next (index %d)", l, h, holder, g, e.Index)
		}
		if gh, ok := holderOf[l][g]; ok && gh != holder {
			v.addf("rule 3: lease %s: %s's write applied at index %d, after grant %d to %s", l, holder, e.Index, g, gh)
		}
	}
	// The contenders' answers agree with the log.
	for key, w := range writes {
		e, ok := inLog[key]
		switch {
		case w.Answer == wire.StatusCommitted && (!ok || e.Status != wire.StatusCommitted):
			v.addf("rule 2: %s's write %s answered committed is not applied in the log", w.Contender, key)
		case w.Answer == wire.StatusRejected && ok && e.Status == wire.StatusCommitted:
			v.addf("rule 2: %s's write %s answered rejected is applied at index %d", w.Contender, key, e.Index)
		}
	}

	// Paused holders.
	for _, p := range pauses {
		if p.Token == 0 {
			continue
		}
		st.Pauses++
		var replaced time.Time
		for _, g := range grants {
			if g.Lease == p.Lease && g.Contender != p.Contender && g.Token > p.Token && g.End.After(p.Paused) &&
				(replaced.IsZero() || g.End.Before(replaced)) {
				replaced = g.End
			}
		}
		if replaced.IsZero() {
			v.addf("rule 4: %s, paused at %s holding lease %s token %d, was never replaced", p.Contender, p.Paused.Format(time.StampMilli), p.Lease, p.Token)
		} else {
			took := replaced.Sub(p.Paused)
			st.MaxReplace = max(st.MaxReplace, took)
			if took > b.Replace {
				v.addf("rule 4: %s, paused holding lease %s token %d, replaced only after %v (bound %v)", p.Contender, p.Lease, p.Token, took.Round(time.Millisecond), b.Replace)
			}
		}
		for key, w := range writes {
			if w.Contender != p.Contender || w.Lease != p.Lease || w.Token != p.Token || w.Start.Before(p.Resumed) {
				continue
			}
			st.LateWrites++
			if e, ok := inLog[key]; w.Answer == wire.StatusCommitted || ok && e.Status == wire.StatusCommitted {
				v.addf("rule 4: %s's write %s under lease %s token %d, sent after it resumed, was applied", p.Contender, key, p.Lease, p.Token)
			}
		}
	}

	ok := fmt.Sprintf("%d grants, %d renewals (%d fenced), %d releases; %d fenced writes: %d applied, %d refused; %d paused holders replaced within %v (bound %v), their %d late writes refused",
		st.Grants, st.Renewals, st.RenewsFenced, st.Releases, st.Writes, st.Applied, st.Refused, st.Pauses, st.MaxReplace.Round(time.Millisecond), b.Replace, st.LateWrites)
	return v.result(NameLeases, ok, "lease violations"), st
}
