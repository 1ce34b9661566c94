package node

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
)

// TestTransferLeadershipEdges: on a one-node cluster, a transfer to the
// leader itself is a no-op that says so (unchanged), one without an id is
// a 409 conflict that names the leader (there is no other voter), one to
// a server that is not a member a 400 naming it, and a removal of a server
// that is not a member a 404 naming it; the node stays the leader.
func TestTransferLeadershipEdges(t *testing.T) {
	n := oneNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := n.TransferLeadership(ctx, wire.TransferRequest{ID: "n1"})
	if err != nil || res != (wire.TransferResult{LeaderID: "n1", Unchanged: true}) {
		t.Fatalf("TransferLeadership(n1) = %+v, %v; want n1 unchanged", res, err)
	}
	for _, tc := range []struct {
		name string
		do   func() error
		code string
		msg  string
	}{
		{"no id", func() error { _, err := n.TransferLeadership(ctx, wire.TransferRequest{}); return err },
			wire.CodeConflict, `no voter but the leader "n1" to hand leadership to; name one with id, or join one first`},
		{"not a member", func() error { _, err := n.TransferLeadership(ctx, wire.TransferRequest{ID: "n9"}); return err },
			wire.CodeInvalidParam, `body field id="n9": not a member; want the id of a voter`},
		{"remove not a member", func() error { return n.Remove(ctx, "n9") },
			wire.CodeNotFound, `node "n9" is not a member`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			e, ok := errors.AsType[*wire.Error](err)
			if !ok || e.Code != tc.code || e.Message != tc.msg {
				t.Fatalf("err = %v, want %s: %s", err, tc.code, tc.msg)
			}
		})
	}
	if st := n.raft.Status(); st.LeaderID != "n1" {
		t.Fatalf("leader after the transfers = %q, want n1", st.LeaderID)
	}
}
