package wal

import "github.com/prometheus/client_golang/prometheus"

// fsyncHistogram is txlog_fsync_duration_seconds{log="intake"}, the time of
// one segment fsync of a group commit. replication and store register the
// same name with their own log label: name, help and buckets are the same.
func fsyncHistogram() prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:        "txlog_fsync_duration_seconds",
		Help:        "Time of one fsync, by log: raft (an append to the Raft log, its write and fsync), intake (the intake WAL), store (the state machine's file).",
		ConstLabels: prometheus.Labels{"log": "intake"},
		Buckets:     prometheus.ExponentialBuckets(0.00005, 2, 16), // 50µs .. 1.6s
	})
}
