// Package txid makes and parses txlog's transaction IDs: 64-bit numbers that
// are unique across a cluster and ordered by the time they were issued.
//
// txid owns the ID layout, its text form, and the Generator that issues IDs
// for one node, with the small file that keeps them unique across restarts.
// It imports nothing from txlog, so every other package (api, store, node,
// chaos) can depend on it.
//
// # Layout
//
// An ID is
//
//	 63        22 21      12 11        0
//	+------------+----------+-----------+
//	|  ms (42)   | node(10) |  seq (12) |
//	+------------+----------+-----------+
//
// ms counts milliseconds since Epoch (2024-01-01T00:00:00Z) and lasts until
// 2163; node is the issuing node's number, 0..MaxNode; seq counts IDs within
// one millisecond of one node, up to MaxSeq+1 of them. The zero ID is never
// issued and means "no ID". IDs from different nodes order by time to within
// the skew of their clocks; IDs from one Generator order exactly as they were
// issued.
//
// The text form (String, Parse, MarshalText) is 13 characters of Crockford's
// base32 alphabet, most significant first, fixed width, so text sorts like
// the numbers. Parse accepts lower case letters and nothing else that
// differs. In JSON and other text encodings the zero ID is the empty string.
//
// # Node numbers
//
// Uniqueness across the cluster rests on node numbers: no two live nodes may
// share one, or they can issue the same ID in the same millisecond. txid
// cannot see the cluster; the node package assigns each member a number no
// other member holds, refuses a join that asks for a taken one, and makes a
// node whose number another member holds refuse writes while that lasts. A
// number may be reused by a new node only if the old one is gone for good and
// its IDs are covered by the new node's Config.Floor or its clock is well
// past them.
//
// # Issuing IDs
//
// Generator.Next is lock-free: the last issued (ms, seq) lives in one atomic
// uint64 and each call is one compare-and-swap, with no mutex for callers to
// queue on. Each call returns an ID greater than every earlier one from the
// same Generator:
//
//   - In a new millisecond, seq restarts at 0.
//   - Within one millisecond, seq counts up. When it would pass MaxSeq, Next
//     moves on to the next millisecond without waiting for the clock.
//   - When the wall clock steps backwards, Next keeps counting from the last
//     issued millisecond. It never reissues an ID and never waits.
//
// In the last two cases the IDs run ahead of the clock, which catches up
// later. Only the wall clock is read, never the monotonic one, so the ms of an
// ID is a real time whenever the IDs are not running ahead.
//
// # Restarts
//
// A Generator from New remembers nothing: after a restart it relies on the
// clock being past every earlier ID, or on Config.Floor. OpenGenerator adds a
// high-water mark file, in the style of TiDB's timestamp oracle. The file
// holds a reserved millisecond that every ID issued so far is below, and is
// written ahead of use by a window (Config.Reserve, 3s by default): at open
// the Generator starts at the reserved millisecond, so its IDs are above all
// IDs issued before the restart or crash, even when the clock is now behind
// them. A background goroutine extends the reservation when the clock gets
// within half a window of its end, so Next stays one compare-and-swap; Next
// blocks only in the rare case that it would pass the reservation before that
// goroutine has written a new one. Each write replaces the file atomically
// (temporary file, fsync, rename, fsync of the directory) and carries a
// checksum; a torn or foreign file makes OpenGenerator fail with ErrCorrupt
// rather than risk reissuing IDs. The cost of a restart is a jump of the IDs'
// ms to at most one window ahead of the clock, which the clock catches up.
//
// Must not import: github.com/txlog/txlog/..., github.com/prometheus/...
package txid
