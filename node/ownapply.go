package node

import (
	"sync"
	"sync/atomic"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/store"
	"github.com/txlog/txlog/txid"
)

// A follower answers the writes it forwarded from its own apply of them, as an
// etcd follower does, instead of waiting for the leader's answer: the leader
// writes no answer for a forwarded group that it proposed and committed in
// full (a quiet request, api/stream.go), and the follower wakes the group's
// sender when it has applied the group's last transaction. That takes an
// answer's encoding, a write and a read, and the wake-up of the stream's
// reader, off every forwarded group. The result is the same one the leader
// would have sent: the store is deterministic, so the follower's apply of an
// entry gives the leader's outcome (its duplicate flag included), and it
// happens only once the entry is committed and in the follower's own log,
// which the quorum acknowledgement promises anyway. The leader tells the
// followers of each new commit index at once (replication.Config.NotifyCommit),
// so that at low load a forwarded write does not wait for the next
// AppendEntries.
//
// Only fresh groups go quietly: a transaction sent before may already be in
// the log, and the leader answers it from a lookup without proposing it again.
// When the leader answers after all (something failed, or it does not serve
// quiet requests), the answer is used as before.

// applyWaits holds the transactions whose own apply a sender waits for.
type applyWaits struct {
	count atomic.Int64 // registered txids: Applied skips the lock when there are none
	mu    sync.Mutex
	slots map[txid.ID]applySlot
}

type applySlot struct {
	g *applyGroup
	i int
}

// applyGroup is one forwarded group's transactions, by position.
type applyGroup struct {
	results []store.Result
	left    int           // results not in yet; guarded by applyWaits.mu
	cut     bool          // a snapshot replaced the state: some may never come
	done    chan struct{} // closed when left reaches 0, or when cut
}

// register starts waiting for the apply of ids. It returns nil, registering
// nothing, when an id is zero or already waited for.
func (w *applyWaits) register(ids []txid.ID) *applyGroup {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.slots == nil {
		w.slots = map[txid.ID]applySlot{}
	}
	for _, id := range ids {
		if _, ok := w.slots[id]; ok || id == 0 {
			return nil
		}
	}
	g := &applyGroup{results: make([]store.Result, len(ids)), left: len(ids), done: make(chan struct{})}
	for i, id := range ids {
		w.slots[id] = applySlot{g: g, i: i}
	}
	w.count.Add(int64(len(ids)))
	return g
}

// release stops waiting for g's ids and reports whether every result came.
func (w *applyWaits) release(g *applyGroup, ids []txid.ID) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		if s, ok := w.slots[id]; ok && s.g == g {
			delete(w.slots, id)
			w.count.Add(-1)
		}
	}
	return g.left == 0 && !g.cut
}

// applied is replication.Config.Applied: it hands the results of waited-for
// transactions to their groups. It runs in raft's apply goroutine.
func (w *applyWaits) applied(rs []store.Result) {
	if w.count.Load() == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range rs {
		if r.Kind != store.KindTx || r.TxID == 0 {
			continue
		}
		s, ok := w.slots[r.TxID]
		if !ok {
			continue
		}
		delete(w.slots, r.TxID)
		w.count.Add(-1)
		s.g.results[s.i] = r
		s.g.left--
		if s.g.left == 0 && !s.g.cut {
			close(s.g.done)
		}
	}
}

// restored is replication.Config.Restored: the entries a snapshot covered were
// never applied one by one, so every group waiting is cut short, and its
// sender proposes its transactions again, which the leader answers from the log.
func (w *applyWaits) restored() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, s := range w.slots {
		if !s.g.cut && s.g.left > 0 {
			s.g.cut = true
			close(s.g.done)
		}
		delete(w.slots, id)
	}
	w.count.Store(0)
}

// ownResults returns g's results as the leader would have sent them.
func (n *Node) ownResults(g *applyGroup, ids []txid.ID) []api.TxResult {
	out := make([]api.TxResult, len(g.results))
	for i, r := range g.results {
		if r.Err != nil {
			out[i] = api.TxResult{TxID: ids[i], Error: api.NewErrorBody(r.Err)}
			continue
		}
		out[i] = n.result(r.Outcome, r.Duplicate)
	}
	return out
}
