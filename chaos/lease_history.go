package chaos

import (
	"cmp"
	"slices"
	"time"
)

// LeaseOpKind is what a contender of the lease workload did.
type LeaseOpKind string

// Lease operation kinds.
const (
	LeaseAcquire LeaseOpKind = "acquire" // PUT /v1/leases/{name} without a token
	LeaseRenew   LeaseOpKind = "renew"   // PUT with the token
	LeaseRelease LeaseOpKind = "release" // DELETE
	LeaseWrite   LeaseOpKind = "write"   // POST /v1/tx with a fence
)

// Answers of lease operations (LeaseOp.Answer). A fenced write's answer is
// its status: committed, rejected, pending or unknown (wire.Status*).
const (
	LeaseOK     = "ok"     // granted, renewed or released
	LeaseHeld   = "held"   // 409 lease_held
	LeaseFenced = "fenced" // 409 fenced
	LeaseError  = "error"  // anything else: the outcome is open
)

// LeaseOp is one operation of a lease contender and its answer, as the
// contender saw it. Times are wall-clock times of this machine (contenders
// are processes of their own).
type LeaseOp struct {
	Contender string      `json:"contender"` // the holder name it campaigns under
	Lease     string      `json:"lease"`
	Kind      LeaseOpKind `json:"kind"`
	// Token is the token asked for (renew, release, write) or, for an
	// acquire answered ok, the token granted.
	Token uint64    `json:"token,omitempty"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Answer is one of the Lease* answers, or a write's status.
	Answer string `json:"answer"`
	// Acquired marks an acquire that granted a new token (not the holder's
	// own lease answered again).
	Acquired bool `json:"acquired,omitempty"`
	// Actual is the token the answer named: the lease's token in a renewal's
	// 200, a lease_held or fenced answer, or a rejected write's conflict.
	Actual uint64 `json:"actual,omitempty"`
	// Holder is the holder a lease_held answer named.
	Holder string `json:"holder,omitempty"`
	// IdempotencyKey and Seq identify a write; its key and value are in the
	// log (leaseWriteValue).
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	Seq            int    `json:"seq,omitempty"`
	Err            string `json:"err,omitempty"`
}

// leaseWriteValue is the value of a contender's fenced put: who wrote it
// under which token, so that the log alone tells the holders apart.
type leaseWriteValue struct {
	Holder string `json:"holder"`
	Token  uint64 `json:"token"`
	Seq    int    `json:"seq"`
}

// LeasePauseEvent is what the pause-holder fault did: the contender that
// held Lease with Token when it was SIGSTOPped (FaultEvent.Injected) and
// SIGCONTed (FaultEvent.Healed).
type LeasePauseEvent struct {
	Lease     string `json:"lease"`
	Contender string `json:"contender"`
	Token     uint64 `json:"token"`
}

// readLeaseOps reads a contender's history file: one JSON LeaseOp a line. A
// torn last line (a contender killed mid-write) is left out.
func readLeaseOps(path string) ([]LeaseOp, error) { return readJSONLines[LeaseOp](path) }

// LeaseSpan is one holder's time with a lease, as the report's timeline
// draws it: from the grant's answer until the release, the next grant, or
// the last renewal's answer plus the TTL, whichever is first.
type LeaseSpan struct {
	Lease     string    `json:"lease"`
	Contender string    `json:"contender"`
	Token     uint64    `json:"token"`
	From      time.Time `json:"from"`
	To        time.Time `json:"to"`
}

// leaseSpans derives the spans of ops, by lease and then token.
func leaseSpans(ops []LeaseOp, ttl time.Duration) []LeaseSpan {
	type key struct {
		lease string
		token uint64
	}
	spans := map[key]*LeaseSpan{}
	last := map[key]time.Time{} // the last ok grant or renewal
	released := map[key]time.Time{}
	for _, op := range ops {
		if op.Answer != LeaseOK || op.Token == 0 {
			continue
		}
		k := key{op.Lease, op.Token}
		switch op.Kind {
		case LeaseAcquire, LeaseRenew:
			if s := spans[k]; s == nil {
				spans[k] = &LeaseSpan{Lease: op.Lease, Contender: op.Contender, Token: op.Token, From: op.End}
			} else if op.End.Before(s.From) {
				s.From = op.End
			}
			if op.End.After(last[k]) {
				last[k] = op.End
			}
		case LeaseRelease:
			released[k] = op.End
		}
	}
	var out []LeaseSpan
	for k, s := range spans {
		s.To = last[k].Add(ttl)
		if r, ok := released[k]; ok && r.Before(s.To) {
			s.To = r
		}
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b LeaseSpan) int {
		if c := cmp.Compare(a.Lease, b.Lease); c != 0 {
			return c
		}
		return cmp.Compare(a.Token, b.Token)
	})
	for i := range out {
		if i+1 < len(out) && out[i+1].Lease == out[i].Lease && out[i+1].From.Before(out[i].To) {
			out[i].To = out[i+1].From
		}
		if out[i].To.Before(out[i].From) {
			out[i].To = out[i].From
		}
	}
	return out
}
