package replication

import (
	"errors"
	"time"

	gometrics "github.com/armon/go-metrics"
	gmprom "github.com/armon/go-metrics/prometheus"
	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
)

// raftMetrics are the package's metrics (Config.Metrics). Gauges are read
// from raft when scraped; the only series the write path touches is the log
// store's fsync histogram, once per appended batch (timedLogStore).
type raftMetrics struct {
	leaderChanges prometheus.Counter
}

// fsyncHistogram is txlog_fsync_duration_seconds with its log label: the
// metric is registered once per log (raft here, intake by wal, store by store)
// with the same name, help and buckets, each with its own constant label.
func fsyncHistogram(log string) prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:        "txlog_fsync_duration_seconds",
		Help:        "Time of one fsync, by log: raft (an append to the Raft log, its write and fsync), intake (the intake WAL), store (the state machine's file).",
		ConstLabels: prometheus.Labels{"log": log},
		Buckets:     prometheus.ExponentialBuckets(0.00005, 2, 16), // 50µs .. 1.6s
	})
}

// registerMetrics registers r's metrics with reg.
func (r *Raft) registerMetrics(reg prometheus.Registerer) error {
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	cs := []prometheus.Collector{
		r.met.leaderChanges,
		gauge("txlog_raft_state", "This server's Raft state: 0 follower, 1 candidate, 2 leader, 3 shut down.",
			func() float64 { return float64(r.raft.State()) }),
		gauge("txlog_raft_term", "This server's current Raft term.",
			func() float64 { return float64(r.raft.CurrentTerm()) }),
		gauge("txlog_raft_commit_index", "The highest log index this server knows to be committed.",
			func() float64 { return float64(r.raft.CommitIndex()) }),
		gauge("txlog_raft_applied_index", "The log index this server's state machine is current to.",
			func() float64 { return float64(r.AppliedIndex()) }),
		lastContact{r},
	}
	var errs []error
	for _, c := range cs {
		errs = append(errs, reg.Register(c))
	}
	return errors.Join(errs...)
}

var lastContactDesc = prometheus.NewDesc("txlog_raft_last_contact_seconds",
	"Seconds since this server last heard from peer: on a follower, the leader; on the leader, each other member (0 while its heartbeats are answered, which raft sends every tenth of the heartbeat timeout).",
	[]string{"peer"}, nil)

// lastContact collects txlog_raft_last_contact_seconds when scraped.
type lastContact struct{ r *Raft }

func (c lastContact) Describe(ch chan<- *prometheus.Desc) { ch <- lastContactDesc }

func (c lastContact) Collect(ch chan<- prometheus.Metric) {
	r := c.r
	_, leader := r.raft.LeaderWithID()
	if r.raft.State() != raft.Leader {
		if leader != "" {
			if last := r.raft.LastContact(); !last.IsZero() {
				ch <- prometheus.MustNewConstMetric(lastContactDesc, prometheus.GaugeValue, time.Since(last).Seconds(), string(leader))
			}
		}
		return
	}
	f := r.raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range f.Configuration().Servers {
		if string(s.ID) == r.id {
			continue
		}
		age := 0.0
		if last, ok := r.failing[string(s.ID)]; ok && !last.IsZero() {
			age = time.Since(last).Seconds()
		}
		ch <- prometheus.MustNewConstMetric(lastContactDesc, prometheus.GaugeValue, age, string(s.ID))
	}
}

// timedLogStore observes the time of each append to the Raft log, which
// writes and fsyncs (raft-wal: one fdatasync; raft-boltdb: a bbolt commit):
// raft-wal's fsync happens inside its StoreLogs and cannot be timed apart.
type timedLogStore struct {
	logStore
	fsync prometheus.Observer
}

func (t timedLogStore) StoreLog(l *raft.Log) error { return t.StoreLogs([]*raft.Log{l}) }

func (t timedLogStore) StoreLogs(logs []*raft.Log) error {
	start := time.Now()
	err := t.logStore.StoreLogs(logs)
	t.fsync.Observe(time.Since(start).Seconds())
	return err
}

// IsMonotonic passes raft-wal's raft.MonotonicLogStore through: raft resets
// such a log after restoring a snapshot instead of keeping gaps.
func (t timedLogStore) IsMonotonic() bool {
	m, ok := t.logStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

// ExportRaftMetrics sends hashicorp/raft's own metrics (go-metrics; raft_*
// names, timings in milliseconds) to reg through go-metrics' Prometheus
// sink. go-metrics keeps one sink per process, so call it once, from main:
// with several Rafts in one process their metrics would mix. The metrics raft
// records per entry, per batch or per RPC (hotPath) are left out: the sink
// flattens every key with a regexp and observes a summary under a lock, and
// at one client a batch is one entry, so they cost each transaction about 30
// of those calls across the cluster. txlog's own metrics cover what they
// measured: txlog_tx_total and txlog_tx_duration_seconds the transactions,
// txlog_fsync_duration_seconds{log="raft"} the log appends,
// txlog_raft_commit_index and txlog_raft_applied_index the progress. What
// stays is what raft records per event or per heartbeat: elections and state
// changes, heartbeats, leader contact, snapshots, restores, log age.
func ExportRaftMetrics(reg prometheus.Registerer) error {
	sink, err := gmprom.NewPrometheusSinkFrom(gmprom.PrometheusOpts{Registerer: reg})
	if err != nil {
		return err
	}
	cfg := gometrics.DefaultConfig("")
	cfg.EnableHostname, cfg.EnableHostnameLabel, cfg.EnableRuntimeMetrics, cfg.EnableServiceLabel = false, false, false, false
	_, err = gometrics.NewGlobal(cfg, hotPathFilter{sink})
	return err
}

// hotPathFilter drops raft's per-entry, per-batch and per-RPC metrics
// (hotPath) before the sink flattens their keys. go-metrics' Metrics calls
// only the WithLabels methods.
type hotPathFilter struct{ gometrics.MetricSink }

// hotPath reports whether raft records key for every entry, batch of entries
// or RPC: raft.apply and raft.commitTime (per entry); raft.commitNumLogs,
// raft.fsm.{apply,applyBatch,applyBatchNum,enqueue} and
// raft.leader.{dispatchLog,dispatchNumLogs} (per batch);
// raft.replication.appendEntries.*, raft.rpc.appendEntries.* and raft.net.*
// (per RPC, heartbeats included for raft.net).
func hotPath(key []string) bool {
	if len(key) < 2 || key[0] != "raft" {
		return false
	}
	switch key[1] {
	case "apply", "commitTime", "commitNumLogs":
		return len(key) == 2
	case "net":
		return true
	case "fsm":
		return len(key) == 3 && (key[2] == "apply" || key[2] == "applyBatch" || key[2] == "applyBatchNum" || key[2] == "enqueue")
	case "leader":
		return len(key) == 3 && (key[2] == "dispatchLog" || key[2] == "dispatchNumLogs")
	case "replication", "rpc":
		return len(key) >= 3 && key[2] == "appendEntries"
	}
	return false
}

func (f hotPathFilter) SetGaugeWithLabels(key []string, val float32, labels []gometrics.Label) {
	if !hotPath(key) {
		f.MetricSink.SetGaugeWithLabels(key, val, labels)
	}
}

func (f hotPathFilter) IncrCounterWithLabels(key []string, val float32, labels []gometrics.Label) {
	if !hotPath(key) {
		f.MetricSink.IncrCounterWithLabels(key, val, labels)
	}
}

func (f hotPathFilter) AddSampleWithLabels(key []string, val float32, labels []gometrics.Label) {
	if !hotPath(key) {
		f.MetricSink.AddSampleWithLabels(key, val, labels)
	}
}
