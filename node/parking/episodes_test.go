package parking_test

import (
	"context"
	"testing"
	"time"

	"github.com/txlog/txlog/node/parking/redistest"
)

// TestEpisodes: of two nodes that open the same episode, one opens it; of
// two that close it, one closes it; a closed episode kept is not opened
// again; one forgotten is.
func TestEpisodes(t *testing.T) {
	s := redistest.Start(t)
	a := open(t, testConfig(s.Addr, "n1")).Episodes()
	b := open(t, testConfig(s.Addr, "n2")).Episodes()
	ctx := context.Background()
	must := func(ok bool, err error) bool {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !must(a.Open(ctx, "TxlogNoLeader,after-term-3", time.Minute)) || must(b.Open(ctx, "TxlogNoLeader,after-term-3", time.Minute)) {
		t.Fatal("want exactly the first Open to open")
	}
	if err := b.Keep(ctx, "TxlogNoLeader,after-term-3", time.Minute); err != nil {
		t.Fatal(err)
	}
	if !must(b.Close(ctx, "TxlogNoLeader,after-term-3", time.Hour)) || must(a.Close(ctx, "TxlogNoLeader,after-term-3", time.Hour)) {
		t.Fatal("want exactly the first Close to close")
	}
	if must(a.Open(ctx, "TxlogNoLeader,after-term-3", time.Minute)) {
		t.Fatal("a closed episode kept was opened again")
	}
	must(a.Open(ctx, "TxlogMemberUnreachable,member=n3,member-n3", time.Minute))
	if !must(a.Close(ctx, "TxlogMemberUnreachable,member=n3,member-n3", 0)) {
		t.Fatal("close")
	}
	if !must(b.Open(ctx, "TxlogMemberUnreachable,member=n3,member-n3", time.Minute)) {
		t.Fatal("a forgotten episode was not opened again")
	}
}
