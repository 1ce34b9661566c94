package replication

import (
	"strings"
	"testing"
	"time"

	metrics "github.com/armon/go-metrics"
	"github.com/hashicorp/raft"
)

// TestHotPathFilter: raft's per-entry, per-batch and per-RPC metrics stop at
// the filter, whatever method records them; the per-event ones reach the
// sink.
func TestHotPathFilter(t *testing.T) {
	sink := metrics.NewInmemSink(time.Hour, time.Hour)
	f := hotPathFilter{sink}
	want := map[string]bool{}
	for _, k := range []struct {
		key  []string
		kept bool
	}{
		{[]string{"raft", "apply"}, false},
		{[]string{"raft", "commitTime"}, false},
		{[]string{"raft", "commitNumLogs"}, false},
		{[]string{"raft", "fsm", "applyBatch"}, false},
		{[]string{"raft", "fsm", "applyBatchNum"}, false},
		{[]string{"raft", "fsm", "enqueue"}, false},
		{[]string{"raft", "fsm", "apply"}, false},
		{[]string{"raft", "leader", "dispatchLog"}, false},
		{[]string{"raft", "leader", "dispatchNumLogs"}, false},
		{[]string{"raft", "replication", "appendEntries", "rpc"}, false},
		{[]string{"raft", "replication", "appendEntries", "logs", "n2"}, false},
		{[]string{"raft", "rpc", "appendEntries"}, false},
		{[]string{"raft", "rpc", "appendEntries", "storeLogs"}, false},
		{[]string{"raft", "net", "rpcDecode"}, false},
		{[]string{"raft", "barrier"}, true},
		{[]string{"raft", "apply", "x"}, true},
		{[]string{"raft", "fsm", "snapshot"}, true},
		{[]string{"raft", "fsm", "restore"}, true},
		{[]string{"raft", "leader", "lastContact"}, true},
		{[]string{"raft", "replication", "heartbeat", "n2"}, true},
		{[]string{"raft", "rpc", "requestVote"}, true},
		{[]string{"raft", "state", "leader"}, true},
		{[]string{"raft", "peers"}, true},
		{[]string{"other", "net"}, true},
	} {
		want[strings.Join(k.key, ".")] = k.kept
		f.IncrCounterWithLabels(k.key, 1, nil)
		f.AddSampleWithLabels(k.key, 1, nil)
		f.SetGaugeWithLabels(k.key, 1, nil)
	}
	var counters, samples, gauges map[string]bool = map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, iv := range sink.Data() {
		for k := range iv.Counters {
			counters[k] = true
		}
		for k := range iv.Samples {
			samples[k] = true
		}
		for k := range iv.Gauges {
			gauges[k] = true
		}
	}
	for key, kept := range want {
		if counters[key] != kept || samples[key] != kept || gauges[key] != kept {
			t.Errorf("%s reached the sink as counter %v, sample %v, gauge %v; want %v", key, counters[key], samples[key], gauges[key], kept)
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
