package replication

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/txlog/txlog/store"
	"github.com/txlog/txlog/txid"
)

// storeNode is a server applying to a real store.DB.
type storeNode struct {
	cfg Config
	db  *store.DB
	r   *Raft
}

func (n *storeNode) start(t *testing.T) {
	t.Helper()
	db, err := store.Open(filepath.Join(n.cfg.Dir, "state.db"), store.Config{})
	if err != nil {
		t.Fatalf("open store %s: %v", n.cfg.ID, err)
	}
	r, err := Open(n.cfg, db)
	if err != nil {
		db.Close()
		t.Fatalf("open %s: %v", n.cfg.ID, err)
	}
	n.db, n.r = db, r
	t.Cleanup(func() { n.stop(t) })
}

func (n *storeNode) stop(t *testing.T) {
	t.Helper()
	if err := n.r.Close(); err != nil {
		t.Errorf("close raft %s: %v", n.cfg.ID, err)
	}
	if err := n.db.Close(); err != nil {
		t.Errorf("close store %s: %v", n.cfg.ID, err)
	}
}

// put encodes a command putting value under key.
func put(id txid.ID, key, value string) []byte {
	tx := store.Tx{ID: id, Ops: []store.Op{{Kind: store.OpPut, Key: key, Value: []byte(fmt.Sprintf("%q", value))}}}
	return store.EncodeCommand(store.Command{Kind: store.KindTx, Time: time.Now().UnixNano(), DedupWindow: time.Hour, Payload: store.EncodeTx(tx)})
}

func wantValue(t *testing.T, n *storeNode, key, value string) {
	t.Helper()
	kv, err := n.db.Get(key)
	if err != nil {
		t.Fatalf("Get(%s) on %s: %v", key, n.cfg.ID, err)
	}
	if got, want := string(kv.Value), fmt.Sprintf("%q", value); got != want {
		t.Errorf("Get(%s) on %s = %s, want %s", key, n.cfg.ID, got, want)
	}
}

// TestStore runs the real state machine: replication, a snapshot installed on a
// new member, and a restart on a durable store that is ahead of the snapshot.
func TestStore(t *testing.T) {
	addrs := freeAddrs(t, 3)
	var boot []Server
	nodes := make([]*storeNode, 3)
	for i := range nodes {
		id := fmt.Sprintf("n%d", i+1)
		boot = append(boot, Server{ID: id, Addr: addrs[i]})
		nodes[i] = &storeNode{cfg: testConfig(t, id, addrs[i])}
	}
	for _, n := range nodes {
		n.cfg.Bootstrap = boot
		n.cfg.TrailingLogs = 4
		n.start(t)
	}
	var ts []*testNode
	for _, n := range nodes {
		ts = append(ts, &testNode{cfg: n.cfg, r: n.r})
	}
	lt := leader(t, ts)
	var l *storeNode
	for _, n := range nodes {
		if n.r == lt.r {
			l = n
		}
	}

	var index uint64
	for i := range 20 {
		res, idx, err := l.r.Apply(ctxTimeout(t, 5*time.Second), put(txid.ID(i+1), "k", fmt.Sprint("v", i)))
		if err != nil {
			t.Fatalf("Apply %d: %v", i, err)
		}
		if res.Outcome.Status != store.StatusCommitted || res.Outcome.Index != idx {
			t.Fatalf("Apply %d = %+v at %d, want committed at its index", i, res, idx)
		}
		index = idx
	}
	// A duplicate txid changes nothing.
	res, _, err := l.r.Apply(ctxTimeout(t, 5*time.Second), put(txid.ID(1), "k", "dup"))
	if err != nil || !res.Duplicate {
		t.Fatalf("Apply of a duplicate = %+v, %v; want Duplicate", res, err)
	}
	for _, n := range nodes {
		if err := n.r.WaitApplied(ctxTimeout(t, 10*time.Second), index); err != nil {
			t.Fatalf("WaitApplied on %s: %v", n.cfg.ID, err)
		}
		wantValue(t, n, "k", "v19")
	}

	// A new member catches up from a snapshot: the log before it is gone.
	if err := l.r.raft.Snapshot().Error(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	n4 := &storeNode{cfg: testConfig(t, "n4", "127.0.0.1:0")}
	n4.start(t)
	if err := l.r.Join(ctxTimeout(t, 10*time.Second), "n4", n4.r.Addr(), true); err != nil {
		t.Fatalf("Join(n4): %v", err)
	}
	if err := n4.r.WaitApplied(ctxTimeout(t, 10*time.Second), index); err != nil {
		t.Fatalf("WaitApplied on n4: %v", err)
	}
	wantValue(t, n4, "k", "v19")

	// A follower restarts on its durable store, which is ahead of its snapshot.
	var f *storeNode
	for _, n := range nodes {
		if n != l {
			f = n
			break
		}
	}
	if err := f.r.raft.Snapshot().Error(); err != nil {
		t.Fatalf("snapshot on %s: %v", f.cfg.ID, err)
	}
	_, index, err = l.r.Apply(ctxTimeout(t, 5*time.Second), put(txid.ID(100), "k", "after-snapshot"))
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if err := f.r.WaitApplied(ctxTimeout(t, 10*time.Second), index); err != nil {
		t.Fatalf("WaitApplied on %s: %v", f.cfg.ID, err)
	}
	f.stop(t)
	_, index, err = l.r.Apply(ctxTimeout(t, 5*time.Second), put(txid.ID(101), "k", "while-down"))
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	f.start(t)
	if err := f.r.WaitApplied(ctxTimeout(t, 10*time.Second), index); err != nil {
		t.Fatalf("WaitApplied on restarted %s: %v", f.cfg.ID, err)
	}
	wantValue(t, f, "k", "while-down")
	read, err := l.r.ReadIndex(ctxTimeout(t, 5*time.Second))
	if err != nil || read < index {
		t.Errorf("ReadIndex() = %d, %v; want >= %d", read, err, index)
	}
}
