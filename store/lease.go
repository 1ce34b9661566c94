package store

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Leases are replicated state: a lease command (KindLease) grants, renews or
// releases a named lease, and a transaction may carry a Fence that Apply
// checks against the lease. Everything is decided from the leader-stamped
// time of the entries (Command.Time, through the dedup clock max_time, which
// never goes back), never from the applying node's clock:
//
//   - now is max_time after the entry's own time is observed: the largest
//     leader time any applied entry carried.
//   - A lease granted or renewed by an entry stamped t with TTL d expires at
//     t+d: it is live while now < t+d. Renewals, fence checks and reads treat
//     it as expired from then on.
//   - It is granted to another holder only once now >= t+d+skew, where skew
//     is the leader's bound on how far the clocks of two leaders differ
//     (LeaseCommand.Skew, stamped by the leader like the dedup window). So a
//     new leader whose clock runs ahead of the old one's by up to skew never
//     hands a lease to someone else before the old holder's deadline. A new
//     leader whose clock runs behind stamps times below max_time, which then
//     stands still until its clock catches up: a lease then lasts up to that
//     skew longer in real time, never less. A leader change does nothing else
//     to a lease: its expiry is in the state, not in a timer.
//   - A grant's token is the Raft index of the entry that granted it. Indexes
//     only grow, so a name's tokens only grow and none is used twice, after
//     releases, restarts, snapshots and log compaction alike: the leases
//     bucket is part of the bbolt file that a snapshot carries.

// Lease limits, checked by DecodeLeaseCommand.
const (
	MinLeaseTTL         = time.Second
	MaxLeaseTTL         = time.Hour
	MaxLeaseHolderBytes = 128
	// MaxLeaseSkew bounds LeaseCommand.Skew.
	MaxLeaseSkew = time.Minute
)

// LeaseOp says what a LeaseCommand does. The numbers are part of the
// encoding and never change.
type LeaseOp uint8

// Lease ops.
const (
	// LeaseAcquire grants the lease to Holder if it is free, expired (by
	// now >= expiry+Skew), or held by Holder itself (then nothing changes).
	LeaseAcquire LeaseOp = 1
	// LeaseRenew extends the lease by TTL from now if Holder holds it with
	// Token and it has not expired.
	LeaseRenew LeaseOp = 2
	// LeaseRelease frees the lease if Holder holds it with Token (expired or
	// not); a free lease stays free.
	LeaseRelease LeaseOp = 3
)

// LeaseCommand is the payload of a KindLease Command.
type LeaseCommand struct {
	Op     LeaseOp
	Name   string        // the lease's name: the rules of a key
	Holder string        // opaque, 1 to MaxLeaseHolderBytes bytes
	TTL    time.Duration // acquire and renew: MinLeaseTTL to MaxLeaseTTL; release: 0
	Token  uint64        // renew and release: the holder's token; acquire: 0
	// Skew is the leader's bound on the difference between two leaders'
	// clocks: a held lease goes to another holder only Skew after it
	// expired. 0 to MaxLeaseSkew.
	Skew time.Duration
}

// Lease is a lease's state. Times are leader times, Unix nanoseconds.
type Lease struct {
	Name    string
	Holder  string
	Token   uint64        // the Raft index of the grant
	TTL     time.Duration // of the grant or the last renewal
	Granted int64         // the time of the grant
	Renewed int64         // the time of the grant or the last renewal
}

// Expires returns the leader time at which the lease expires.
func (l Lease) Expires() int64 { return addTime(l.Renewed, l.TTL) }

// LiveAt reports whether the lease is held at leader time now.
func (l Lease) LiveAt(now int64) bool { return l.Token != 0 && now < l.Expires() }

// LeaseStatus says what a lease command did.
type LeaseStatus uint8

// Lease statuses.
const (
	LeaseGranted  LeaseStatus = 1 // a new grant: a new token
	LeaseCurrent  LeaseStatus = 2 // an acquire by the holder: nothing changed
	LeaseRenewed  LeaseStatus = 3
	LeaseReleased LeaseStatus = 4 // released, or it was free already
	LeaseHeld     LeaseStatus = 5 // refused: another holder has it
	LeaseFenced   LeaseStatus = 6 // refused: not this holder's token, or expired
)

// LeaseOutcome is the Result of a lease command: what it did and the lease's
// state after it (Token 0 when free). Now is the leader time it was decided
// at, for the time left: Lease.Expires() - Now.
type LeaseOutcome struct {
	Status LeaseStatus
	Lease  Lease
	Now    int64
}

// Fence is a transaction's condition on a lease: it applies only if the
// lease is held, unexpired, with exactly Token when the entry is applied.
type Fence struct {
	Lease string
	Token uint64
}

// ErrLeaseNotFound is what Lease returns for a lease that is free.
var ErrLeaseNotFound = fmt.Errorf("lease %w", ErrNotFound)

// EncodeLeaseCommand encodes a LeaseCommand.
//
//	+---------+--------+--------------+------+----------------+--------+----------+------------+-----------+
//	| ver (1) | op (1) | nameLen (uv) | name | holderLen (uv) | holder | ttl (uv) | token (uv) | skew (uv) |
//	+---------+--------+--------------+------+----------------+--------+----------+------------+-----------+
//
// ttl and skew are in nanoseconds.
func EncodeLeaseCommand(c LeaseCommand) []byte {
	b := make([]byte, 0, 2+5*binary.MaxVarintLen64+len(c.Name)+len(c.Holder))
	b = append(b, codecVersion, byte(c.Op))
	b = appendString(b, c.Name)
	b = appendString(b, c.Holder)
	b = binary.AppendUvarint(b, uint64(c.TTL))
	b = binary.AppendUvarint(b, c.Token)
	return binary.AppendUvarint(b, uint64(c.Skew))
}

// DecodeLeaseCommand decodes EncodeLeaseCommand bytes; bad input gives an
// error wrapping ErrCorrupt. It checks the op, the name (1 to MaxKeyBytes
// bytes), the holder (1 to MaxLeaseHolderBytes bytes), the TTL (MinLeaseTTL
// to MaxLeaseTTL for acquire and renew, 0 for release), the token (0 for
// acquire, not 0 otherwise) and the skew (at most MaxLeaseSkew).
func DecodeLeaseCommand(b []byte) (LeaseCommand, error) {
	d := decoder{what: "lease command", b: b}
	d.version()
	var c LeaseCommand
	c.Op = LeaseOp(d.u8("op"))
	if d.err == nil && (c.Op < LeaseAcquire || c.Op > LeaseRelease) {
		d.fail("unknown op %d", c.Op)
	}
	c.Name = string(d.bytes("name", MaxKeyBytes))
	if d.err == nil && c.Name == "" {
		d.fail("empty name")
	}
	c.Holder = string(d.bytes("holder", MaxLeaseHolderBytes))
	if d.err == nil && c.Holder == "" {
		d.fail("empty holder")
	}
	ttl := d.uvarint("ttl")
	switch {
	case d.err != nil:
	case c.Op == LeaseRelease && ttl != 0:
		d.fail("release with ttl %d", ttl)
	case c.Op != LeaseRelease && (ttl < uint64(MinLeaseTTL) || ttl > uint64(MaxLeaseTTL)):
		d.fail("ttl %v not within %v to %v", time.Duration(ttl), MinLeaseTTL, MaxLeaseTTL)
	}
	c.TTL = time.Duration(ttl)
	c.Token = d.uvarint("token")
	switch {
	case d.err != nil:
	case c.Op == LeaseAcquire && c.Token != 0:
		d.fail("acquire with token %d", c.Token)
	case c.Op != LeaseAcquire && c.Token == 0:
		d.fail("zero token")
	}
	skew := d.uvarint("skew")
	if d.err == nil && skew > uint64(MaxLeaseSkew) {
		d.fail("skew %v over %v", time.Duration(skew), MaxLeaseSkew)
	}
	c.Skew = time.Duration(skew)
	if err := d.finish(); err != nil {
		return LeaseCommand{}, err
	}
	return c, nil
}

// bucketLeases holds the leases: name → encodeLease bytes. Apply creates it
// with the first lease command, so a file without one (every file before
// leases) has no lease, and a store that knows no leases ignores it.
var bucketLeases = []byte("leases")

// encodeLease encodes a lease's state, the value of its name in the leases
// bucket:
//
//	+---------+----------------+--------+------------+----------+-------------+-------------+
//	| ver (1) | holderLen (uv) | holder | token (uv) | ttl (uv) | granted (8) | renewed (8) |
//	+---------+----------------+--------+------------+----------+-------------+-------------+
func encodeLease(l Lease) []byte {
	b := make([]byte, 0, 1+3*binary.MaxVarintLen64+len(l.Holder)+16)
	b = append(b, codecVersion)
	b = appendString(b, l.Holder)
	b = binary.AppendUvarint(b, l.Token)
	b = binary.AppendUvarint(b, uint64(l.TTL))
	b = binary.BigEndian.AppendUint64(b, uint64(l.Granted))
	return binary.BigEndian.AppendUint64(b, uint64(l.Renewed))
}

func decodeLease(name string, v []byte) (Lease, error) {
	d := decoder{what: "lease", key: fmt.Sprintf("%q", name), b: v}
	d.version()
	l := Lease{Name: name}
	l.Holder = string(d.bytes("holder", MaxLeaseHolderBytes))
	l.Token = d.uvarint("token")
	l.TTL = time.Duration(d.uvarint("ttl"))
	l.Granted = int64(d.u64("granted"))
	l.Renewed = int64(d.u64("renewed"))
	if d.err == nil && l.Token == 0 {
		d.fail("zero token")
	}
	if err := d.finish(); err != nil {
		return Lease{}, err
	}
	return l, nil
}

// addTime returns t+d, saturating at math.MaxInt64.
func addTime(t int64, d time.Duration) int64 {
	if d > 0 && t > math.MaxInt64-int64(d) {
		return math.MaxInt64
	}
	return t + int64(d)
}

// leaseBucket returns the leases bucket, creating it when create is set; nil if
// it does not exist and create is not set.
func (a *applier) leaseBucket(create bool) (*bolt.Bucket, error) {
	if !a.leasesRead {
		a.leases, a.leasesRead = a.btx.Bucket(bucketLeases), true
	}
	if a.leases != nil || !create {
		return a.leases, nil
	}
	b, err := a.btx.CreateBucketIfNotExists(bucketLeases)
	if err != nil {
		return nil, err
	}
	a.leases = b
	return b, nil
}

// lease reads the lease name; Token 0 when there is none.
func (a *applier) lease(name string) (Lease, error) {
	b, err := a.leaseBucket(false)
	if err != nil || b == nil {
		return Lease{}, err
	}
	v := b.Get([]byte(name))
	if v == nil {
		return Lease{}, nil
	}
	return decodeLease(name, v)
}

// applyLease applies a lease command at entry e, stamped c.Time.
func (a *applier) applyLease(e Entry, c Command, lc LeaseCommand) (Result, error) {
	a.observe(c.Time)
	now := a.st.maxTime
	cur, err := a.lease(lc.Name)
	if err != nil {
		return Result{}, err
	}
	out := &LeaseOutcome{Lease: cur, Now: now}
	res := Result{Kind: KindLease, Lease: out}
	live := cur.LiveAt(now)
	mine := cur.Token != 0 && cur.Holder == lc.Holder
	switch lc.Op {
	case LeaseAcquire:
		switch {
		case live && mine:
			out.Status = LeaseCurrent
			return res, nil
		case cur.Token != 0 && !mine && now < addTime(cur.Expires(), lc.Skew):
			out.Status = LeaseHeld
			return res, nil
		}
		out.Status = LeaseGranted
		out.Lease = Lease{Name: lc.Name, Holder: lc.Holder, Token: e.Index, TTL: lc.TTL, Granted: now, Renewed: now}
	case LeaseRenew:
		if !live || !mine || cur.Token != lc.Token {
			out.Status = LeaseFenced
			return res, nil
		}
		out.Status = LeaseRenewed
		out.Lease.TTL, out.Lease.Renewed = lc.TTL, now
	case LeaseRelease:
		if cur.Token == 0 {
			out.Status = LeaseReleased
			return res, nil
		}
		if !mine || cur.Token != lc.Token {
			out.Status = LeaseFenced
			return res, nil
		}
		out.Status, out.Lease = LeaseReleased, Lease{Name: lc.Name}
		b, err := a.leaseBucket(false)
		if err != nil {
			return Result{}, err
		}
		return res, b.Delete([]byte(lc.Name))
	default:
		return Result{}, fmt.Errorf("lease op %d", lc.Op) // DecodeLeaseCommand rejects it
	}
	b, err := a.leaseBucket(true)
	if err != nil {
		return Result{}, err
	}
	return res, b.Put([]byte(lc.Name), encodeLease(out.Lease))
}

// fenceConflict checks f at the current leader time: nil if the lease is
// live with f.Token, else the conflict, whose Actual is the lease's token, 0
// if it is free or expired.
func (a *applier) fenceConflict(f *Fence) (*Conflict, error) {
	l, err := a.lease(f.Lease)
	if err != nil {
		return nil, err
	}
	if l.LiveAt(a.st.maxTime) && l.Token == f.Token {
		return nil, nil
	}
	actual := l.Token
	if !l.LiveAt(a.st.maxTime) {
		actual = 0
	}
	return &Conflict{Fence: f.Lease, Expected: f.Token, Actual: actual}, nil
}

// Lease returns the lease name as recorded by the last Apply (with
// Config.CommitInterval, in the transaction Apply left open), expired or not (the caller
// judges expiry against its clock or MaxTime), or ErrLeaseNotFound when it
// is free.
func (r *Reader) Lease(name string) (Lease, error) {
	db := r.db
	var l Lease
	err := db.viewApplied(func(tx *bolt.Tx) (bool, error) {
		b := tx.Bucket(bucketLeases)
		if b == nil {
			return true, ErrLeaseNotFound
		}
		v := b.Get([]byte(name))
		if v == nil {
			return true, ErrLeaseNotFound
		}
		var err error
		l, err = decodeLease(name, v) // copies what it keeps
		return true, err              // a lease changes in place: read the open transaction too
	})
	return l, err
}

// Leases returns every recorded lease, expired or not, in name order.
func (r *Reader) Leases() ([]Lease, error) {
	db := r.db
	var out []Lease
	err := db.viewApplied(func(tx *bolt.Tx) (bool, error) {
		out = out[:0]
		b := tx.Bucket(bucketLeases)
		if b == nil {
			return true, nil
		}
		return true, b.ForEach(func(k, v []byte) error {
			l, err := decodeLease(string(k), v)
			if err != nil {
				return err
			}
			out = append(out, l)
			return nil
		})
	})
	return out, err
}

// MaxTime returns the largest leader time of the applied entries (the
// leases' and the dedup window's clock), Unix nanoseconds; math.MinInt64
// before the first entry.
func (r *Reader) MaxTime() (int64, error) {
	db := r.db
	t := int64(math.MinInt64)
	err := db.viewApplied(func(tx *bolt.Tx) (bool, error) {
		st, err := readState(tx)
		t = st.maxTime
		return true, err
	})
	return t, err
}
