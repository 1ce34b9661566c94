package store

import (
	"bytes"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/txid"
)

// leaseEntry is a lease command entry at index, stamped at.
func leaseEntry(index uint64, at int64, c LeaseCommand) Entry {
	return entryAt(index, KindLease, at, 0, EncodeLeaseCommand(c))
}

func acquire(name, holder string, ttl time.Duration) LeaseCommand {
	return LeaseCommand{Op: LeaseAcquire, Name: name, Holder: holder, TTL: ttl}
}

func renew(name, holder string, token uint64, ttl time.Duration) LeaseCommand {
	return LeaseCommand{Op: LeaseRenew, Name: name, Holder: holder, TTL: ttl, Token: token}
}

func release(name, holder string, token uint64) LeaseCommand {
	return LeaseCommand{Op: LeaseRelease, Name: name, Holder: holder, Token: token}
}

// fencedEntry is a tx entry at index, stamped at, with a fence on lease at token.
func fencedEntry(index uint64, at int64, id txid.ID, lease string, token uint64, ops ...Op) Entry {
	tx := Tx{ID: id, Ops: ops, Fence: &Fence{Lease: lease, Token: token}}
	return entryAt(index, KindTx, at, 0, EncodeTx(tx))
}

// leaseOut applies e and returns its lease outcome, failing if there is none.
func leaseOut(t *testing.T, db *DB, e Entry) LeaseOutcome {
	t.Helper()
	r := applyOne(t, db, e)
	if r.Err != nil || r.Kind != KindLease || r.Lease == nil {
		t.Fatalf("Apply(lease entry %d) = %+v, want a lease outcome", e.Index, r)
	}
	return *r.Lease
}

func wantLease(t *testing.T, got LeaseOutcome, status LeaseStatus, holder string, token uint64) {
	t.Helper()
	if got.Status != status || got.Lease.Holder != holder || got.Lease.Token != token {
		t.Fatalf("lease outcome = %+v, want status %d holder %q token %d", got, status, holder, token)
	}
}

const sec = int64(time.Second)

func TestLeaseGrant(t *testing.T) {
	db := openTest(t)
	out := leaseOut(t, db, leaseEntry(3, t0, acquire("consumer/billing", "a", 5*time.Second)))
	wantLease(t, out, LeaseGranted, "a", 3)
	if out.Lease.Expires() != t0+5*sec || out.Now != t0 {
		t.Fatalf("outcome = %+v, want expiry t0+5s at t0", out)
	}
	l, err := db.Reads().Lease("consumer/billing")
	if err != nil || !reflect.DeepEqual(l, out.Lease) {
		t.Fatalf("Lease() = %+v, %v; want %+v", l, err, out.Lease)
	}
	if _, err := db.Reads().Lease("other"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Lease(other) = %v, want ErrNotFound", err)
	}
	all, err := db.Reads().Leases()
	if err != nil || len(all) != 1 || all[0] != out.Lease {
		t.Fatalf("Leases() = %+v, %v", all, err)
	}
}

func TestLeaseAcquireHeldAndIdempotent(t *testing.T) {
	db := openTest(t)
	leaseOut(t, db, leaseEntry(1, t0, acquire("l", "a", 5*time.Second)))
	// Another holder while it is live: refused, the current lease returned.
	out := leaseOut(t, db, leaseEntry(2, t0+sec, acquire("l", "b", 5*time.Second)))
	wantLease(t, out, LeaseHeld, "a", 1)
	// The holder again: the current lease, nothing changed (no new token, no
	// new expiry).
	out = leaseOut(t, db, leaseEntry(3, t0+2*sec, acquire("l", "a", 10*time.Second)))
	wantLease(t, out, LeaseCurrent, "a", 1)
	if out.Lease.Expires() != t0+5*sec {
		t.Fatalf("expiry after a repeated acquire = %d, want t0+5s", out.Lease.Expires()-t0)
	}
}

func TestLeaseRenew(t *testing.T) {
	db := openTest(t)
	leaseOut(t, db, leaseEntry(1, t0, acquire("l", "a", 5*time.Second)))
	out := leaseOut(t, db, leaseEntry(2, t0+4*sec, renew("l", "a", 1, 5*time.Second)))
	wantLease(t, out, LeaseRenewed, "a", 1)
	if out.Lease.Expires() != t0+9*sec {
		t.Fatalf("expiry after renewal = t0+%ds, want t0+9s", (out.Lease.Expires()-t0)/sec)
	}
	// Still live at t0+8s thanks to the renewal: another holder is refused.
	wantLease(t, leaseOut(t, db, leaseEntry(3, t0+8*sec, acquire("l", "b", time.Second))), LeaseHeld, "a", 1)
	// Wrong token, wrong holder: fenced, nothing changed.
	wantLease(t, leaseOut(t, db, leaseEntry(4, t0+8*sec, renew("l", "a", 2, 5*time.Second))), LeaseFenced, "a", 1)
	wantLease(t, leaseOut(t, db, leaseEntry(5, t0+8*sec, renew("l", "b", 1, 5*time.Second))), LeaseFenced, "a", 1)
	// At its expiry a renewal is too late.
	out = leaseOut(t, db, leaseEntry(6, t0+9*sec, renew("l", "a", 1, 5*time.Second)))
	wantLease(t, out, LeaseFenced, "a", 1)
	if out.Lease.Expires() != t0+9*sec {
		t.Fatalf("a refused renewal moved the expiry to t0+%ds", (out.Lease.Expires()-t0)/sec)
	}
}

func TestLeaseExpiryByStampedTime(t *testing.T) {
	tests := []struct {
		name   string
		skew   time.Duration
		refuse int64 // a takeover stamped t0+refuse is refused
		grant  int64 // one stamped t0+grant is granted
	}{
		{"no skew", 0, 5*sec - 1, 5 * sec},
		{"skew 1s", time.Second, 6*sec - 1, 6 * sec},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := openTest(t)
			leaseOut(t, db, leaseEntry(1, t0, acquire("l", "a", 5*time.Second)))
			c := acquire("l", "b", 5*time.Second)
			c.Skew = tt.skew
			wantLease(t, leaseOut(t, db, leaseEntry(2, t0+tt.refuse, c)), LeaseHeld, "a", 1)
			wantLease(t, leaseOut(t, db, leaseEntry(3, t0+tt.grant, c)), LeaseGranted, "b", 3)
		})
	}
}

// TestLeaseClockGoesBack: an entry stamped behind max_time (a new leader with
// a slow clock) is judged at max_time, so time never goes back: a lease that
// expired stays expired, and a renewal is measured from max_time.
func TestLeaseClockGoesBack(t *testing.T) {
	db := openTest(t)
	leaseOut(t, db, leaseEntry(1, t0, acquire("l", "a", 5*time.Second)))
	applyOne(t, db, txEntryAt(2, t0+6*sec, 7, put("x", "1"))) // max_time t0+6s
	out := leaseOut(t, db, leaseEntry(3, t0+sec, acquire("l", "b", 5*time.Second)))
	wantLease(t, out, LeaseGranted, "b", 3)
	if out.Lease.Renewed != t0+6*sec || out.Now != t0+6*sec {
		t.Fatalf("grant stamped t0+1s after max_time t0+6s: %+v, want it at t0+6s", out)
	}
	// The old holder's renewal, stamped earlier still, is fenced.
	wantLease(t, leaseOut(t, db, leaseEntry(4, t0, renew("l", "a", 1, 5*time.Second))), LeaseFenced, "b", 3)
}

func txEntryAt(index uint64, at int64, id txid.ID, ops ...Op) Entry {
	return entryAt(index, KindTx, at, 0, EncodeTx(Tx{ID: id, Ops: ops}))
}

func TestLeaseRelease(t *testing.T) {
	db := openTest(t)
	leaseOut(t, db, leaseEntry(1, t0, acquire("l", "a", 5*time.Second)))
	wantLease(t, leaseOut(t, db, leaseEntry(2, t0, release("l", "b", 1))), LeaseFenced, "a", 1)
	wantLease(t, leaseOut(t, db, leaseEntry(3, t0, release("l", "a", 9))), LeaseFenced, "a", 1)
	if l, err := db.Reads().Lease("l"); err != nil || l.Token != 1 {
		t.Fatalf("Lease() after refused releases = %+v, %v", l, err)
	}
	wantLease(t, leaseOut(t, db, leaseEntry(4, t0, release("l", "a", 1))), LeaseReleased, "", 0)
	if _, err := db.Reads().Lease("l"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Lease() after release = %v, want ErrNotFound", err)
	}
	// Releasing a free lease changes nothing and succeeds.
	wantLease(t, leaseOut(t, db, leaseEntry(5, t0, release("l", "a", 1))), LeaseReleased, "", 0)
	// A new grant right away, to anyone, with a larger token.
	wantLease(t, leaseOut(t, db, leaseEntry(6, t0, acquire("l", "b", time.Second))), LeaseGranted, "b", 6)
}

// TestLeaseReacquireAfterExpiry: the holder itself gets a new token once its
// lease expired, so its writes under the old one stay refused.
func TestLeaseReacquireAfterExpiry(t *testing.T) {
	db := openTest(t)
	leaseOut(t, db, leaseEntry(1, t0, acquire("l", "a", time.Second)))
	wantLease(t, leaseOut(t, db, leaseEntry(2, t0+sec, acquire("l", "a", time.Second))), LeaseGranted, "a", 2)
	r := applyOne(t, db, fencedEntry(3, t0+sec, 10, "l", 1, put("k", "1")))
	wantFenced(t, r, "l", 1, 2)
}

func wantFenced(t *testing.T, r Result, lease string, expected, actual uint64) {
	t.Helper()
	want := &Conflict{Fence: lease, Expected: expected, Actual: actual}
	if r.Outcome.Status != StatusRejected || !reflect.DeepEqual(r.Outcome.Conflict, want) || r.Outcome.Versions != nil {
		t.Fatalf("fenced tx = %+v (conflict %+v), want rejected with %+v", r.Outcome, r.Outcome.Conflict, want)
	}
}

func wantCommitted(t *testing.T, r Result) {
	t.Helper()
	if r.Err != nil || r.Outcome.Status != StatusCommitted {
		t.Fatalf("tx = %+v (conflict %+v), want committed", r, r.Outcome.Conflict)
	}
}

func TestFenceSingle(t *testing.T) {
	db := openTest(t)
	// No lease at all: rejected, actual 0.
	wantFenced(t, applyOne(t, db, fencedEntry(1, t0, 1, "l", 1, put("k", "0"))), "l", 1, 0)
	leaseOut(t, db, leaseEntry(2, t0, acquire("l", "a", 5*time.Second)))
	wantCommitted(t, applyOne(t, db, fencedEntry(3, t0+sec, 2, "l", 2, put("k", "1"))))
	wantFenced(t, applyOne(t, db, fencedEntry(4, t0+sec, 3, "l", 1, put("k", "2"))), "l", 1, 2)
	if kv := mustGet(t, db, "k"); string(kv.Value) != "1" || kv.Version != 1 {
		t.Fatalf("k = %+v, want the fenced write's value only", kv)
	}
	// Expired (t0+5s): rejected, actual 0 (free).
	wantFenced(t, applyOne(t, db, fencedEntry(5, t0+5*sec, 4, "l", 2, put("k", "3"))), "l", 2, 0)
	// The fence conflict is recorded, and reads back, like any rejection.
	for _, id := range []txid.ID{3, 4} {
		o, err := db.Reads().Tx(id)
		if err != nil || o.Status != StatusRejected || o.Conflict == nil || o.Conflict.Fence != "l" || o.Conflict.Key != "" {
			t.Fatalf("Tx(%d) = %+v, %v; want rejected by the fence", id, o, err)
		}
	}
	recs, _, err := db.Reads().Log(0, 10)
	if err != nil || len(recs) != 4 {
		t.Fatalf("Log() = %d records, %v; want 4", len(recs), err)
	}
	if c := recs[2].Conflict; c == nil || *c != (Conflict{Fence: "l", Expected: 1, Actual: 2}) {
		t.Fatalf("log record 4 conflict = %+v", c)
	}
	if f := recs[2].Fence; f == nil || *f != (Fence{Lease: "l", Token: 1}) {
		t.Fatalf("log record 4 fence = %+v, want the transaction's", f)
	}
}

// TestFenceBatch applies the entries in one Apply and one by one: the same
// results, and the fence is checked against the lease as the entries before
// it in the same batch left it.
func TestFenceBatch(t *testing.T) {
	entries := []Entry{
		leaseEntry(1, t0, acquire("l", "a", 5*time.Second)),
		fencedEntry(2, t0, 1, "l", 1, put("k", "a1")),
		leaseEntry(3, t0, release("l", "a", 1)),
		leaseEntry(4, t0, acquire("l", "b", 5*time.Second)),
		fencedEntry(5, t0, 2, "l", 1, put("k", "a2")), // a's late write
		fencedEntry(6, t0, 3, "l", 4, put("k", "b1")),
		{Index: 7, Term: 1, Data: EncodeCommand(Command{Kind: KindTx, Time: t0, Payload: EncodeTx(Tx{ID: 4, Ops: []Op{put("z", "1")}})})},
	}
	batch := openTest(t)
	got := applyOK(t, batch, entries...)
	wantCommitted(t, got[1])
	wantFenced(t, got[4], "l", 1, 4)
	wantCommitted(t, got[5])
	wantCommitted(t, got[6])
	one := openTest(t)
	for i, e := range entries {
		r := applyOne(t, one, e)
		if !reflect.DeepEqual(r, got[i]) {
			t.Fatalf("entry %d alone = %+v, in a batch %+v", e.Index, r, got[i])
		}
	}
	if !reflect.DeepEqual(dump(t, one), dump(t, batch)) {
		t.Fatal("one by one and in a batch give different states")
	}
	if kv := mustGet(t, batch, "k"); string(kv.Value) != "b1" || kv.Version != 2 {
		t.Fatalf("k = %+v, want b1 at version 2", kv)
	}
}

// TestFenceReplayed: a write made under token 1 that reaches the log only
// after the lease moved (parked, forwarded late) is rejected when it is
// applied; a replay of an applied entry changes nothing; a resubmission of a
// transaction that committed under its token answers that outcome.
func TestFenceReplayed(t *testing.T) {
	db := openTest(t)
	leaseOut(t, db, leaseEntry(1, t0, acquire("l", "a", 5*time.Second)))
	early := fencedEntry(2, t0, 1, "l", 1, put("k", "early"))
	wantCommitted(t, applyOne(t, db, early))
	leaseOut(t, db, leaseEntry(3, t0+6*sec, acquire("l", "b", 5*time.Second)))
	// The parked write of a, replayed at index 4.
	wantFenced(t, applyOne(t, db, fencedEntry(4, t0+6*sec, 2, "l", 1, put("k", "late"))), "l", 1, 3)
	// Raft replaying entry 2 after a restart: skipped.
	if r := applyOne(t, db, early); !r.Skipped {
		t.Fatalf("replay of entry 2 = %+v, want skipped", r)
	}
	// The same transaction again at a new index (a client's retry): its
	// recorded outcome, not a new check.
	again := early
	again.Index = 5
	if r := applyOne(t, db, again); !r.Duplicate || r.Outcome.Status != StatusCommitted || r.Outcome.Index != 2 {
		t.Fatalf("resubmission = %+v, want the committed outcome at index 2", r)
	}
	if kv := mustGet(t, db, "k"); string(kv.Value) != "early" || kv.Version != 1 {
		t.Fatalf("k = %+v, want early at version 1", kv)
	}
}

// TestLeaseTokenSurvivesSnapshotRestore: tokens are Raft indexes and the
// leases live in the bbolt file, so a restored (or reopened) store keeps the
// lease and its token, refuses the old holder and grants larger tokens only.
func TestLeaseTokenSurvivesSnapshotRestore(t *testing.T) {
	dir := t.TempDir()
	a := openAt(t, filepath.Join(dir, "a.db"))
	leaseOut(t, a, leaseEntry(10, t0, acquire("l", "a", time.Minute)))
	leaseOut(t, a, leaseEntry(11, t0, release("l", "a", 10)))
	leaseOut(t, a, leaseEntry(12, t0, acquire("l", "b", time.Minute)))
	leaseOut(t, a, leaseEntry(13, t0, acquire("m", "a", time.Minute)))
	snap, err := a.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := snap.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	snap.Release()

	b := openAt(t, filepath.Join(dir, "b.db"))
	leaseOut(t, b, leaseEntry(1, t0, acquire("l", "z", time.Minute))) // state the restore replaces
	if err := b.Restore(&buf); err != nil {
		t.Fatalf("Restore() = %v", err)
	}
	want, _ := a.Reads().Leases()
	if got, err := b.Reads().Leases(); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("restored Leases() = %+v, %v; want %+v", got, err, want)
	}
	wantFenced(t, applyOne(t, b, fencedEntry(14, t0, 1, "l", 10, put("k", "1"))), "l", 10, 12)
	wantCommitted(t, applyOne(t, b, fencedEntry(15, t0, 2, "l", 12, put("k", "2"))))
	out := leaseOut(t, b, leaseEntry(16, t0+2*int64(time.Minute), acquire("l", "c", time.Minute)))
	wantLease(t, out, LeaseGranted, "c", 16)

	// And across a reopen.
	path := filepath.Join(dir, "b.db")
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	c := openAt(t, path)
	if l, err := c.Reads().Lease("l"); err != nil || l.Token != 16 || l.Holder != "c" {
		t.Fatalf("Lease() after reopen = %+v, %v", l, err)
	}
	wantLease(t, leaseOut(t, c, leaseEntry(17, t0+2*int64(time.Minute), acquire("l", "d", time.Second))), LeaseHeld, "c", 16)
}

func TestLeaseCommandRoundTrip(t *testing.T) {
	for _, c := range []LeaseCommand{
		acquire("consumer/billing", "host-1:pid", time.Hour),
		{Op: LeaseRenew, Name: "l", Holder: "h", TTL: time.Second, Token: 1 << 40, Skew: time.Second},
		release(strings.Repeat("n", MaxKeyBytes), strings.Repeat("h", MaxLeaseHolderBytes), 7),
	} {
		b := EncodeLeaseCommand(c)
		got, err := DecodeLeaseCommand(b)
		if err != nil || got != c {
			t.Fatalf("DecodeLeaseCommand(EncodeLeaseCommand(%+v)) = %+v, %v", c, got, err)
		}
	}
}

func TestDecodeLeaseCommandRejects(t *testing.T) {
	ok := acquire("l", "h", time.Second)
	valid := EncodeLeaseCommand(ok)
	mod := func(f func(*LeaseCommand)) []byte {
		c := ok
		f(&c)
		return EncodeLeaseCommand(c)
	}
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"unknown version", append([]byte{2}, valid[1:]...)},
		{"unknown op", mod(func(c *LeaseCommand) { c.Op = 4 })},
		{"op 0", mod(func(c *LeaseCommand) { c.Op = 0 })},
		{"empty name", mod(func(c *LeaseCommand) { c.Name = "" })},
		{"name too long", mod(func(c *LeaseCommand) { c.Name = strings.Repeat("n", MaxKeyBytes+1) })},
		{"empty holder", mod(func(c *LeaseCommand) { c.Holder = "" })},
		{"holder too long", mod(func(c *LeaseCommand) { c.Holder = strings.Repeat("h", MaxLeaseHolderBytes+1) })},
		{"ttl too short", mod(func(c *LeaseCommand) { c.TTL = MinLeaseTTL - 1 })},
		{"ttl too long", mod(func(c *LeaseCommand) { c.TTL = MaxLeaseTTL + 1 })},
		{"acquire with token", mod(func(c *LeaseCommand) { c.Token = 1 })},
		{"renew without token", mod(func(c *LeaseCommand) { c.Op = LeaseRenew })},
		{"release with ttl", mod(func(c *LeaseCommand) { c.Op, c.Token = LeaseRelease, 1 })},
		{"skew too large", mod(func(c *LeaseCommand) { c.Skew = MaxLeaseSkew + 1 })},
		{"truncated", valid[:len(valid)-1]},
		{"trailing byte", append(bytes.Clone(valid), 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if c, err := DecodeLeaseCommand(tt.b); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("DecodeLeaseCommand(%x) = %+v, %v; want ErrCorrupt", tt.b, c, err)
			}
		})
	}
}

// TestFenceTxLayout pins the version 2 layout drawn above EncodeTx, and that
// a transaction without a fence keeps version 1.
func TestFenceTxLayout(t *testing.T) {
	tx := Tx{ID: 0x0102030405060708, IdempotencyKey: "ik", Fence: &Fence{Lease: "l", Token: 300}, Ops: []Op{del("d")}}
	want := []byte{
		2,                                   // version
		1, 2, 3, 4, 5, 6, 7, 8, 2, 'i', 'k', // txid, idem key
		1, 'l', 0xac, 0x02, // fence lease, token 300
		1,            // op count
		2, 0, 1, 'd', // delete
	}
	b := EncodeTx(tx)
	if !bytes.Equal(b, want) {
		t.Fatalf("EncodeTx() = %v, want %v", b, want)
	}
	got, err := DecodeTx(b)
	if err != nil || !reflect.DeepEqual(got, tx) {
		t.Fatalf("DecodeTx() = %+v, %v; want %+v", got, err, tx)
	}
	if plain := EncodeTx(Tx{ID: 1, Ops: []Op{del("d")}}); plain[0] != 1 {
		t.Fatalf("EncodeTx() without a fence has version %d, want 1", plain[0])
	}
	for name, bad := range map[string][]byte{
		"empty fence lease": EncodeTx(Tx{ID: 1, Fence: &Fence{Token: 1}, Ops: []Op{del("d")}}),
		"zero fence token":  EncodeTx(Tx{ID: 1, Fence: &Fence{Lease: "l"}, Ops: []Op{del("d")}}),
	} {
		if _, err := DecodeTx(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecodeTx(%s) = %v, want ErrCorrupt", name, err)
		}
	}
}

// TestFenceChangesSameTx: the same ops under another fence are another
// transaction for an idempotency key.
func TestFenceChangesSameTx(t *testing.T) {
	a := EncodeTx(Tx{ID: 1, IdempotencyKey: "k", Fence: &Fence{Lease: "l", Token: 1}, Ops: []Op{del("d")}})
	b := EncodeTx(Tx{ID: 2, IdempotencyKey: "k", Fence: &Fence{Lease: "l", Token: 2}, Ops: []Op{del("d")}})
	c := EncodeTx(Tx{ID: 3, IdempotencyKey: "k", Fence: &Fence{Lease: "l", Token: 1}, Ops: []Op{del("d")}})
	if SameTx(a, b) || !SameTx(a, c) {
		t.Fatalf("SameTx: other token %v (want false), same fence %v (want true)", SameTx(a, b), SameTx(a, c))
	}
}

// TestLeaseReadsOpenTransaction: with Config.CommitInterval the reads see
// what the last Apply did to a lease, committed or not.
func TestLeaseReadsOpenTransaction(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "state.db"), Config{NoSync: true, CommitInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	leaseOut(t, db, leaseEntry(1, t0, acquire("l", "a", time.Minute)))
	if err := db.Sync(); err != nil {
		t.Fatal(err)
	}
	leaseOut(t, db, leaseEntry(2, t0+sec, renew("l", "a", 1, time.Minute)))
	if l, err := db.Reads().Lease("l"); err != nil || l.Renewed != t0+sec {
		t.Fatalf("Lease() after an uncommitted renewal = %+v, %v", l, err)
	}
	if ls, err := db.Reads().Leases(); err != nil || len(ls) != 1 || ls[0].Renewed != t0+sec {
		t.Fatalf("Leases() after an uncommitted renewal = %+v, %v", ls, err)
	}
	if mt, err := db.Reads().MaxTime(); err != nil || mt != t0+sec {
		t.Fatalf("MaxTime() = %d, %v; want t0+1s", mt, err)
	}
	leaseOut(t, db, leaseEntry(3, t0+sec, release("l", "a", 1)))
	if l, err := db.Reads().Lease("l"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Lease() after an uncommitted release = %+v, %v; want ErrNotFound", l, err)
	}
	if ls, err := db.Reads().Leases(); err != nil || len(ls) != 0 {
		t.Fatalf("Leases() after an uncommitted release = %+v, %v", ls, err)
	}
}
