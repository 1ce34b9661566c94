package node

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/store"
)

func clusterOf(spec ...any) []Peer {
	var ps []Peer
	for i := 0; i < len(spec); i += 2 {
		ps = append(ps, Peer{ID: spec[i].(string), RaftAddr: "127.0.0.1:1", NodeNumber: spec[i+1].(int)})
	}
	return ps
}

func TestBootstrapNumbers(t *testing.T) {
	tests := []struct {
		name     string
		cluster  []Peer
		self     string
		selfWant int
		want     map[string]int
		wantErr  string
	}{
		{name: "trailing digits when they are distinct", cluster: clusterOf("n1", 0, "n2", 0, "n3", 0), self: "n1",
			want: map[string]int{"n1": 1, "n2": 2, "n3": 3}},
		{name: "trailing digits collide: place in the sorted list", cluster: clusterOf("c1", 0, "a1", 0, "b1", 0), self: "a1",
			want: map[string]int{"a1": 1, "b1": 2, "c1": 3}},
		{name: "n4 and m4", cluster: clusterOf("n4", 0, "m4", 0), self: "n4",
			want: map[string]int{"m4": 1, "n4": 2}},
		{name: "an id without digits", cluster: clusterOf("n1", 0, "n2", 0, "x", 0), self: "x",
			want: map[string]int{"n1": 1, "n2": 2, "x": 3}},
		{name: "digits out of range", cluster: clusterOf("n1", 0, "n2000", 0), self: "n1",
			want: map[string]int{"n1": 1, "n2000": 2}},
		{name: "given numbers are kept and skipped", cluster: clusterOf("a1", 1, "b1", 0, "c1", 0), self: "b1",
			want: map[string]int{"a1": 1, "b1": 2, "c1": 3}},
		{name: "digits that a given number takes", cluster: clusterOf("n1", 2, "n2", 0, "n3", 0), self: "n3",
			want: map[string]int{"n1": 2, "n2": 1, "n3": 3}},
		{name: "self's --node-number counts as given", cluster: clusterOf("n1", 0, "n2", 0), self: "n2", selfWant: 9,
			want: map[string]int{"n1": 1, "n2": 9}},
		{name: "the same number given twice", cluster: clusterOf("a", 3, "b", 3), self: "a", wantErr: "3 given to both a and b"},
		{name: "--node-number against the list", cluster: clusterOf("a", 3, "b", 0), self: "a", selfWant: 4, wantErr: "gives a number 3, --node-number 4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := bootstrapNumbers(tt.cluster, tt.self, tt.selfWant)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("bootstrapNumbers() = %v, %v; want error %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || !maps.Equal(got, tt.want) {
				t.Fatalf("bootstrapNumbers() = %v, %v; want %v", got, err, tt.want)
			}
			seen := map[int]string{}
			for id, num := range got {
				if other, ok := seen[num]; ok {
					t.Fatalf("%s and %s both got %d", id, other, num)
				}
				seen[num] = id
			}
		})
	}
}

func TestPickNumber(t *testing.T) {
	registry := []store.NodeInfo{{ID: "n1", TxIDNode: 1}, {ID: "n2", TxIDNode: 2}, {ID: "n3", TxIDNode: 3}, {ID: "gone", TxIDNode: 4}}
	members := []string{"n1", "n2", "n3"}
	tests := []struct {
		name     string
		id       string
		want     int
		members  []string
		got      int
		wantCode string
		wantMsg  string
	}{
		{name: "a free number, past every registered one", id: "m1", members: members, got: 5},
		{name: "a fresh data dir of a known id gets a new number", id: "gone", members: members, got: 5},
		{name: "asking for a free number", id: "m1", want: 9, members: members, got: 9},
		{name: "asking for a removed server's number", id: "m1", want: 4, members: members, got: 4},
		{name: "asking for one's own number again", id: "n2", want: 2, members: members, got: 2},
		{name: "a member joining again without a number keeps its own", id: "n2", members: members, got: 2},
		{name: "asking for a member's number", id: "x", want: 2, members: members, wantCode: wire.CodeNodeNumberTaken, wantMsg: "held by member n2"},
		{name: "a member not registered yet", id: "m1", members: append(members, "n5"), wantCode: wire.CodeNotReady, wantMsg: "n5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := pickNumber(tt.id, tt.want, tt.members, registry)
			if tt.wantCode != "" {
				ae, ok := errors.AsType[*wire.Error](err)
				if !ok || ae.Code != tt.wantCode || !strings.Contains(ae.Message, tt.wantMsg) {
					t.Fatalf("pickNumber() = %d, %v; want %s naming %q", got, err, tt.wantCode, tt.wantMsg)
				}
				return
			}
			if err != nil || got != tt.got {
				t.Fatalf("pickNumber() = %d, %v; want %d", got, err, tt.got)
			}
		})
	}
}

func TestClashWith(t *testing.T) {
	registry := []store.NodeInfo{{ID: "n4", TxIDNode: 4}, {ID: "m4", TxIDNode: 4}, {ID: "old", TxIDNode: 5}, {ID: "n5", TxIDNode: 5}}
	members := []string{"n4", "m4", "n5"}
	if got := clashWith("n4", 4, members, registry); got != "m4" {
		t.Errorf("clashWith(n4) = %q, want m4", got)
	}
	if got := clashWith("m4", 4, members, registry); got != "n4" {
		t.Errorf("clashWith(m4) = %q, want n4", got)
	}
	if got := clashWith("n5", 5, members, registry); got != "" {
		t.Errorf("clashWith(n5) = %q, want none: old is not a member", got)
	}
	if got := clashWith("n4", 4, []string{"n4", "n5"}, registry); got != "" {
		t.Errorf("clashWith(n4) after m4's removal = %q, want none", got)
	}
}

func TestNumberFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), numberFile)
	if got, err := readNumber(path); got != 0 || err != nil {
		t.Fatalf("readNumber(missing) = %d, %v; want 0, nil", got, err)
	}
	if err := writeNumber(path, 17); err != nil {
		t.Fatal(err)
	}
	if got, err := readNumber(path); got != 17 || err != nil {
		t.Fatalf("readNumber() = %d, %v; want 17", got, err)
	}
	for _, bad := range []string{"", "x", "0", "1024", "-3"} {
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err := readNumber(path); err == nil {
			t.Errorf("readNumber(%q) = %d, nil; want an error", bad, got)
		}
	}
}

func TestWriteErr(t *testing.T) {
	var m membership
	if err := m.writeErr(); err == nil {
		t.Fatal("writeErr() without a number = nil; want not_ready")
	}
	m.number.Store(4)
	if err := m.writeErr(); err == nil {
		t.Fatal("writeErr() before the registration is seen = nil; want not_ready")
	}
	m.registered.Store(true)
	if err := m.writeErr(); err != nil {
		t.Fatalf("writeErr() = %v, want nil", err)
	}
	holder := "m4"
	m.clash.Store(&holder)
	if err := m.writeErr(); !errors.Is(err, wire.ErrNodeNumberClash) || !strings.Contains(err.Error(), "m4") {
		t.Fatalf("writeErr() with a clash = %v, want ErrNodeNumberClash naming m4", err)
	}
	m.removed.Store(true)
	if err := m.writeErr(); !errors.Is(err, wire.ErrRemoved) {
		t.Fatalf("writeErr() removed = %v, want ErrRemoved", err)
	}
	if b := wire.NewErrorBody(m.writeErr()); b.Code != wire.CodeRemoved {
		t.Fatalf("wire code = %s, want removed", b.Code)
	}
}
