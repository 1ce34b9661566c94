package node

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/api"
)

// freeAddrs returns n loopback addresses whose ports were free a moment ago.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	var addrs []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, ln.Addr().String())
		defer ln.Close()
	}
	return addrs
}

// TestParkFailedWALIsUnknown opens one node of a three-node cluster whose other
// two never start, so that no write commits and every write is parked. With
// the intake WAL working the node answers 202 pending. Once an append fails
// (here the WAL is closed under it), the node must not answer no_leader ("not
// carried out"): a failed append may be on disk and a restart would replay it.
// It answers unknown_outcome with the txid, and /readyz says it is not ready.
func TestParkFailedWALIsUnknown(t *testing.T) {
	addrs := freeAddrs(t, 3)
	n, err := Open(Config{
		ID:       "n1",
		DataDir:  t.TempDir(),
		HTTPAddr: "127.0.0.1:0",
		RaftAddr: addrs[0],
		Cluster:  []Peer{{ID: "n1", RaftAddr: addrs[0]}, {ID: "n2", RaftAddr: addrs[1]}, {ID: "n3", RaftAddr: addrs[2]}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	submit := func(key string) (api.TxResult, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		return n.Submit(ctx, api.TxRequest{IdempotencyKey: key, Ops: []api.Op{{Op: "put", Key: key, Value: json.RawMessage(`1`)}}}, api.SubmitOptions{})
	}
	res, err := submit("parked")
	if err != nil || res.Status != api.StatusPending || res.TxID == 0 {
		t.Fatalf("with the WAL: %+v, %v; want 202 pending with a txid", res, err)
	}
	if err := n.Ready(context.Background()); err == nil || strings.Contains(err.Error(), "intake wal") {
		t.Fatalf("Ready() with a working WAL and no leader = %v, want not ready for want of a leader", err)
	}
	if err := n.intake.wal.Close(); err != nil {
		t.Fatal(err)
	}
	res, err = submit("wal-failed")
	if !errors.Is(err, api.ErrUnknownOutcome) || errors.Is(err, api.ErrNoLeader) || res.TxID == 0 {
		t.Fatalf("after a failed WAL append: %+v, %v; want unknown_outcome with a txid", res, err)
	}
	// A node that cannot park is not ready, whatever Raft says.
	if err := n.Ready(context.Background()); err == nil || !strings.Contains(err.Error(), "intake wal") {
		t.Fatalf("Ready() with a failed WAL = %v, want not ready, naming the intake wal", err)
	}
}
