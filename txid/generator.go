package txid

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// Defaults and bounds of Config.
const (
	// DefaultReserve is the Config.Reserve used when it is zero.
	DefaultReserve = 3 * time.Second
	// MinReserve is the smallest Config.Reserve Validate accepts.
	MinReserve = 10 * time.Millisecond
	// MaxReserve is the largest Config.Reserve Validate accepts.
	MaxReserve = time.Hour
)

// Config configures a Generator. The zero Config is valid: node 0, the system
// clock, no floor, the default reservation.
type Config struct {
	// Node is the number stamped into every ID, 0..MaxNode. It must be unique in
	// the cluster: two generators with the same Node can issue the same ID.
	Node uint16
	// Now returns the current time; only its wall clock reading is used. Nil
	// means time.Now. Tests set it to move the clock, backwards too.
	Now func() time.Time
	// Floor is an ID the generator stays above: every ID it issues is > Floor,
	// whatever node issued Floor. Zero means no floor. A node that lost its
	// high-water mark file passes the highest ID it knows of.
	Floor ID
	// Reserve is how far ahead of the clock OpenGenerator persists its
	// high-water mark, between MinReserve and MaxReserve. Zero means
	// DefaultReserve (3s). New ignores it.
	Reserve time.Duration
	// Logger receives a warning each time the high-water mark cannot be
	// written. Nil discards logs.
	Logger *slog.Logger
}

// Validate reports every problem with c, each naming the field and its bound.
func (c Config) Validate() error {
	var errs []error
	if c.Node > MaxNode {
		errs = append(errs, fmt.Errorf("txid: Node %d out of range 0..%d", c.Node, MaxNode))
	}
	if c.Reserve != 0 && (c.Reserve < MinReserve || c.Reserve > MaxReserve) {
		errs = append(errs, fmt.Errorf("txid: Reserve %v out of range %v..%v (0 means %v)",
			c.Reserve, MinReserve, MaxReserve, DefaultReserve))
	}
	if firstAbove(c.Floor, c.Node) > maxState {
		errs = append(errs, fmt.Errorf("txid: Floor %v leaves no ID for Node %d", c.Floor, c.Node))
	}
	return errors.Join(errs...)
}

// state is the part of an ID a generator counts with: ms<<SeqBits | seq. For a
// fixed node, IDs order like their states, and state+1 is the next sequence
// number, carrying into the next millisecond when seq overflows.
const maxState = maxMillis<<SeqBits | MaxSeq

// Generator issues IDs for one node. Its methods are safe for concurrent use.
//
// Next is lock-free: one compare-and-swap on the last issued state. A
// Generator from OpenGenerator also runs a goroutine that keeps a persisted
// reservation of milliseconds ahead of the clock; Close stops it.
type Generator struct {
	node uint64 // Config.Node << SeqBits, ORed into every ID
	now  func() time.Time

	// last is the state of the last issued ID, or of the floor before the
	// first one. Invariant: it only grows, and last+1 is the smallest state
	// Next may issue.
	last atomic.Uint64

	// res is the current reservation. Invariant: every issued ID has
	// ms < res.limit, and res.limit was persisted before res was stored.
	res atomic.Pointer[reservation]

	// rsv persists reservations; nil for a Generator from New, whose
	// reservation is unlimited.
	rsv *reserver
}

// reservation is an upper bound on the milliseconds of issued IDs. It is
// immutable: the reserver replaces it with a higher one and then closes
// extended to wake the callers of Next that waited for it.
type reservation struct {
	limit    uint64        // every issued ID has ms < limit
	soft     uint64        // from this ms on, Next wakes the reserver to extend early
	extended chan struct{} // closed once a higher reservation is in place
}

// unlimited is the reservation of a Generator that persists nothing.
var unlimited = &reservation{limit: math.MaxUint64, soft: math.MaxUint64}

// New returns a Generator that keeps its state in memory only. It is unique
// across restarts only if the clock does not step back while the node is
// down, or if cfg.Floor covers every ID issued before; OpenGenerator removes
// that condition.
func New(cfg Config) (*Generator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	g := newGenerator(cfg)
	g.res.Store(unlimited)
	return g, nil
}

// newGenerator returns a Generator for a valid cfg with its floor set and no
// reservation.
func newGenerator(cfg Config) *Generator {
	g := &Generator{node: uint64(cfg.Node) << SeqBits, now: cfg.Now}
	if g.now == nil {
		g.now = time.Now
	}
	g.raise(firstAbove(cfg.Floor, cfg.Node))
	return g
}

// firstAbove returns the smallest state whose ID from node is greater than
// floor. The result may exceed maxState.
func firstAbove(floor ID, node uint16) uint64 {
	base := uint64(floor.Millis()) << SeqBits
	switch {
	case node > floor.Node():
		return base
	case node == floor.Node():
		return base | uint64(floor.Seq()) + 1
	default:
		return base + 1<<SeqBits
	}
}

// raise makes first the smallest state Next may issue, unless that is already
// higher. State 0 is never issued, so neither is the zero ID. It is called
// before g is shared.
func (g *Generator) raise(first uint64) {
	first = max(first, 1)
	if first-1 > g.last.Load() {
		g.last.Store(first - 1)
	}
}

// Next returns a new ID, greater than every ID this Generator returned
// before and than Config.Floor; from OpenGenerator also greater than every
// ID issued under the same file before a restart.
//
// It never waits for the clock: when the clock steps back, or more than
// MaxSeq+1 IDs are asked for within one millisecond, Next keeps counting from
// the last ID and the IDs run ahead of the clock until it catches up. A
// Generator from OpenGenerator blocks only when its IDs would pass the
// persisted reservation, until the reservation is extended on disk. Next
// must not be called after Close.
//
// Next panics when the IDs run out of milliseconds, in the year 2163.
func (g *Generator) Next() ID {
	now := g.clock()
	for {
		last := g.last.Load()
		next := max(last+1, now)
		if next > maxState {
			panic("txid: IDs exhausted: milliseconds past 42 bits")
		}
		r := g.res.Load()
		if ms := next >> SeqBits; ms >= r.limit {
			g.rsv.await(r, ms)
			now = g.clock()
			continue
		}
		if g.last.CompareAndSwap(last, next) {
			if next>>SeqBits >= r.soft {
				g.rsv.wake()
			}
			return g.id(next)
		}
	}
}

// NextUnpredictable returns an ID as Next does, but at least one and at most
// MaxSeq sequence numbers past the one Next would give, picked at random: an
// ID that another process may have taken in advance (sequence 0 of each
// coming millisecond, the one a node that issues few IDs gives) is not the one
// issued, and no process can take every ID it might be. IDs stay unique and
// in order.
func (g *Generator) NextUnpredictable() ID {
	skip := 1 + rand.Uint64N(MaxSeq)
	now := g.clock()
	for {
		last := g.last.Load()
		next := max(last+1, now) + skip
		if next > maxState {
			panic("txid: IDs exhausted: milliseconds past 42 bits")
		}
		r := g.res.Load()
		if ms := next >> SeqBits; ms >= r.limit {
			g.rsv.await(r, ms)
			now = g.clock()
			continue
		}
		if g.last.CompareAndSwap(last, next) {
			if next>>SeqBits >= r.soft {
				g.rsv.wake()
			}
			return g.id(next)
		}
	}
}

// clock returns the state of sequence 0 in the current millisecond. Before
// Epoch it returns 0; past the last millisecond it returns more than maxState.
func (g *Generator) clock() uint64 {
	ms := g.now().UnixMilli() - epochMillis
	return uint64(min(max(ms, 0), maxMillis+1)) << SeqBits
}

// id returns the ID of state s from g's node.
func (g *Generator) id(s uint64) ID {
	return ID(s>>SeqBits<<(SeqBits+NodeBits) | g.node | s&MaxSeq)
}

// Close stops the goroutine that extends the reservation of a Generator from
// OpenGenerator and waits for it. It writes nothing: the file already covers
// every issued ID. It returns the error of the last write of the high-water
// mark if that failed. Close can be called more than once; for a Generator
// from New it does nothing.
func (g *Generator) Close() error {
	if g.rsv == nil {
		return nil
	}
	return g.rsv.close()
}
