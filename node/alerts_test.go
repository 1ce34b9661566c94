package node

import (
	"testing"
	"time"

	"github.com/txlog/txlog/txid"
)

// idAt returns a txid issued at t by node n.
func idAt(t time.Time, n uint64) txid.ID {
	return txid.ID(uint64(t.Sub(txid.Epoch).Milliseconds())<<(txid.SeqBits+txid.NodeBits) | n<<txid.SeqBits)
}

func TestIntakeOldest(t *testing.T) {
	in := newIntake(nil)
	if n, at := in.oldest(); n != 0 || !at.IsZero() {
		t.Fatalf("empty: %d, %v", n, at)
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, d := range []time.Duration{3 * time.Second, time.Second, 2 * time.Second} {
		id := idAt(base.Add(d), uint64(i+1))
		in.entries[id] = &intakeEntry{id: id}
	}
	if n, at := in.oldest(); n != 3 || !at.Equal(base.Add(time.Second)) {
		t.Fatalf("oldest: %d, %v; want 3, %v", n, at, base.Add(time.Second))
	}
}
