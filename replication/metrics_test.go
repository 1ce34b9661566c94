package replication

import (
	"testing"
	"time"

	metrics "github.com/armon/go-metrics"
	"github.com/hashicorp/raft"
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

// monotonicStore is a logStore that says whether it is monotonic, as
// raft-wal does (true) and raft-boltdb does not (it has no IsMonotonic).
type monotonicStore struct {
	logStore
	monotonic bool
}

func (m monotonicStore) IsMonotonic() bool { return m.monotonic }

// TestTimedLogStoreMonotonic: the timing wrapper passes raft-wal's
// MonotonicLogStore through (raft resets such a log after restoring a
// snapshot), and a store without it stays without.
func TestTimedLogStoreMonotonic(t *testing.T) {
	for _, tt := range []struct {
		name  string
		inner logStore
		want  bool
	}{
		{"monotonic", monotonicStore{monotonic: true}, true},
		{"not monotonic", monotonicStore{monotonic: false}, false},
		{"no IsMonotonic", struct{ logStore }{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var s raft.LogStore = timedLogStore{logStore: tt.inner}
			m, ok := s.(raft.MonotonicLogStore)
			if got := ok && m.IsMonotonic(); got != tt.want {
				t.Errorf("IsMonotonic() = %v, want %v", got, tt.want)
			}
		})
	}
}
