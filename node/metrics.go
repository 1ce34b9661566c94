package node

import (
	"errors"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/txlog/txlog/api/wire"
)

// Transaction outcomes, the outcome label of txlog_tx_total.
const (
	outcomeCommitted = iota
	outcomeRejected
	outcomeParked
	outcomeDuplicate
	outcomeUnknown
	outcomeError
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"committed", "rejected", "parked", "duplicate", "unknown", "error"}

// Results of a replayed (or drained) transaction, the result label of
// txlog_replayed_total.
const (
	replayResolved = iota // committed or rejected: its outcome is in the log
	replayDropped         // refused for good (a client error, or not a transaction)
	replayRetry           // no outcome yet: back to the replayer, or left in Redis
	numReplay
)

var replayNames = [numReplay]string{"resolved", "dropped", "retry"}

// nodeMetrics are the node's own metrics (docs/operations.md, Metrics). Every
// series the write path touches is made here, with its labels, so that
// counting is an atomic add; gauges are computed when scraped, from state the
// node keeps anyway. Without Config.Metrics the counters still count, into
// nothing registered.
type nodeMetrics struct {
	tx          [numOutcomes]prometheus.Counter
	durQuorum   prometheus.Observer
	durAll      prometheus.Observer
	durAccepted prometheus.Observer
	parkedWAL   prometheus.Counter
	parkedRedis prometheus.Counter
	replayed    [numReplay]prometheus.Counter
	// txidReissued counts the transactions a request proposed again under
	// a fresh txid (writer.reissue).
	txidReissued prometheus.Counter
	refused      *prometheus.CounterVec // forwarded frames the leader refused, by code (framecheck.go)
	audits       *prometheus.CounterVec // audit records written, by result (audit.go)
	vecs         []prometheus.Collector // what registerMetrics registers of the above
}

func newNodeMetrics() *nodeMetrics {
	tx := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "txlog_tx_total",
		Help: "Transactions written through this node, by outcome.",
	}, []string{"outcome"})
	dur := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "txlog_tx_duration_seconds",
		Help:    "Time to answer a write request (POST /v1/tx or /v1/tx/batch), by ack level.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 14), // 100µs .. 15s
	}, []string{"ack"})
	parked := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "txlog_parked_total",
		Help: "Transactions parked (answered 202 pending), by where they are held: wal, redis.",
	}, []string{"store"})
	replayed := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "txlog_replayed_total",
		Help: "Parked transactions proposed by the replayer or the Redis drain, by result.",
	}, []string{"result"})
	refused := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "txlog_forwarded_refused_total",
		Help: "Frames forwarded to this node as leader that it refused before proposing them, by wire code.",
	}, []string{"code"})
	m := &nodeMetrics{
		refused:     refused,
		audits:      newAuditCounter(),
		durQuorum:   dur.WithLabelValues(wire.AckQuorum),
		durAll:      dur.WithLabelValues(wire.AckAll),
		durAccepted: dur.WithLabelValues(wire.AckAccepted),
		parkedWAL:   parked.WithLabelValues(wire.HeldByWAL),
		parkedRedis: parked.WithLabelValues(wire.HeldByRedis),
		txidReissued: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "txlog_txid_reissued_total",
			Help: "Transactions this node proposed again under a fresh txid because their first was recorded for another transaction.",
		}),
	}
	for i, name := range outcomeNames {
		m.tx[i] = tx.WithLabelValues(name)
	}
	for i, name := range replayNames {
		m.replayed[i] = replayed.WithLabelValues(name)
	}
	m.vecs = []prometheus.Collector{tx, dur, parked, replayed, m.txidReissued, refused, m.audits}
	return m
}

// answered counts the answer of one write request of n transactions that
// took took: each result's outcome, or n errors when the request failed as a
// whole (err), and the time to answer.
func (m *nodeMetrics) answered(ack string, took time.Duration, results []wire.TxResult, n int, err error) {
	var dur prometheus.Observer
	switch ack {
	case wire.AckAll:
		dur = m.durAll
	case wire.AckAccepted:
		dur = m.durAccepted
	default:
		dur = m.durQuorum
	}
	dur.Observe(took.Seconds())
	if err != nil {
		m.tx[outcomeError].Add(float64(n))
		return
	}
	for i := range results {
		m.tx[outcome(&results[i])].Inc()
	}
}

func outcome(r *wire.TxResult) int {
	switch {
	case r.Error != nil && r.Status == wire.StatusUnknown:
		return outcomeUnknown
	case r.Error != nil:
		return outcomeError
	case r.Duplicate:
		return outcomeDuplicate
	case r.Status == wire.StatusCommitted:
		return outcomeCommitted
	case r.Status == wire.StatusRejected:
		return outcomeRejected
	case r.Status == wire.StatusPending:
		return outcomeParked
	case r.Status == wire.StatusUnknown:
		return outcomeUnknown
	}
	return outcomeError
}

// registerMetrics registers n.met and the node's scrape-time gauges with reg
// (node/parking registers txlog_redis_breaker_state).
func registerMetrics(n *Node, reg prometheus.Registerer) error {
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	cs := append([]prometheus.Collector{}, n.met.vecs...)
	cs = append(cs,
		gauge("txlog_intake_unresolved", "Transactions this node accepted and has not seen resolved (in flight or parked).",
			func() float64 { return float64(n.intake.size()) }),
		gauge("txlog_intake_oldest_age_seconds", "Age of the oldest transaction this node accepted and has not seen resolved; 0 when none.",
			func() float64 { return n.intake.oldestAge(time.Now()).Seconds() }),
		gauge("txlog_disk_free_bytes", "Bytes free to an unprivileged user on the data directory's file system.",
			func() float64 { free, _, _ := diskSpace(n.cfg.DataDir); return free }),
		gauge("txlog_disk_size_bytes", "Total bytes of the data directory's file system.",
			func() float64 { _, size, _ := diskSpace(n.cfg.DataDir); return size }),
		gauge("txlog_leases_held", "Leases held (live) in this node's applied state.",
			func() float64 {
				ls, err := n.db.Reads().Leases()
				if err != nil {
					return 0
				}
				now, held := leaseNow(n.db), 0
				for _, l := range ls {
					if l.LiveAt(now) {
						held++
					}
				}
				return float64(held)
			}),
	)
	cs = append(cs, consumerLag{n})
	var errs []error
	for _, c := range cs {
		errs = append(errs, reg.Register(c))
	}
	return errors.Join(errs...)
}

// metricsHandler serves GET /metrics from reg, when reg is also a
// prometheus.Gatherer (a *prometheus.Registry); nil otherwise.
func metricsHandler(reg prometheus.Registerer) http.Handler {
	g, ok := reg.(prometheus.Gatherer)
	if !ok {
		return nil
	}
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{})
}

var consumerLagDesc = prometheus.NewDesc("txlog_consumer_lag",
	"A consumer group's lag: this node's last applied index minus the group's committed offset (0 at or past it), as GET /v1/consumers answers.",
	[]string{"group"}, nil)

// consumerLag collects txlog_consumer_lag when scraped, from the store's
// consumer groups.
type consumerLag struct{ n *Node }

func (c consumerLag) Describe(ch chan<- *prometheus.Desc) { ch <- consumerLagDesc }

func (c consumerLag) Collect(ch chan<- prometheus.Metric) {
	cs, err := c.n.db.Reads().Consumers()
	if err != nil {
		return
	}
	applied := c.n.db.AppliedIndex()
	for _, g := range cs {
		ch <- prometheus.MustNewConstMetric(consumerLagDesc, prometheus.GaugeValue, float64(fromConsumer(g, applied).Lag), g.Group)
	}
}
