package replication

import (
	"testing"
	"time"

	metrics "github.com/armon/go-metrics"
)

// TestPerEntryFilter: raft's per-entry metrics (raft.apply, raft.commitTime)
// stop at the filter; every other reaches the sink.
func TestPerEntryFilter(t *testing.T) {
	sink := metrics.NewInmemSink(time.Hour, time.Hour)
	f := perEntryFilter{sink}
	f.IncrCounterWithLabels([]string{"raft", "apply"}, 1, nil)
	f.AddSampleWithLabels([]string{"raft", "commitTime"}, 1, nil)
	f.IncrCounterWithLabels([]string{"raft", "barrier"}, 1, nil)
	f.AddSampleWithLabels([]string{"raft", "fsm", "applyBatch"}, 1, nil)
	f.AddSampleWithLabels([]string{"raft", "replication", "apply"}, 1, nil)
	got := map[string]bool{}
	for _, iv := range sink.Data() {
		for k := range iv.Counters {
			got[k] = true
		}
		for k := range iv.Samples {
			got[k] = true
		}
	}
	for key, want := range map[string]bool{
		"raft.apply": false, "raft.commitTime": false,
		"raft.barrier": true, "raft.fsm.applyBatch": true, "raft.replication.apply": true,
	} {
		if got[key] != want {
			t.Errorf("sink has %s: %v, want %v (sink: %v)", key, got[key], want, got)
		}
	}
}
