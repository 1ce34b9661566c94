package chaos

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
)

// leaseCase is a lease history: the contenders' records, the log and the
// pause-holder faults.
type leaseCase struct {
	ops    []LeaseOp
	log    []wire.LogEntry
	pauses []LeasePause
}

var leaseT0 = time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)

func lat(ms int) time.Time { return leaseT0.Add(time.Duration(ms) * time.Millisecond) }

// fencedEntry is a log entry of holder's fenced write seq under token.
func fencedEntry(index uint64, holder string, token uint64, seq int, status string, actual uint64) wire.LogEntry {
	val, _ := json.Marshal(leaseWriteValue{Holder: holder, Token: token, Seq: seq})
	e := wire.LogEntry{Index: index, IdempotencyKey: fmt.Sprintf("L/w/%s/%d", holder, seq), Status: status,
		Fence: &wire.Fence{Lease: "L", Token: token}, Ops: []wire.Op{{Op: wire.OpPut, Key: "L/w", Value: val}}}
	if status == wire.StatusRejected {
		e.Conflict = &wire.Conflict{Fence: "L", Expected: token, Actual: actual}
	}
	return e
}

func leaseWrite(holder string, token uint64, seq, start, end int, answer string) LeaseOp {
	return LeaseOp{Contender: holder, Lease: "L", Kind: LeaseWrite, Token: token, Seq: seq,
		IdempotencyKey: fmt.Sprintf("L/w/%s/%d", holder, seq), Start: lat(start), End: lat(end), Answer: answer}
}

// goodLeaseCase: a holds L with token 10 and writes; it is paused at +1s
// for 5s; b is granted token 20 at +3.6s and writes; a resumes, its late
// write is refused, its renewal fenced; b releases.
func goodLeaseCase() leaseCase {
	return leaseCase{
		ops: []LeaseOp{
			{Contender: "a", Lease: "L", Kind: LeaseAcquire, Token: 10, Acquired: true, Start: lat(0), End: lat(10), Answer: LeaseOK},
			{Contender: "b", Lease: "L", Kind: LeaseAcquire, Start: lat(20), End: lat(30), Answer: LeaseHeld, Actual: 10, Holder: "a"},
			leaseWrite("a", 10, 1, 100, 110, wire.StatusCommitted),
			leaseWrite("a", 10, 2, 400, 410, wire.StatusCommitted),
			{Contender: "a", Lease: "L", Kind: LeaseRenew, Token: 10, Actual: 10, Start: lat(700), End: lat(710), Answer: LeaseOK},
			// a is stopped from +1000 to +6000.
			{Contender: "a", Lease: "L", Kind: LeaseAcquire, Start: lat(3000), End: lat(3005), Answer: LeaseHeld, Actual: 10, Holder: "a"},
			{Contender: "b", Lease: "L", Kind: LeaseAcquire, Token: 20, Acquired: true, Start: lat(3500), End: lat(3600), Answer: LeaseOK},
			leaseWrite("b", 20, 1, 3700, 3710, wire.StatusCommitted),
			leaseWrite("a", 10, 3, 6001, 6010, wire.StatusRejected),
			{Contender: "a", Lease: "L", Kind: LeaseRenew, Token: 10, Actual: 20, Holder: "b", Start: lat(6002), End: lat(6012), Answer: LeaseFenced},
			{Contender: "b", Lease: "L", Kind: LeaseAcquire, Token: 20, Start: lat(6100), End: lat(6110), Answer: LeaseOK}, // a retried acquire: its own lease again
			{Contender: "b", Lease: "L", Kind: LeaseRelease, Token: 20, Start: lat(7000), End: lat(7010), Answer: LeaseOK},
			{Contender: "a", Lease: "L", Kind: LeaseAcquire, Token: 30, Acquired: true, Start: lat(7100), End: lat(7110), Answer: LeaseOK},
			leaseWrite("a", 30, 4, 7200, 7210, wire.StatusCommitted),
		},
		log: []wire.LogEntry{
			{Index: 5, IdempotencyKey: "other", Status: wire.StatusCommitted, Ops: []wire.Op{{Op: wire.OpPut, Key: "k", Value: json.RawMessage("1")}}},
			fencedEntry(11, "a", 10, 1, wire.StatusCommitted, 0),
			fencedEntry(12, "a", 10, 2, wire.StatusCommitted, 0),
			fencedEntry(21, "b", 20, 1, wire.StatusCommitted, 0),
			fencedEntry(22, "a", 10, 3, wire.StatusRejected, 20),
			fencedEntry(31, "a", 30, 4, wire.StatusCommitted, 0),
		},
		pauses: []LeasePause{{LeasePauseEvent: LeasePauseEvent{Lease: "L", Contender: "a", Token: 10}, Paused: lat(1000), Resumed: lat(6000)}},
	}
}

var leaseBounds = LeaseBounds{Replace: 2*time.Second + leaseReplaceSlack}

func TestCheckLeasesPasses(t *testing.T) {
	cases := map[string]func(c *leaseCase){
		"as is":     func(*leaseCase) {},
		"no pauses": func(c *leaseCase) { c.pauses = nil },
		"a write whose outcome the holder never learned, refused": func(c *leaseCase) {
			c.ops = append(c.ops, leaseWrite("a", 10, 9, 6050, 8000, wire.StatusUnknown))
			c.log = slices.Insert(c.log, 5, fencedEntry(23, "a", 10, 9, wire.StatusRejected, 20))
		},
		"a refused write while the lease was free": func(c *leaseCase) {
			c.ops = append(c.ops, leaseWrite("b", 20, 2, 7020, 7030, wire.StatusRejected))
			c.log = slices.Insert(c.log, 5, fencedEntry(25, "b", 20, 2, wire.StatusRejected, 0))
		},
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			c := goodLeaseCase()
			mutate(&c)
			res, st := checkLeases(c.ops, c.log, c.pauses, leaseBounds)
			if !res.Pass {
				t.Fatalf("CheckLeases failed a good history: %s\n%s", res.Summary, strings.Join(res.Evidence, "\n"))
			}
			if st.Grants != 3 || st.Applied != 4 {
				t.Errorf("stats %+v: want 3 grants and 4 applied writes", st)
			}
		})
	}
	_, st := checkLeases(goodLeaseCase().ops, goodLeaseCase().log, goodLeaseCase().pauses, leaseBounds)
	if st.Pauses != 1 || st.LateWrites != 1 || st.MaxReplace != 2600*time.Millisecond || st.Refused != 1 || st.RenewsFenced != 1 {
		t.Errorf("stats %+v: want one pause replaced after 2.6s, one late write, one refusal, one fenced renewal", st)
	}
}

// TestCheckLeasesFails feeds CheckLeases bad histories, at least one per
// rule; each must fail, quoting the rule it breaks.
func TestCheckLeasesFails(t *testing.T) {
	cases := []struct {
		name, rule string
		mutate     func(c *leaseCase)
	}{
		{"one token granted to two contenders", "rule 1", func(c *leaseCase) {
			c.ops = append(c.ops, LeaseOp{Contender: "b", Lease: "L", Kind: LeaseAcquire, Token: 10, Start: lat(40), End: lat(50), Answer: LeaseOK})
		}},
		{"one token granted as new twice", "rule 1", func(c *leaseCase) {
			c.ops = append(c.ops, LeaseOp{Contender: "a", Lease: "L", Kind: LeaseAcquire, Token: 30, Acquired: true, Start: lat(7300), End: lat(7310), Answer: LeaseOK})
		}},
		{"a later grant with a smaller token", "rule 1", func(c *leaseCase) {
			c.ops = append(c.ops, LeaseOp{Contender: "b", Lease: "L", Kind: LeaseAcquire, Token: 8, Acquired: true, Start: lat(8000), End: lat(8010), Answer: LeaseOK})
		}},
		{"a renewal answered with another token", "rule 1", func(c *leaseCase) {
			c.ops[4].Actual = 11
		}},
		{"the token the log shows goes down", "rule 1", func(c *leaseCase) {
			c.log = append(c.log, fencedEntry(40, "a", 10, 7, wire.StatusRejected, 20))
		}},
		{"a write applied under an old token", "rule 2", func(c *leaseCase) {
			c.log[4] = fencedEntry(22, "a", 10, 3, wire.StatusCommitted, 0) // a's late write, applied after b's grant
			c.pauses = nil
		}},
		{"a write applied under a token from the future", "rule 2", func(c *leaseCase) {
			c.log[1] = fencedEntry(11, "a", 20, 1, wire.StatusCommitted, 0)
		}},
		{"a write answered committed is not in the log", "rule 2", func(c *leaseCase) {
			c.log = slices.Delete(c.log, 3, 4)
		}},
		{"a write answered rejected is applied", "rule 2", func(c *leaseCase) {
			c.ops = append(c.ops, leaseWrite("a", 30, 5, 7300, 7310, wire.StatusRejected))
			c.log = append(c.log, fencedEntry(33, "a", 30, 5, wire.StatusCommitted, 0))
		}},
		{"a write applied after its token was released", "rule 2", func(c *leaseCase) {
			c.ops = append(c.ops, leaseWrite("b", 20, 2, 7050, 7060, wire.StatusCommitted))
			c.log = slices.Insert(c.log, 5, fencedEntry(25, "b", 20, 2, wire.StatusCommitted, 0))
		}},
		{"a refusal that names the write's own token current", "rule 2", func(c *leaseCase) {
			c.ops = append(c.ops, leaseWrite("a", 10, 8, 500, 510, wire.StatusRejected))
			c.log = slices.Insert(c.log, 3, fencedEntry(13, "a", 10, 8, wire.StatusRejected, 10))
		}},
		{"two holders write between the same two grants", "rule 3", func(c *leaseCase) {
			c.log[2] = fencedEntry(12, "b", 10, 2, wire.StatusCommitted, 0) // b wrote under a's token
		}},
		{"a paused holder replaced too late", "rule 4", func(c *leaseCase) {
			c.ops[6].Start, c.ops[6].End = lat(5500), lat(5600)
		}},
		{"a paused holder never replaced", "rule 4", func(c *leaseCase) {
			c.pauses[0].Paused, c.pauses[0].Resumed = lat(7500), lat(12500)
			c.pauses[0].Token = 30
		}},
		{"a paused holder's late write applied", "rule 4", func(c *leaseCase) {
			c.ops[8].Answer = wire.StatusCommitted
			c.log[4] = fencedEntry(22, "a", 10, 3, wire.StatusCommitted, 0)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := goodLeaseCase()
			tc.mutate(&c)
			res := CheckLeases(c.ops, c.log, c.pauses, leaseBounds)
			if res.Pass {
				t.Fatalf("CheckLeases passed a bad history (%s): %s", tc.name, res.Summary)
			}
			if ev := strings.Join(res.Evidence, "\n"); !strings.Contains(ev, tc.rule+":") {
				t.Errorf("evidence names no %s:\n%s", tc.rule, ev)
			}
		})
	}
}

func TestLeaseSpans(t *testing.T) {
	spans := leaseSpans(goodLeaseCase().ops, 2*time.Second)
	want := []LeaseSpan{
		{Lease: "L", Contender: "a", Token: 10, From: lat(10), To: lat(2710)},
		{Lease: "L", Contender: "b", Token: 20, From: lat(3600), To: lat(7010)},
		{Lease: "L", Contender: "a", Token: 30, From: lat(7110), To: lat(9110)},
	}
	if !slices.Equal(spans, want) {
		t.Errorf("leaseSpans() =\n%+v\nwant\n%+v", spans, want)
	}
}

func TestLeaseConfigValidate(t *testing.T) {
	if err := (LeaseConfig{}).Validate(); err != nil {
		t.Errorf("the defaults: %v", err)
	}
	if err := (LeaseConfig{Off: true, Leases: -3}).Validate(); err != nil {
		t.Errorf("Off: %v", err)
	}
	for _, c := range []LeaseConfig{{Leases: 2, Contenders: 3}, {TTL: 500 * time.Millisecond}, {WriteEvery: -1}} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v.Validate() = nil", c)
		}
	}
}
