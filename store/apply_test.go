package store

import (
	"errors"
	"maps"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/txid"
)

// kvWant is the expected state of a key; nil in a map means the key is absent.
type kvWant struct {
	version uint64
	value   string
}

func TestVersions(t *testing.T) {
	tests := []struct {
		name         string
		txs          [][]Op            // applied one tx per entry, from index 1
		wantVersions map[string]uint64 // of the last tx
		want         map[string]*kvWant
	}{
		{
			name:         "new key starts at 1",
			txs:          [][]Op{{put("a", "1")}},
			wantVersions: map[string]uint64{"a": 1},
			want:         map[string]*kvWant{"a": {1, "1"}},
		},
		{
			name:         "put increments",
			txs:          [][]Op{{put("a", "1")}, {put("a", "2")}, {put("a", "3")}},
			wantVersions: map[string]uint64{"a": 3},
			want:         map[string]*kvWant{"a": {3, "3"}},
		},
		{
			name:         "two puts in one tx",
			txs:          [][]Op{{put("a", "1"), put("a", "2")}},
			wantVersions: map[string]uint64{"a": 2},
			want:         map[string]*kvWant{"a": {2, "2"}},
		},
		{
			name:         "delete removes",
			txs:          [][]Op{{put("a", "1")}, {del("a")}},
			wantVersions: map[string]uint64{"a": 0},
			want:         map[string]*kvWant{"a": nil},
		},
		{
			name:         "delete of absent key is a no-op",
			txs:          [][]Op{{del("x")}},
			wantVersions: map[string]uint64{"x": 0},
			want:         map[string]*kvWant{"x": nil},
		},
		{
			name:         "recreate starts again at 1",
			txs:          [][]Op{{put("a", "1")}, {put("a", "2")}, {del("a")}, {put("a", "new")}},
			wantVersions: map[string]uint64{"a": 1},
			want:         map[string]*kvWant{"a": {1, "new"}},
		},
		{
			name:         "delete then put in one tx",
			txs:          [][]Op{{put("a", "1")}, {put("a", "2")}, {del("a"), put("a", "3")}},
			wantVersions: map[string]uint64{"a": 1},
			want:         map[string]*kvWant{"a": {1, "3"}},
		},
		{
			name:         "put then delete in one tx",
			txs:          [][]Op{{put("a", "1"), del("a")}},
			wantVersions: map[string]uint64{"a": 0},
			want:         map[string]*kvWant{"a": nil},
		},
		{
			name:         "multi-key tx",
			txs:          [][]Op{{put("b", "1")}, {put("a", "1"), put("b", "2"), del("c")}},
			wantVersions: map[string]uint64{"a": 1, "b": 2, "c": 0},
			want:         map[string]*kvWant{"a": {1, "1"}, "b": {2, "2"}, "c": nil},
		},
		{
			name:         "precondition sees earlier op",
			txs:          [][]Op{{ifv(put("a", "1"), 0), ifv(put("a", "2"), 1), ifv(del("a"), 2), ifv(put("a", "4"), 0)}},
			wantVersions: map[string]uint64{"a": 1},
			want:         map[string]*kvWant{"a": {1, "4"}},
		},
		{
			name:         "many ops in one tx",
			txs:          [][]Op{cyclingOps(evaluateMapOps)},
			wantVersions: map[string]uint64{"a": 0, "b": 5, "c": 6},
			want:         map[string]*kvWant{"a": nil, "b": {5, "13"}, "c": {6, "15"}},
		},
		{
			name:         "empty tx commits",
			txs:          [][]Op{{}},
			wantVersions: map[string]uint64{},
			want:         map[string]*kvWant{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := openTest(t)
			var last Result
			for i, ops := range tt.txs {
				last = applyOne(t, db, txEntry(uint64(i+1), txid.ID(i+1), "", ops...))
			}
			if last.Outcome.Status != StatusCommitted {
				t.Fatalf("Status = %d, want committed; conflict %+v", last.Outcome.Status, last.Outcome.Conflict)
			}
			if !maps.Equal(last.Outcome.Versions, tt.wantVersions) {
				t.Fatalf("Versions = %v, want %v", last.Outcome.Versions, tt.wantVersions)
			}
			lastIndex := uint64(len(tt.txs))
			if recs, _, err := db.Reads().Log(lastIndex, 1); err != nil || len(recs) != 1 || !maps.Equal(recs[0].Versions, tt.wantVersions) {
				t.Fatalf("Log(%d) = %+v, %v; want versions %v", lastIndex, recs, err, tt.wantVersions)
			}
			for key, want := range tt.want {
				kv, err := db.Reads().Get(key)
				if want == nil {
					if !errors.Is(err, ErrNotFound) {
						t.Fatalf("Get(%q) = %+v, %v; want ErrNotFound", key, kv, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("Get(%q) = %v", key, err)
				}
				if kv.Version != want.version || string(kv.Value) != want.value || kv.ModIndex != lastIndex {
					t.Fatalf("Get(%q) = %+v, want version %d value %q mod index %d", key, kv, want.version, want.value, lastIndex)
				}
			}
		})
	}
}

func TestConflicts(t *testing.T) {
	tests := []struct {
		name  string
		setup [][]Op
		tx    []Op
		want  Conflict
	}{
		{"if_version 0 on existing key", [][]Op{{put("a", "1")}}, []Op{ifv(put("a", "2"), 0)}, Conflict{Key: "a", Expected: 0, Actual: 1}},
		{"version mismatch", [][]Op{{put("a", "1")}, {put("a", "2")}}, []Op{ifv(put("a", "3"), 1)}, Conflict{Key: "a", Expected: 1, Actual: 2}},
		{"version on absent key", nil, []Op{ifv(del("x"), 3)}, Conflict{Key: "x", Expected: 3, Actual: 0}},
		{"version on deleted key", [][]Op{{put("a", "1")}, {del("a")}}, []Op{ifv(put("a", "2"), 1)}, Conflict{Key: "a", Expected: 1, Actual: 0}},
		{
			"first failure wins",
			[][]Op{{put("a", "1")}},
			[]Op{put("b", "1"), ifv(put("a", "2"), 5), ifv(put("c", "1"), 7)},
			Conflict{Key: "a", Expected: 5, Actual: 1},
		},
		{
			"precondition sees earlier op",
			[][]Op{{put("a", "1")}},
			[]Op{put("a", "2"), ifv(del("a"), 1)},
			Conflict{Key: "a", Expected: 1, Actual: 2},
		},
		{
			"many ops in one tx",
			nil,
			append(cyclingOps(evaluateMapOps), ifv(put("b", "x"), 4)),
			Conflict{Key: "b", Expected: 4, Actual: 5},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := openTest(t)
			for i, ops := range tt.setup {
				applyOne(t, db, txEntry(uint64(i+1), txid.ID(100+i), "", ops...))
			}
			before := dump(t, db)["kv"]
			index := uint64(len(tt.setup) + 1)
			res := applyOne(t, db, txEntry(index, 1, "ik", tt.tx...))

			want := Outcome{TxID: 1, IdempotencyKey: "ik", Index: index, Term: 1, Time: t0, Status: StatusRejected, Conflict: &tt.want}
			if res.Duplicate || res.Skipped || res.Err != nil || res.Kind != KindTx {
				t.Fatalf("Result = %+v, want a new tx outcome", res)
			}
			if !reflect.DeepEqual(res.Outcome, want) {
				t.Fatalf("Outcome = %+v (conflict %+v), want %+v (conflict %+v)", res.Outcome, res.Outcome.Conflict, want, want.Conflict)
			}
			if after := dump(t, db)["kv"]; !maps.Equal(after, before) {
				t.Fatalf("kv bucket changed by a rejected tx:\nbefore %v\nafter  %v", before, after)
			}
			if got, err := db.Reads().Tx(1); err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("Tx(1) = %+v, %v; want %+v", got, err, want)
			}
			recs, _, err := db.Reads().Log(index, 10)
			if err != nil || len(recs) != 1 || !reflect.DeepEqual(recs[0].Outcome, want) {
				t.Fatalf("Log(%d) = %+v, %v; want the rejected outcome", index, recs, err)
			}
		})
	}
}

func TestDedup(t *testing.T) {
	tests := []struct {
		name     string
		first    Entry
		again    Entry
		untouchd string // a key the duplicate would have written, if any
	}{
		// Under a txid, only the same bytes are a duplicate (TestTxIDConflict).
		{"same txid", txEntry(1, 7, "", put("a", "1")), txEntry(2, 7, "", put("a", "1")), ""},
		{"same txid and idempotency key", txEntry(1, 7, "k1", put("a", "1")), txEntry(2, 7, "k1", put("a", "1")), ""},
		{"same txid, rejected original", txEntry(1, 7, "", ifv(put("a", "1"), 4)), txEntry(2, 7, "", ifv(put("a", "1"), 4)), "a"},
		// Under a key, only the same transaction is a duplicate (TestIdemReused).
		{"same idempotency key", txEntry(1, 7, "k", put("a", "1")), txEntry(2, 8, "k", put("a", "1")), ""},
		{"rejected original", txEntry(1, 7, "k", ifv(put("a", "1"), 4)), txEntry(2, 8, "k", ifv(put("a", "1"), 4)), "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := openTest(t)
			orig := applyOne(t, db, tt.first)
			before := dump(t, db)
			res := applyOne(t, db, tt.again)
			if !res.Duplicate || res.Skipped || res.Err != nil {
				t.Fatalf("Result = %+v, want Duplicate", res)
			}
			if !reflect.DeepEqual(res.Outcome, orig.Outcome) {
				t.Fatalf("duplicate Outcome = %+v, want the original %+v", res.Outcome, orig.Outcome)
			}
			if _, err := db.Reads().Get(tt.untouchd); tt.untouchd != "" && !errors.Is(err, ErrNotFound) {
				t.Fatalf("Get(%q) = %v, want ErrNotFound: a duplicate writes nothing", tt.untouchd, err)
			}
			after := dump(t, db)
			// meta moves the applied index; a resubmission under another txid
			// adds that txid as an alias (txs, dedup_time) and nothing else.
			for _, b := range []string{"meta", "txs", "dedup_time"} {
				delete(before, b)
				delete(after, b)
			}
			if !reflect.DeepEqual(after, before) {
				t.Fatalf("state changed by a duplicate:\nbefore %v\nafter  %v", before, after)
			}
			again, err := DecodeCommand(tt.again.Data)
			if err != nil {
				t.Fatal(err)
			}
			tx, err := DecodeTx(again.Payload)
			if err != nil {
				t.Fatal(err)
			}
			if o, err := db.Reads().Tx(tx.ID); err != nil || !reflect.DeepEqual(o, orig.Outcome) {
				t.Fatalf("Tx(%v) of the resubmission = %+v, %v; want the original outcome %+v", tx.ID, o, err, orig.Outcome)
			}
			if got := db.AppliedIndex(); got != 2 {
				t.Fatalf("AppliedIndex() = %d, want 2", got)
			}
			if recs, _, _ := db.Reads().Log(0, 10); len(recs) != 1 {
				t.Fatalf("Log() has %d records, want 1", len(recs))
			}
		})
	}
}

func TestLookups(t *testing.T) {
	db := openTest(t)
	res := applyOne(t, db, txEntry(3, 9, "order-1", put("a", "1"), put("b", "2")))
	if got, err := db.Reads().Tx(9); err != nil || !reflect.DeepEqual(got, res.Outcome) {
		t.Fatalf("Tx(9) = %+v, %v; want %+v", got, err, res.Outcome)
	}
	if got, err := db.Reads().TxByIdempotencyKey("order-1"); err != nil || !reflect.DeepEqual(got, res.Outcome) {
		t.Fatalf("TxByIdempotencyKey() = %+v, %v; want %+v", got, err, res.Outcome)
	}
	for name, err := range map[string]error{
		"Tx(unknown)":                  second(db.Reads().Tx(10)),
		"TxByIdempotencyKey(unknown)":  second(db.Reads().TxByIdempotencyKey("order-2")),
		"TxByIdempotencyKey(empty)":    second(db.Reads().TxByIdempotencyKey("")),
		"Get(unknown)":                 second(db.Reads().Get("c")),
		"Get(empty)":                   second(db.Reads().Get("")),
		"TxByIdempotencyKey(non-utf8)": second(db.Reads().TxByIdempotencyKey("\xff")),
	} {
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("%s = %v, want ErrNotFound", name, err)
		}
	}
}

func second[T any](_ T, err error) error { return err }

func TestRegisterNode(t *testing.T) {
	db := openTest(t)
	n1 := NodeInfo{ID: "n1", HTTPAddr: "h1", RaftAddr: "r1", TxIDNode: 1}
	n2 := NodeInfo{ID: "n2", HTTPAddr: "h2", RaftAddr: "r2", TxIDNode: 2}
	n1b := NodeInfo{ID: "n1", HTTPAddr: "h1b", RaftAddr: "r1b", TxIDNode: 5}
	res := applyOK(t, db,
		entryAt(1, KindRegisterNode, t0, 0, EncodeNode(n2)),
		entryAt(2, KindRegisterNode, t0, 0, EncodeNode(n1)),
		entryAt(3, KindRegisterNode, t0, 0, EncodeNode(n1b)),
	)
	for i, r := range res {
		if want := (Result{Kind: KindRegisterNode}); !reflect.DeepEqual(r, want) {
			t.Fatalf("Result[%d] = %+v, want %+v", i, r, want)
		}
	}
	got, err := db.Reads().Nodes()
	if err != nil {
		t.Fatal(err)
	}
	if want := []NodeInfo{n1b, n2}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Nodes() = %+v, want %+v", got, want)
	}
	if recs, _, _ := db.Reads().Log(0, 10); len(recs) != 0 {
		t.Fatalf("Log() = %+v, want no records for node entries", recs)
	}
}

func TestCorruptEntries(t *testing.T) {
	tests := []struct {
		name     string
		data     []byte
		wantKind CommandKind
	}{
		{"nil data", nil, 0},
		{"garbage", []byte("not a command"), 0},
		{"unknown kind", EncodeCommand(Command{Kind: 9, Time: t0, Payload: EncodeTx(Tx{ID: 1})}), 0},
		{"bad tx payload", EncodeCommand(Command{Kind: KindTx, Time: t0, Payload: []byte{1, 2, 3}}), KindTx},
		{"tx over limits", EncodeCommand(Command{Kind: KindTx, Time: t0, Payload: EncodeTx(Tx{ID: 1, Ops: []Op{put("", "1")}})}), KindTx},
		{"bad node payload", EncodeCommand(Command{Kind: KindRegisterNode, Time: t0, Payload: []byte{1}}), KindRegisterNode},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var errText string
			for replica := range 2 { // the same on every node
				db := openTest(t)
				applyOne(t, db, txEntry(1, 1, "", put("a", "1")))
				before := dump(t, db)
				res := applyOne(t, db, Entry{Index: 2, Term: 1, Data: tt.data})
				if !errors.Is(res.Err, ErrCorrupt) || res.Skipped || res.Duplicate || res.Kind != tt.wantKind {
					t.Fatalf("Result = %+v, want Err wrapping ErrCorrupt and Kind %d", res, tt.wantKind)
				}
				if replica == 1 && res.Err.Error() != errText {
					t.Fatalf("Err = %q on one replica, %q on another", res.Err, errText)
				}
				errText = res.Err.Error()
				if got := db.AppliedIndex(); got != 2 {
					t.Fatalf("AppliedIndex() = %d, want 2", got)
				}
				after := dump(t, db)
				delete(before, "meta")
				delete(after, "meta")
				if !reflect.DeepEqual(after, before) {
					t.Fatalf("corrupt entry changed the state:\nbefore %v\nafter  %v", before, after)
				}
				if res := applyOne(t, db, txEntry(3, 2, "", put("a", "2"))); res.Outcome.Versions["a"] != 2 {
					t.Fatalf("next entry after a corrupt one = %+v, want a at version 2", res)
				}
			}
		})
	}
}

func TestSkipApplied(t *testing.T) {
	db := openTest(t)
	applyOK(t, db, txEntry(4, 1, "", put("a", "1")), txEntry(5, 2, "", put("a", "2")))
	res := applyOK(t, db,
		txEntry(3, 3, "", put("x", "1")),
		txEntry(5, 4, "", put("x", "1")),
		txEntry(6, 5, "", put("a", "3")),
		txEntry(6, 6, "", put("y", "1")), // repeated index in one batch
	)
	wantSkipped := []bool{true, true, false, true}
	for i, r := range res {
		if r.Skipped != wantSkipped[i] {
			t.Fatalf("Result[%d].Skipped = %v, want %v", i, r.Skipped, wantSkipped[i])
		}
		if r.Skipped && !reflect.DeepEqual(r, Result{Skipped: true}) {
			t.Fatalf("Result[%d] = %+v, want only Skipped", i, r)
		}
	}
	if kv := mustGet(t, db, "a"); kv.Version != 3 {
		t.Fatalf("Get(a).Version = %d, want 3", kv.Version)
	}
	for _, key := range []string{"x", "y"} {
		if _, err := db.Reads().Get(key); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get(%q) = %v, want ErrNotFound", key, err)
		}
	}
	if got := db.AppliedIndex(); got != 6 {
		t.Fatalf("AppliedIndex() = %d, want 6", got)
	}
}

// TestReapplyAfterReopen replays entries after a restart, as Raft does when the
// state machine is ahead of its last snapshot.
func TestReapplyAfterReopen(t *testing.T) {
	path := t.TempDir() + "/state.db"
	entries := mixedEntries()
	db := openAt(t, path)
	applyOK(t, db, entries...)
	want := dump(t, db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = openAt(t, path)
	if got, want := db.AppliedIndex(), entries[len(entries)-1].Index; got != want {
		t.Fatalf("AppliedIndex() after reopen = %d, want %d", got, want)
	}
	for i, r := range applyOK(t, db, entries...) {
		if !r.Skipped {
			t.Fatalf("Result[%d] = %+v, want Skipped", i, r)
		}
	}
	if got := dump(t, db); !reflect.DeepEqual(got, want) {
		t.Fatalf("state after replay differs:\ngot  %v\nwant %v", got, want)
	}
}

// TestBatchEqualsOneByOne checks that batching does not change what Apply does.
func TestBatchEqualsOneByOne(t *testing.T) {
	entries := mixedEntries()
	batch := openTest(t)
	batchRes := applyOK(t, batch, entries...)

	single := openTest(t)
	var singleRes []Result
	for _, e := range entries {
		singleRes = append(singleRes, applyOne(t, single, e))
	}

	for i := range entries {
		b, s := batchRes[i], singleRes[i]
		if b.Err != nil || s.Err != nil {
			if b.Err == nil || s.Err == nil || b.Err.Error() != s.Err.Error() {
				t.Fatalf("entry %d: Err %v in a batch, %v alone", i, b.Err, s.Err)
			}
			b.Err, s.Err = nil, nil
		}
		if !reflect.DeepEqual(b, s) {
			t.Fatalf("entry %d: Result %+v in a batch, %+v alone", i, b, s)
		}
	}
	if b, s := dump(t, batch), dump(t, single); !reflect.DeepEqual(b, s) {
		t.Fatalf("state after a batch differs from one by one:\nbatch  %v\nsingle %v", b, s)
	}
}

// mixedEntries returns entries of every kind and outcome: commits, conflicts,
// duplicates, node registrations, corrupt data, gaps, and enough leader time to
// prune.
func mixedEntries() []Entry {
	hour := int64(3600e9)
	return []Entry{
		txEntry(1, 1, "k1", put("a", `"a1"`), put("b", `"b1"`)),
		txEntry(2, 2, "", ifv(put("a", `"a2"`), 1)),
		txEntry(3, 3, "k3", ifv(put("a", `"bad"`), 0)),
		txEntry(5, 4, "k1", put("c", "1")), // duplicate by key
		entryAt(6, KindRegisterNode, t0, 0, EncodeNode(NodeInfo{ID: "n1", TxIDNode: 1})),
		{Index: 7, Term: 2, Data: []byte("junk")},
		txEntry(8, 2, "", put("z", "1")), // duplicate by txid
		entryAt(9, KindTx, t0+2*hour, 0, EncodeTx(Tx{ID: 5, Ops: []Op{del("b"), put("d", "[1]")}})),
		entryAt(10, KindTx, t0+3*hour, time.Hour, EncodeTx(Tx{ID: 6, Ops: []Op{put("e", "1")}})), // prunes 1-3
		entryAt(11, KindTx, t0, time.Hour, EncodeTx(Tx{ID: 1, IdempotencyKey: "k1", Ops: []Op{put("f", "1")}})),
		entryAt(12, KindTx, t0+25*hour, 0, EncodeTx(Tx{ID: 7, Ops: []Op{ifv(put("a", "3"), 2)}})),
	}
}

// cyclingOps returns n+1 ops: puts to c, b, a, c, b, a, ..., each with the
// if_version it expects on a fresh database, then a delete of a. With n =
// evaluateMapOps (16), enough for evaluate to look keys up in a map, c ends at
// version 6 with value "15" and b at 5 with "13".
func cyclingOps(n int) []Op {
	var ops []Op
	for i := range n {
		ops = append(ops, ifv(put(string(rune('c'-i%3)), strconv.Itoa(i)), uint64(i/3)))
	}
	return append(ops, del("a"))
}

// TestApplyKeepsNoEntryData overwrites each entry's Data after Apply, as a
// caller that reuses its buffers may: the values the store answers with, a
// single-op transaction's (which the overlay keeps in the transaction's decoded
// copy) and a multi-op one's (copied on their own), stay as applied.
func TestApplyKeepsNoEntryData(t *testing.T) {
	db := openTest(t)
	defer db.Close()
	long := `"` + strings.Repeat("single op value ", 8) + `"`
	entries := []Entry{
		txEntry(1, 1, "", put("one", long)),
		txEntry(2, 2, "", put("small", `1`), put("big", `"a much longer value than the other op's"`)),
	}
	applyOK(t, db, entries...)
	for _, e := range entries {
		for i := range e.Data {
			e.Data[i] = 'X'
		}
	}
	want := map[string]string{"one": long, "small": `1`, "big": `"a much longer value than the other op's"`}
	for key, value := range want {
		kv, err := db.Reads().Get(key)
		if err != nil || string(kv.Value) != value {
			t.Errorf("Get(%q) = %q, %v; want %q", key, kv.Value, err, value)
		}
	}
}
