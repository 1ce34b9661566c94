package store

import (
	"os"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics makes the store's metrics (Config.Metrics) and sets db.fsync;
// Open registers them once the file is open. txlog_fsync_duration_seconds
// is registered by replication and wal too, each with its own log label:
// the name, help and buckets are the same in all three.
func (db *DB) metrics() []prometheus.Collector {
	fsync := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:        "txlog_fsync_duration_seconds",
		Help:        fsyncHelp,
		ConstLabels: prometheus.Labels{"log": "store"},
		Buckets:     prometheus.ExponentialBuckets(0.00005, 2, 16), // 50µs .. 1.6s
	})
	db.fsync = fsync
	size := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "txlog_store_bytes",
		Help: "Size of the state machine's file (state.db), in bytes.",
	}, func() float64 {
		st, err := os.Stat(db.path)
		if err != nil {
			return 0
		}
		return float64(st.Size())
	})
	return []prometheus.Collector{fsync, size, db.txidConflicts}
}

// newTxIDConflicts makes txlog_txid_conflicts_total, which DB counts with or
// without Config.Metrics.
func newTxIDConflicts() prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{
		Name: "txlog_txid_conflicts_total",
		Help: "Transaction entries the state machine refused because their txid is recorded for another transaction (every node counts the entries it applies).",
	})
}

// fsyncHelp is the help of txlog_fsync_duration_seconds, the same in every
// package that registers it (a registry refuses two helps for one name).
const fsyncHelp = "Time of one fsync, by log: raft (an append to the Raft log, its write and fsync), intake (the intake WAL), store (the state machine's file)."
