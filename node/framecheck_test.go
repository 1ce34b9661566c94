package node

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/notify"
	"github.com/txlog/txlog/store"
	"github.com/txlog/txlog/txid"
)

// checkNow is the leader's clock in the frame check's tests.
var checkNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// testChecker returns a frame checker whose configuration is members and
// whose registry is reg (node ID → number), with small limits: keys of 16
// bytes, 3 ops, values of 64 bytes, notify urls to hooks.example only.
func testChecker(t *testing.T, members []string, reg map[string]uint16) *frameChecker {
	t.Helper()
	allow, err := notify.ParseAllowList("hooks.example")
	if err != nil {
		t.Fatal(err)
	}
	fc := &frameChecker{
		rules: frameRules{maxKeyBytes: 16, maxOps: 3, maxValueBytes: 64, notify: allow, maxAhead: maxTxIDAhead},
		now:   func() time.Time { return checkNow },
	}
	fc.members = func(context.Context) ([]string, error) { return members, nil }
	fc.registry = func() ([]store.NodeInfo, error) {
		var out []store.NodeInfo
		for id, num := range reg {
			out = append(out, store.NodeInfo{ID: id, TxIDNode: num})
		}
		return out, nil
	}
	return fc
}

// txFrame returns the command of a transaction of n2 (number 2) at the
// leader's time, changed by edit.
func txFrame(edit func(*store.Tx)) store.Command {
	tx := store.Tx{ID: idAt(checkNow, 2), IdempotencyKey: "k1", Ops: []store.Op{
		{Kind: store.OpPut, Key: "a", Value: []byte(`{"x":[1,2,"y"]}`)},
		{Kind: store.OpDelete, Key: "b"},
	}}
	if edit != nil {
		edit(&tx)
	}
	return store.Command{Kind: store.KindTx, Payload: store.EncodeTx(tx)}
}

func putValue(v string) func(*store.Tx) {
	return func(tx *store.Tx) { tx.Ops[0].Value = []byte(v) }
}

// TestFrameCheck feeds the leader's check of forwarded frames every bad case
// and sees each refused with its code, and good frames pass.
func TestFrameCheck(t *testing.T) {
	members := []string{"n1", "n2", "n3", "n5"}
	reg := map[string]uint16{"n1": 1, "n2": 2, "n5": 5, "n4": 4} // n3 not registered yet; n4 removed
	from2 := wire.SubmitOptions{From: "n2"}
	cases := []struct {
		name string
		cmd  store.Command
		opts wire.SubmitOptions
		code string // "" passes
		msg  string // a part of the message
	}{
		{name: "good", cmd: txFrame(nil), opts: from2},
		{name: "good fence notify offset", cmd: txFrame(func(tx *store.Tx) {
			tx.Fence = &store.Fence{Lease: "l", Token: 3}
			tx.Notify = "https://hooks.example/cb"
			tx.Ops[1] = store.Op{Kind: store.OpCommitOffset, Key: "g", Offset: 9}
		}), opts: from2},
		{name: "deep value", cmd: txFrame(putValue(strings.Repeat("[", 30) + strings.Repeat("]", 30))), opts: from2},
		{name: "txid 7s ahead", cmd: txFrame(func(tx *store.Tx) { tx.ID = idAt(checkNow.Add(7*time.Second), 2) }), opts: from2},
		{name: "hand-off of a removed node", cmd: txFrame(func(tx *store.Tx) { tx.ID = idAt(checkNow, 4) }), opts: wire.SubmitOptions{From: "n4", HandOff: true}},
		{name: "own registration", cmd: store.Command{Kind: store.KindRegisterNode, Payload: store.EncodeNode(store.NodeInfo{ID: "n2", HTTPAddr: "127.0.0.1:1", TxIDNode: 2})}, opts: from2},

		{name: "value not JSON", cmd: txFrame(putValue(`{not json`)), opts: from2, code: wire.CodeInvalidJSON, msg: "ops[0].value"},
		{name: "value two JSON values", cmd: txFrame(putValue(`1 2`)), opts: from2, code: wire.CodeInvalidJSON, msg: "ops[0].value"},
		{name: "value empty", cmd: txFrame(putValue(``)), opts: from2, code: wire.CodeInvalidJSON},
		{name: "value not compact", cmd: txFrame(putValue(`{ "x": 1 }`)), opts: from2, code: wire.CodeInvalidJSON, msg: "white space"},
		{name: "value bad UTF-8", cmd: txFrame(putValue("\"\xff\"")), opts: from2, code: wire.CodeInvalidUTF8},
		{name: "value over limit", cmd: txFrame(putValue(`"` + strings.Repeat("v", 70) + `"`)), opts: from2, code: wire.CodeInvalidTx, msg: "limit 64"},
		{name: "ops over limit", cmd: txFrame(func(tx *store.Tx) {
			tx.Ops = append(tx.Ops, store.Op{Kind: store.OpDelete, Key: "c"}, store.Op{Kind: store.OpDelete, Key: "d"})
		}), opts: from2, code: wire.CodeInvalidTx, msg: "more than 3"},
		{name: "key over limit", cmd: txFrame(func(tx *store.Tx) { tx.Ops[1].Key = strings.Repeat("k", 17) }), opts: from2, code: wire.CodeInvalidTx, msg: "ops[1].key: 17 bytes"},
		{name: "key empty", cmd: txFrame(func(tx *store.Tx) { tx.Ops[1].Key = "" }), opts: from2, code: wire.CodeInvalidTx},
		{name: "key U+FFFD", cmd: txFrame(func(tx *store.Tx) { tx.Ops[0].Key = "a\uFFFD" }), opts: from2, code: wire.CodeInvalidUTF8},
		{name: "key bad UTF-8", cmd: txFrame(func(tx *store.Tx) { tx.Ops[0].Key = "a\xc0" }), opts: from2, code: wire.CodeInvalidUTF8},
		{name: "idempotency key over limit", cmd: txFrame(func(tx *store.Tx) { tx.IdempotencyKey = strings.Repeat("i", 129) }), opts: from2, code: wire.CodeInvalidTx},
		{name: "idempotency key bad UTF-8", cmd: txFrame(func(tx *store.Tx) { tx.IdempotencyKey = "\xff" }), opts: from2, code: wire.CodeInvalidUTF8},
		{name: "fence lease over limit", cmd: txFrame(func(tx *store.Tx) { tx.Fence = &store.Fence{Lease: strings.Repeat("l", 17), Token: 1} }), opts: from2, code: wire.CodeInvalidTx, msg: "fence.lease"},
		{name: "notify not allowed", cmd: txFrame(func(tx *store.Tx) { tx.Notify = "http://127.0.0.1:9/x" }), opts: from2, code: wire.CodeNotifyNotAllowed},
		{name: "group twice", cmd: txFrame(func(tx *store.Tx) {
			tx.Ops = []store.Op{{Kind: store.OpCommitOffset, Key: "g", Offset: 1}, {Kind: store.OpCommitOffset, Key: "g", Offset: 2}}
		}), opts: from2, code: wire.CodeInvalidTx, msg: "committed twice"},
		{name: "not a transaction", cmd: store.Command{Kind: store.KindTx, Payload: []byte{1, 2, 3}}, opts: from2, code: wire.CodeInvalidTx},
		{name: "zero txid", cmd: txFrame(func(tx *store.Tx) { tx.ID = 0 }), opts: from2, code: wire.CodeInvalidTx, msg: "zero txid"},
		{name: "txid of another member", cmd: txFrame(func(tx *store.Tx) { tx.ID = idAt(checkNow, 5) }), opts: from2, code: wire.CodeInvalidTx, msg: "node number 5"},
		{name: "txid of no member", cmd: txFrame(func(tx *store.Tx) { tx.ID = idAt(checkNow, 77) }), opts: from2, code: wire.CodeInvalidTx, msg: "node number 77"},
		{name: "txid far in the future", cmd: txFrame(func(tx *store.Tx) { tx.ID = idAt(checkNow.Add(time.Hour), 2) }), opts: from2, code: wire.CodeNotReady, msg: "ahead of the leader's clock"},
		{name: "txid 9s ahead", cmd: txFrame(func(tx *store.Tx) { tx.ID = idAt(checkNow.Add(9*time.Second), 2) }), opts: from2, code: wire.CodeNotReady},
		{name: "member not registered yet", cmd: txFrame(func(tx *store.Tx) { tx.ID = idAt(checkNow, 3) }), opts: wire.SubmitOptions{From: "n3"}, code: wire.CodeNotReady},
		{name: "no sender", cmd: txFrame(nil), code: wire.CodeInvalidParam},
		{name: "sender not a member", cmd: txFrame(nil), opts: wire.SubmitOptions{From: "n9"}, code: wire.CodeRemoved},
		{name: "removed sender", cmd: txFrame(func(tx *store.Tx) { tx.ID = idAt(checkNow, 4) }), opts: wire.SubmitOptions{From: "n4"}, code: wire.CodeRemoved},
		{name: "hand-off of a stranger", cmd: txFrame(nil), opts: wire.SubmitOptions{From: "n9", HandOff: true}, code: wire.CodeRemoved},
		{name: "registration of another node", cmd: store.Command{Kind: store.KindRegisterNode, Payload: store.EncodeNode(store.NodeInfo{ID: "n3", HTTPAddr: "127.0.0.1:1", TxIDNode: 3})}, opts: from2, code: wire.CodeInvalidTx, msg: "registers only itself"},
		{name: "registration with another number", cmd: store.Command{Kind: store.KindRegisterNode, Payload: store.EncodeNode(store.NodeInfo{ID: "n2", HTTPAddr: "127.0.0.1:1", TxIDNode: 5})}, opts: from2, code: wire.CodeInvalidTx, msg: "does not change"},
		{name: "registration without a number", cmd: store.Command{Kind: store.KindRegisterNode, Payload: store.EncodeNode(store.NodeInfo{ID: "n3", HTTPAddr: "127.0.0.1:1"})}, opts: wire.SubmitOptions{From: "n3"}, code: wire.CodeInvalidTx, msg: "without a txid node number"},
		{name: "first registration", cmd: store.Command{Kind: store.KindRegisterNode, Payload: store.EncodeNode(store.NodeInfo{ID: "n3", HTTPAddr: "127.0.0.1:1", TxIDNode: 3})}, opts: wire.SubmitOptions{From: "n3"}},
		{name: "registration by a removed node", cmd: store.Command{Kind: store.KindRegisterNode, Payload: store.EncodeNode(store.NodeInfo{ID: "n4", HTTPAddr: "127.0.0.1:1", TxIDNode: 4})}, opts: wire.SubmitOptions{From: "n4", HandOff: true}, code: wire.CodeRemoved},
		{name: "lease command", cmd: store.Command{Kind: store.KindLease, Payload: []byte{1}}, opts: from2, code: wire.CodeInvalidTx, msg: "not accepted"},
	}
	fc := testChecker(t, members, reg)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs, _ := fc.check(context.Background(), []store.Command{tc.cmd}, tc.opts)
			err := errs[0]
			if tc.code == "" {
				if err != nil {
					t.Fatalf("check() = %v, want nil", err)
				}
				return
			}
			var we *wire.Error
			if !errors.As(err, &we) || we.Code != tc.code || !strings.Contains(we.Message, tc.msg) {
				t.Fatalf("check() = %v, want code %s with %q", err, tc.code, tc.msg)
			}
		})
	}
}

// TestFrameCheckMembership checks that the membership snapshot follows a
// removal at once after invalidate (as Node.Remove calls it before DELETE
// answers, and watch on a leader change), its age, and a registration the
// snapshot predates.
func TestFrameCheckMembership(t *testing.T) {
	members := []string{"n1", "n2", "n3"}
	reg := map[string]uint16{"n1": 1, "n2": 2}
	fc := testChecker(t, nil, nil)
	fc.members = func(context.Context) ([]string, error) { return members, nil }
	fc.registry = func() ([]store.NodeInfo, error) {
		var out []store.NodeInfo
		for id, num := range reg {
			out = append(out, store.NodeInfo{ID: id, TxIDNode: num})
		}
		return out, nil
	}
	now := checkNow
	fc.now = func() time.Time { return now }
	code := func(from string, node uint16) string {
		t.Helper()
		tx := txFrame(func(tx *store.Tx) { tx.ID = idAt(now, uint64(node)) })
		errs, _ := fc.check(context.Background(), []store.Command{tx}, wire.SubmitOptions{From: from})
		if errs[0] == nil {
			return ""
		}
		var we *wire.Error
		if !errors.As(errs[0], &we) {
			t.Fatalf("check() = %v, want a *wire.Error", errs[0])
		}
		return we.Code
	}
	if c := code("n2", 2); c != "" {
		t.Fatalf("n2, a member: %s, want accepted", c)
	}
	if c := code("n3", 3); c != wire.CodeNotReady {
		t.Fatalf("n3, not registered: %q, want not_ready", c)
	}
	// n3 registers: the refusal looks again (the snapshot is older than refreshBefore).
	reg["n3"] = 3
	now = now.Add(refreshBefore)
	if c := code("n3", 3); c != "" {
		t.Fatalf("n3 after its registration: %s, want accepted", c)
	}
	// n2 is removed: the cached snapshot still lists it until invalidate.
	members = []string{"n1", "n3"}
	fc.invalidate()
	if c := code("n2", 2); c != wire.CodeRemoved {
		t.Fatalf("n2 after its removal: %q, want removed", c)
	}
	// Without an invalidate, a snapshot serves until it is membersTTL old.
	members = []string{"n1", "n2", "n3"}
	if c := code("n2", 2); c != wire.CodeRemoved {
		t.Fatalf("n2 with a snapshot %s old: %q, want removed (cached)", refreshBefore, c)
	}
	now = now.Add(membersTTL)
	if c := code("n2", 2); c != "" {
		t.Fatalf("n2 with a snapshot %s old: %s, want accepted (rebuilt)", membersTTL, c)
	}
}

// TestProposeRefusesBadFrames sends hostile frames to a one-node leader's
// Node.Propose: each is refused and none reaches the log, while a good frame
// in the same proposal commits.
func TestProposeRefusesBadFrames(t *testing.T) {
	addrs := freeAddrs(t, 1)
	n, err := Open(context.Background(), Config{ID: "n1", DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", RaftAddr: addrs[0], Cluster: []Peer{{ID: "n1", RaftAddr: addrs[0]}}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		res, err := n.Submit(ctx, wire.TxRequest{Ops: []wire.Op{{Op: "put", Key: "a", Value: json.RawMessage(`1`)}}}, wire.SubmitOptions{Timeout: time.Second})
		if err == nil && res.Status == wire.StatusCommitted {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no commit on a one-node cluster: %+v, %v", res, err)
		}
	}
	registerSelf(ctx, t, n)
	frame := func(id txid.ID, value string) []byte {
		tx := store.Tx{ID: id, Ops: []store.Op{{Kind: store.OpPut, Key: "b", Value: []byte(value)}}}
		return store.EncodeCommand(store.Command{Kind: store.KindTx, Payload: store.EncodeTx(tx)})
	}
	own := n.mem.ids.Next()
	notJSON, other, future := n.mem.ids.Next(), own+1<<txid.SeqBits, idAt(time.Now().Add(time.Hour), uint64(own.Node()))
	res, err := n.Propose(ctx, [][]byte{frame(notJSON, `{oops`), frame(other, `2`), frame(future, `3`), frame(own, `4`)}, wire.SubmitOptions{Timeout: 5 * time.Second, Fresh: true, From: "n1"})
	if err != nil {
		t.Fatalf("Propose() = %v", err)
	}
	for i, want := range []string{wire.CodeInvalidJSON, wire.CodeInvalidTx, wire.CodeNotReady} {
		if e := res[i].Error; e == nil || e.Code != want {
			t.Fatalf("frame %d = %+v (error %+v), want %s", i, res[i], e, want)
		}
	}
	if r := res[3]; r.Error != nil || r.Status != wire.StatusCommitted {
		t.Fatalf("the good frame = %+v (error %+v), want committed", r, r.Error)
	}
	for _, id := range []txid.ID{notJSON, other, future} {
		if _, err := n.Tx(ctx, id, 0, wire.ReadOptions{}); !errors.Is(err, wire.ErrNotFound) {
			t.Fatalf("Tx(%s) of a refused frame = %v, want not found", id, err)
		}
	}
	res, err = n.Propose(ctx, [][]byte{frame(n.mem.ids.Next(), `5`)}, wire.SubmitOptions{Timeout: 5 * time.Second, Fresh: true, From: "n7"})
	if err != nil || res[0].Error == nil || res[0].Error.Code != wire.CodeRemoved {
		t.Fatalf("a frame from a non-member = %+v, %v; want removed", res, err)
	}
	res, err = n.Propose(ctx, [][]byte{frame(n.mem.ids.Next(), `6`)}, wire.SubmitOptions{Timeout: 5 * time.Second, Fresh: true})
	if we, ok := errors.AsType[*wire.Error](err); !ok || we.Code != wire.CodeInvalidParam || res != nil {
		t.Fatalf("a proposal without from = %+v, %v; want the whole request refused with invalid_parameter", res, err)
	}
}

// registerSelf registers n, a leader opened without Run (so without its
// registration loop), in its registry with its txid node number, as the loop
// would: the leader takes frames that name n as their sender from then on.
func registerSelf(ctx context.Context, t *testing.T, n *Node) {
	t.Helper()
	me := store.NodeInfo{ID: n.cfg.ID, HTTPAddr: n.httpAddr, RaftAddr: n.cfg.RaftAddr, TxIDNode: uint16(n.mem.nodeNumber())}
	p := &pending{kind: store.KindRegisterNode, payload: store.EncodeNode(me)}
	n.props.proposeLocal(ctx, []*pending{p})
	if !p.st.isDone() || p.st.err != nil {
		t.Fatalf("register %s: %+v", n.cfg.ID, p.st)
	}
}

// BenchmarkFrameCheck measures the leader's check of one forwarded
// transaction (3 puts of 100-byte JSON objects), against the check it
// replaces (store.CheckTx: the bytes only).
func BenchmarkFrameCheck(b *testing.B) {
	value := `{"id":12345,"name":"` + strings.Repeat("x", 60) + `","tags":["a","b"],"ok":true}`
	tx := store.Tx{ID: idAt(checkNow, 2), IdempotencyKey: "req-0001", Ops: []store.Op{
		{Kind: store.OpPut, Key: "orders/1", Value: []byte(value)},
		{Kind: store.OpPut, Key: "orders/2", Value: []byte(value)},
		{Kind: store.OpPut, Key: "orders/3", Value: []byte(value)},
	}}
	cmds := []store.Command{{Kind: store.KindTx, Payload: store.EncodeTx(tx)}}
	t := &testing.T{}
	fc := testChecker(t, []string{"n1", "n2", "n3"}, map[string]uint16{"n1": 1, "n2": 2, "n3": 3})
	fc.rules.maxKeyBytes, fc.rules.maxOps, fc.rules.maxValueBytes = 1024, 1000, 1<<20
	opts := wire.SubmitOptions{From: "n2"}
	// cpu-ns/op is the process's CPU time per check, GC included: on a
	// shared machine a steadier measure than ns/op.
	b.Run("check", func(b *testing.B) {
		b.ReportAllocs()
		start := cpuTime()
		for b.Loop() {
			if errs, _ := fc.check(context.Background(), cmds, opts); errs[0] != nil {
				b.Fatal(errs[0])
			}
		}
		b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
	})
	b.Run("store.CheckTx", func(b *testing.B) {
		b.ReportAllocs()
		start := cpuTime()
		for b.Loop() {
			if _, err := store.CheckTx(cmds[0].Payload); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
	})
}

// FuzzFrameCheck feeds the frame check arbitrary transaction bytes from n2:
// it never panics, refuses with a *wire.Error, and what it takes decodes, is
// n2's, and holds only valid JSON values within the limits.
func FuzzFrameCheck(f *testing.F) {
	f.Add(txFrame(nil).Payload)
	f.Add(txFrame(putValue(`{not json`)).Payload)
	f.Add(txFrame(func(tx *store.Tx) { tx.ID = idAt(checkNow, 5) }).Payload)
	f.Add(txFrame(func(tx *store.Tx) {
		tx.Notify = "https://hooks.example/x"
		tx.Fence = &store.Fence{Lease: "l", Token: 1}
	}).Payload)
	f.Add([]byte{1, 2, 3})
	fc := testChecker(&testing.T{}, []string{"n1", "n2"}, map[string]uint16{"n1": 1, "n2": 2})
	f.Fuzz(func(t *testing.T, payload []byte) {
		errs, ids := fc.check(context.Background(), []store.Command{{Kind: store.KindTx, Payload: payload}}, wire.SubmitOptions{From: "n2"})
		if err := errs[0]; err != nil {
			var we *wire.Error
			if !errors.As(err, &we) {
				t.Fatalf("check() = %v (%T), want a *wire.Error", err, err)
			}
			return
		}
		tx, err := store.DecodeTx(payload)
		if err != nil || tx.ID != ids[0] || tx.ID.Node() != 2 || len(tx.Ops) == 0 || len(tx.Ops) > fc.rules.maxOps {
			t.Fatalf("accepted %x: DecodeTx = %+v, %v; id %s", payload, tx, err, ids[0])
		}
		for _, op := range tx.Ops {
			if op.Kind == store.OpPut && (!json.Valid(op.Value) || len(op.Value) > fc.rules.maxValueBytes) {
				t.Fatalf("accepted %x with value %q", payload, op.Value)
			}
		}
	})
}
