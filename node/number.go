package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/dirsync"
	"github.com/txlog/txlog/replication"
	"github.com/txlog/txlog/store"
	"github.com/txlog/txlog/txid"
)

// A node's txid node number is stamped into every txid it issues, so no two
// members may share one. The number is decided once per data directory and
// kept in its file node.number, written and fsynced (with its directory)
// before the first txid:
//
//   - a data directory that has one keeps it, and a --node-number that
//     differs is refused at start;
//   - a data directory made by a version without node.number keeps the
//     number it used: its own entry in the node registry, else the number
//     that version gave it (legacyNodeNumber);
//   - an initial member of a static bootstrap takes the number
//     bootstrapNumbers gives it from the --cluster list, the same list on
//     every member, so the numbers are unique by construction;
//   - a member that joins asks the leader, which registers it through the
//     log with the number it asked for (refused with 409 node_number_taken
//     if another member holds it) or with a free one (pickNumber), and the
//     joiner persists the answer before it takes a write.
//
// Whatever the cause, a node whose number another member holds in the
// registry answers writes with 503 node_number_clash (and /readyz 503) while
// the clash lasts (see membership.clash), and a node takes no write before
// its own registration is in its registry and checked (membership.registered).

// numberFile holds a data directory's txid node number, in decimal.
const numberFile = "node.number"

// hwmFile is the txid generator's high-water mark: its presence says that the
// data directory has issued txids.
const hwmFile = "txid.hwm"

// membership is this node's standing in the cluster: its txid node number
// (this file), its entry in the node registry and its join (register.go).
// Whether it may take a write (writeErr) the write path reads with atomics
// only.
type membership struct {
	cfg      Config
	log      *slog.Logger
	db       *store.DB
	raft     *replication.Raft // nil until Open has opened Raft
	peers    *peers
	props    *proposer
	httpAddr string          // advertised HTTP address
	ident    *identity       // the cluster ID (identity.go)
	life     context.Context // the node's: ends when Close begins

	// ids issues this node's txids; set once, with number (setNumber).
	ids *txid.Generator
	// nextReissue, when set (tests), gives the txid of a reissued write
	// instead of ids.NextUnpredictable (reissueID).
	nextReissue func() txid.ID

	number  atomic.Int32           // 0 until known; then fixed
	clash   atomic.Pointer[string] // the member that holds our number too; nil: none
	removed atomic.Bool            // set once; never cleared
	// registered is set once the local registry holds this node's entry with
	// its number and checkClash has looked for a clash with it, or at once for
	// a number unique by construction (byConstruction) or assigned by the
	// leader; never cleared. Until then the node takes no writes: of two
	// members that gave themselves the same --node-number, the later to
	// register sees the clash before it issues a txid, so the two never issue
	// txids at the same time.
	registered atomic.Bool
	joinMu     sync.Mutex // serializes joinLocal's pick and registration (leader side)
	setMu      sync.Mutex // serializes setNumber (joinLoop and registerLoop)
	stop       chan error // capacity 1: a reason for Run to stop the node
}

// writeErr returns why this node may not take a write now, or nil.
func (m *membership) writeErr() error {
	if m.removed.Load() {
		return fmt.Errorf("%w: this node is no longer a member and is stopping; send writes to another node", wire.ErrRemoved)
	}
	if holder := m.clash.Load(); holder != nil {
		return fmt.Errorf("%w: member %s holds txid node number %d too; remove one of them (docs/architecture.md)", wire.ErrNodeNumberClash, *holder, m.number.Load())
	}
	if m.number.Load() == 0 {
		return &wire.Error{Code: wire.CodeNotReady, Message: "joining: the cluster has not assigned this node a txid node number yet"}
	}
	if !m.registered.Load() {
		return &wire.Error{Code: wire.CodeNotReady, Message: fmt.Sprintf("txid node number %d is not in this node's copy of the node registry yet", m.number.Load())}
	}
	return nil
}

// nodeNumber returns this node's txid node number, 0 while it has none.
func (m *membership) nodeNumber() int { return int(m.number.Load()) }

// openNumber decides this node's txid node number from its data directory and
// config, persists it, and opens the txid generator with it. A member that
// will join without a number of its own opens the generator later, in
// setNumber (from adoptNumber or joined). Called by Open once the store is open.
func (m *membership) openNumber() error {
	m.stop = make(chan error, 1)
	num, err := m.resolveNumber()
	if err != nil {
		return err
	}
	if num == 0 {
		m.log.Info("no txid node number yet: the cluster assigns one at join")
		return nil
	}
	return m.setNumber(num, m.byConstruction(num))
}

// byConstruction reports whether num is the number the --cluster list gives
// this node, which every initial member computes alike and no other member
// takes: such a node need not wait for its registration before it takes
// writes (membership.registered). A number from this node's --node-number
// alone is not: another member may have given itself the same.
func (m *membership) byConstruction(num int) bool {
	for _, p := range m.cfg.Cluster {
		if p.ID == m.cfg.ID && p.NodeNumber != 0 {
			return p.NodeNumber == num
		}
	}
	if len(m.cfg.Cluster) == 0 || m.cfg.NodeNumber != 0 {
		return false
	}
	nums, err := bootstrapNumbers(m.cfg.Cluster, m.cfg.ID, 0)
	return err == nil && nums[m.cfg.ID] == num
}

// resolveNumber returns the data directory's txid node number, or 0 when a
// member joining through cfg.Join without a number of its own leaves the
// choice to the leader.
func (m *membership) resolveNumber() (int, error) {
	cfg := m.cfg
	path := filepath.Join(cfg.DataDir, numberFile)
	have, err := readNumber(path)
	if err != nil {
		return 0, err
	}
	want := cfg.NodeNumber
	for _, p := range cfg.Cluster {
		if p.ID == cfg.ID && p.NodeNumber != 0 {
			want = p.NodeNumber
		}
	}
	if have != 0 {
		if want != 0 && want != have {
			return 0, fmt.Errorf("node number: data dir %s holds txid node number %d (%s), and %d was asked for; a data dir keeps its number (leave --node-number out, or use another data dir)", cfg.DataDir, have, numberFile, want)
		}
		return have, nil
	}
	if num, src, ok := m.inferNumber(); ok {
		if want != 0 && want != num {
			return 0, fmt.Errorf("node number: data dir %s used txid node number %d (%s), and %d was asked for; a data dir keeps its number", cfg.DataDir, num, src, want)
		}
		m.log.Info("txid node number of an existing data dir", "node_number", num, "from", src)
		return num, nil
	}
	switch {
	case len(cfg.Cluster) > 0:
		nums, err := bootstrapNumbers(cfg.Cluster, cfg.ID, cfg.NodeNumber)
		if err != nil {
			return 0, err
		}
		if want := cfg.NodeNumber; want != 0 {
			// The others compute their numbers without this node's flag.
			others, _ := bootstrapNumbers(cfg.Cluster, "", 0)
			for id, num := range others {
				if id != cfg.ID && num == want {
					return 0, fmt.Errorf("node number: --node-number %d is the number %s takes from --cluster; choose another, or give the numbers in --cluster (id=host:port@N)", want, id)
				}
			}
		}
		return nums[cfg.ID], nil
	case cfg.Join != "":
		return 0, nil // the join answer carries it (a wanted one is asked for)
	case want != 0:
		return want, nil
	}
	// Neither --cluster nor --join: a node an operator adds by hand (POST
	// /v1/cluster/join) takes the number the leader registers it with, from
	// the log (adoptNumber).
	m.log.Warn("no txid node number: waiting to be joined to a cluster (POST /v1/cluster/join), which assigns one")
	return 0, nil
}

// inferNumber finds the number a data directory made by a version without
// node.number used: its registry entry, else what that version's default
// gave it. It reports false for a data directory that never issued a txid
// and holds no state (a new one).
func (m *membership) inferNumber() (int, string, bool) {
	if info, ok := m.ownEntry(); ok && info.TxIDNode != 0 {
		return int(info.TxIDNode), "its entry in the node registry", true
	}
	if _, err := os.Stat(filepath.Join(m.cfg.DataDir, hwmFile)); err != nil {
		return 0, "", false
	}
	if m.cfg.NodeNumber != 0 {
		return m.cfg.NodeNumber, "--node-number", true
	}
	if num := legacyNodeNumber(m.cfg.ID, m.cfg.Cluster); num != 0 {
		return num, "the trailing digits of its id, or its place in --cluster", true
	}
	return 0, "", false
}

// ownEntry returns this node's entry in the registry of the local store.
func (m *membership) ownEntry() (store.NodeInfo, bool) {
	nodes, err := m.db.Reads().Nodes()
	if err != nil {
		return store.NodeInfo{}, false
	}
	for _, info := range nodes {
		if info.ID == m.cfg.ID {
			return info, true
		}
	}
	return store.NodeInfo{}, false
}

// adoptNumber takes, for a node without a number, the one the leader
// registered it with at its join, once the node is in the configuration and
// has applied what it knows is committed: the registration precedes the
// configuration change, so an older entry of the same id, replayed while the
// node catches up, is never taken. Called by registerLoop.
func (m *membership) adoptNumber() {
	if listed, _ := m.listed(); !listed {
		return
	}
	if st := m.raft.Status(); st.AppliedIndex < st.CommitIndex || st.CommitIndex == 0 {
		return
	}
	info, ok := m.ownEntry()
	if !ok || info.TxIDNode == 0 {
		return
	}
	if want := m.cfg.NodeNumber; want != 0 && want != int(info.TxIDNode) {
		m.stopWith(fmt.Errorf("node number: the cluster registered this node with txid node number %d, --node-number says %d", info.TxIDNode, want))
		return
	}
	if err := m.setNumber(int(info.TxIDNode), true); err != nil {
		m.stopWith(err)
	}
}

// setNumber persists num as the data directory's node number and opens the
// txid generator with it; from then on nodeNumber reports it. Once a number is
// set, setting the same one again does nothing and another is an error.
// registered says that num is known to be free of clashes (by construction,
// or registered by the leader), so writes need not wait for checkClash.
func (m *membership) setNumber(num int, registered bool) error {
	m.setMu.Lock()
	defer m.setMu.Unlock()
	if have := m.nodeNumber(); have != 0 {
		if have != num {
			return fmt.Errorf("node number: this node holds txid node number %d, not %d", have, num)
		}
		return nil
	}
	if err := writeNumber(filepath.Join(m.cfg.DataDir, numberFile), num); err != nil {
		return err
	}
	ids, err := txid.OpenGenerator(filepath.Join(m.cfg.DataDir, hwmFile), txid.Config{Node: uint16(num), Logger: m.cfg.Logger})
	if err != nil {
		return fmt.Errorf("open txid generator: %w", err)
	}
	m.ids = ids
	if registered {
		m.registered.Store(true)
	}
	m.number.Store(int32(num)) // after m.ids: the write path reads m.ids only once it sees a number
	m.log.Info("txid node number", "node_number", num)
	return nil
}

// readNumber reads a node.number file; a missing file gives 0.
func readNumber(path string) (int, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || v < 1 || v > txid.MaxNode {
		return 0, fmt.Errorf("read %s: %q is not a txid node number 1..%d; restore the file (the number this node's txids carry) or use another data dir", path, b, txid.MaxNode)
	}
	return v, nil
}

// writeNumber writes a node.number file durably: a temporary file, its
// fsync, a rename and an fsync of the directory. An existing file with the
// same number is left alone.
func writeNumber(path string, num int) error {
	if have, err := readNumber(path); err == nil && have == num {
		return nil
	}
	return dirsync.WriteFile(path, []byte(strconv.Itoa(num)+"\n"), 0o644, dirsync.Sync)
}

// bootstrapNumbers gives every initial member of a static bootstrap its txid
// node number from the --cluster list alone, so that each member computes the
// same, distinct numbers: a number given in the list (id=addr@N, or self's
// --node-number as selfWant) is kept; the others take the trailing digits of
// their ids when those are distinct, in 1..txid.MaxNode and not given to
// another, and else their place in the list sorted by id, skipping the
// numbers given. Two members given the same number are an error.
func bootstrapNumbers(cluster []Peer, self string, selfWant int) (map[string]int, error) {
	nums := make(map[string]int, len(cluster))
	given := map[int]string{}
	var rest []string
	for _, p := range cluster {
		num := p.NodeNumber
		if p.ID == self && selfWant != 0 {
			if num != 0 && num != selfWant {
				return nil, fmt.Errorf("node number: --cluster gives %s number %d, --node-number %d", self, num, selfWant)
			}
			num = selfWant
		}
		if num == 0 {
			rest = append(rest, p.ID)
			continue
		}
		if other, ok := given[num]; ok {
			return nil, fmt.Errorf("node number: %d given to both %s and %s; each member needs its own", num, other, p.ID)
		}
		given[num] = p.ID
		nums[p.ID] = num
	}
	slices.Sort(rest)
	digits := make(map[string]int, len(rest))
	used := map[int]bool{}
	for _, id := range rest {
		m := trailingDigits.FindString(id)
		v, err := strconv.Atoi(m)
		if m == "" || err != nil || v < 1 || v > txid.MaxNode || used[v] || given[v] != "" {
			digits = nil
			break
		}
		used[v] = true
		digits[id] = v
	}
	if digits != nil {
		for id, v := range digits {
			nums[id] = v
		}
		return nums, nil
	}
	next := 1
	for _, id := range rest {
		for given[next] != "" {
			next++
		}
		if next > txid.MaxNode {
			return nil, fmt.Errorf("node number: %d members do not fit 1..%d", len(cluster), txid.MaxNode)
		}
		nums[id] = next
		next++
	}
	return nums, nil
}

// pickNumber is the leader's choice of a txid node number for server id that
// asks to join with want (0: any; a member keeps the number it holds).
// members are the IDs in the cluster configuration, registry the node
// registry. A number another member holds is refused with node_number_taken;
// a number only a removed server held may be asked for again (txid/doc.go
// says when that is safe), and is never handed out unasked. A member that
// has not registered its number yet makes the leader refuse to choose
// (not_ready, to be retried), so that the choice knows every number in use.
func pickNumber(id string, want int, members []string, registry []store.NodeInfo) (int, error) {
	entries := make(map[string]store.NodeInfo, len(registry))
	for _, e := range registry {
		entries[e.ID] = e
	}
	for _, m := range members {
		if e, ok := entries[m]; m != id && (!ok || e.TxIDNode == 0) {
			return 0, &wire.Error{Code: wire.CodeNotReady, Message: fmt.Sprintf("member %s has not published its txid node number yet; try again", m)}
		}
	}
	if e, ok := entries[id]; ok && want == 0 && e.TxIDNode != 0 && slices.Contains(members, id) {
		// A member joining again (the same addresses: sameMember let it
		// through) keeps its number: a new one would make the registry
		// disown the txids it issues.
		return int(e.TxIDNode), nil
	}
	if want != 0 {
		for _, m := range members {
			if e := entries[m]; m != id && int(e.TxIDNode) == want {
				return 0, &wire.Error{Code: wire.CodeNodeNumberTaken, Message: fmt.Sprintf("txid node number %d is held by member %s; ask for another, or leave node_number out to have a free one assigned", want, m)}
			}
		}
		return want, nil
	}
	held := map[int]bool{}
	for _, e := range registry {
		held[int(e.TxIDNode)] = true
	}
	for num := 1; num <= txid.MaxNode; num++ {
		if !held[num] {
			return num, nil
		}
	}
	return 0, &wire.Error{Code: wire.CodeConflict, Message: fmt.Sprintf("no free txid node number left in 1..%d", txid.MaxNode)}
}

// clashWith returns a member other than self whose registry entry holds num,
// or "" when none does. Entries of servers that are not members (removed ones,
// whose numbers a new member may have asked for) do not count.
func clashWith(self string, num int, members []string, registry []store.NodeInfo) string {
	for _, e := range registry {
		if e.ID != self && int(e.TxIDNode) == num && slices.Contains(members, e.ID) {
			return e.ID
		}
	}
	return ""
}

// reissueID returns the txid of a write proposed again because its txid was
// taken (write.go, reissue): one a random number of sequences past the next
// (txid.Generator.NextUnpredictable), so that a squatter who took this
// node's coming txids in advance does not take its retries too.
func (m *membership) reissueID() txid.ID {
	if m.nextReissue != nil {
		return m.nextReissue()
	}
	return m.ids.NextUnpredictable()
}
