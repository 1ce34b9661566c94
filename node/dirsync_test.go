package node

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/txlog/txlog/dirsync/dirsynctest"
)

// TestDirSyncsAtOpen opens a node in a data dir whose parent does not exist
// and checks that Open made the data dir's name durable in its parent, and
// fsynced the data dir with every part's entry in it, before it returned
// (after Open the node serves: Run answers writes).
func TestDirSyncsAtOpen(t *testing.T) {
	addrs := freeAddrs(t, 2)
	base := t.TempDir()
	data := filepath.Join(base, "new", "data")
	cfg := Config{
		ID:       "n1",
		DataDir:  data,
		HTTPAddr: addrs[0],
		RaftAddr: addrs[1],
		Cluster:  []Peer{{ID: "n1", RaftAddr: addrs[1]}},
	}
	rec := &dirsynctest.Recorder{}
	n, err := open(context.Background(), cfg, rec.Sync)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	rec.WantInOrder(t, [2]string{base, "new"}, [2]string{filepath.Join(base, "new"), "data"})
	names := rec.Last(data)
	for _, want := range []string{"raft", "wal", "state.db", "state.db.meta", "txid.hwm", clusterIDFile, candidateFile, roundFile} {
		if !names[want] {
			t.Fatalf("the last fsync of the data dir before Open returned did not hold %s: %v", want, names)
		}
	}
}
