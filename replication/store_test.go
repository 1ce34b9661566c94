package replication

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"

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
	// Applies commit only when something needs them to (store.Config.CommitInterval).
	db, err := store.Open(filepath.Join(n.cfg.Dir, "state.db"), store.Config{CommitInterval: time.Hour})
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
	kv, err := n.db.Reads().Get(key)
	if err != nil {
		t.Fatalf("Get(%s) on %s: %v", key, n.cfg.ID, err)
	}
	if got, want := string(kv.Value), fmt.Sprintf("%q", value); got != want {
		t.Errorf("Get(%s) on %s = %s, want %s", key, n.cfg.ID, got, want)
	}
}

// TestStore runs the real state machine: replication, a checkpoint snapshot
// whose live state is installed on a new member, and a restart on a durable
// store that is ahead of the snapshot.
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
		// raft-wal drops only whole segments, so a new member would get the
		// log from index 1; raft-boltdb drops what the snapshot covers.
		n.cfg.LogStore = LogStoreBolt
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
	// A duplicate txid changes nothing: the same transaction is a
	// duplicate, another one under the txid is refused.
	res, _, err := l.r.Apply(ctxTimeout(t, 5*time.Second), put(txid.ID(1), "k", "v0"))
	if err != nil || !res.Duplicate {
		t.Fatalf("Apply of a duplicate = %+v, %v; want Duplicate", res, err)
	}
	res, _, err = l.r.Apply(ctxTimeout(t, 5*time.Second), put(txid.ID(1), "k", "dup"))
	if err != nil || !res.TxIDConflict || res.Duplicate {
		t.Fatalf("Apply of another transaction under a txid = %+v, %v; want TxIDConflict", res, err)
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
	wantCheckpoint(t, l)
	n4 := &storeNode{cfg: testConfig(t, "n4", "127.0.0.1:0")}
	n4.cfg.LogStore = LogStoreBolt
	n4.start(t)
	if err := l.r.Join(ctxTimeout(t, 10*time.Second), "n4", n4.r.Addr(), true); err != nil {
		t.Fatalf("Join(n4): %v", err)
	}
	if err := n4.r.WaitApplied(ctxTimeout(t, 10*time.Second), index); err != nil {
		t.Fatalf("WaitApplied on n4: %v", err)
	}
	wantValue(t, n4, "k", "v19")
	// What n4 got was the leader's live store, streamed for its checkpoint.
	files, err := raft.NewFileSnapshotStore(n4.cfg.Dir, snapshotsRetained, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if list, err := files.List(); err != nil || len(list) != 1 || list[0].Size <= checkpointMarkerSize {
		t.Fatalf("snapshots of n4 = %+v, %v; want the one installed, a store file", list, err)
	}

	// A follower restarts on its durable store, which is ahead of its snapshot.
	var f *storeNode
	for _, n := range nodes {
		if n != l {
			f = n
			break
		}
	}
	// Raft refuses while the configuration entry of n4's join is unapplied.
	for deadline := time.Now().Add(10 * time.Second); ; {
		err := f.r.raft.Snapshot().Error()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("snapshot on %s: %v", f.cfg.ID, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	wantCheckpoint(t, f)
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

// wantCheckpoint fails unless n's latest snapshot is a checkpoint marker at or
// below the store's durable applied index.
func wantCheckpoint(t *testing.T, n *storeNode) {
	t.Helper()
	files, err := raft.NewFileSnapshotStore(n.cfg.Dir, snapshotsRetained, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	list, err := files.List()
	if err != nil || len(list) == 0 {
		t.Fatalf("snapshots of %s: %v, %v", n.cfg.ID, list, err)
	}
	if list[0].Size != checkpointMarkerSize {
		t.Fatalf("latest snapshot of %s has %d bytes, want a %d-byte checkpoint marker", n.cfg.ID, list[0].Size, checkpointMarkerSize)
	}
	_, rc, err := files.Open(list[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	applied, ok := decodeCheckpoint(b)
	if !ok || applied == 0 || applied > n.db.AppliedIndex() {
		t.Fatalf("checkpoint of %s = %d, %v; want a marker in (0, %d]", n.cfg.ID, applied, ok, n.db.AppliedIndex())
	}
}

// TestCheckpointStoreLost checks that a node whose store file was lost after a
// checkpoint refuses to start: its raft log no longer holds what the file did,
// and the checkpoint is not a copy to restore from.
func TestCheckpointStoreLost(t *testing.T) {
	addr := freeAddrs(t, 1)[0]
	n := &storeNode{cfg: testConfig(t, "n1", addr)}
	n.cfg.Bootstrap = []Server{{ID: "n1", Addr: addr}}
	n.cfg.TrailingLogs = 1
	n.start(t)
	tn := []*testNode{{cfg: n.cfg, r: n.r}}
	leader(t, tn)
	var index uint64
	for i := range 10 {
		_, idx, err := n.r.Apply(ctxTimeout(t, 5*time.Second), put(txid.ID(i+1), "k", fmt.Sprint(i)))
		if err != nil {
			t.Fatal(err)
		}
		index = idx
	}
	if err := n.r.raft.Snapshot().Error(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	wantCheckpoint(t, n)
	n.stop(t)
	if err := os.Remove(filepath.Join(n.cfg.Dir, "state.db")); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(filepath.Join(n.cfg.Dir, "state.db"), store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r, err := Open(n.cfg, db)
	if err == nil {
		r.Close()
		t.Fatalf("Open on an empty store after a checkpoint at index %d succeeded", index)
	}
	if !errors.Is(err, errBehindCheckpoint) {
		t.Fatalf("Open = %v, want errBehindCheckpoint", err)
	}
	t.Logf("Open refused: %v", err)
}

func TestDecodeCheckpoint(t *testing.T) {
	if got, ok := decodeCheckpoint(encodeCheckpoint(42)); !ok || got != 42 {
		t.Fatalf("decodeCheckpoint(encodeCheckpoint(42)) = %d, %v", got, ok)
	}
	for _, b := range [][]byte{
		nil,
		encodeCheckpoint(42)[:checkpointMarkerSize-1],
		append(encodeCheckpoint(42), 0),
		append([]byte("txlog-checkpoint-v2\n"), make([]byte, 8)...),
		make([]byte, checkpointMarkerSize),
	} {
		if got, ok := decodeCheckpoint(b); ok {
			t.Errorf("decodeCheckpoint(%q) = %d, true; want false", b, got)
		}
	}
}
