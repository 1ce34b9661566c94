package node

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/auth"
)

// auditTimeout bounds the writing of one audit record: the wait for its
// commit (ack quorum) before it is parked in the intake WAL like any
// write that outlasts its timeout, and so the wait Close may have for it.
const auditTimeout = 5 * time.Second

// Results of an audit record, the result label of txlog_audit_records_total.
const (
	auditCommitted = "committed" // in the log
	auditPending   = "pending"   // parked: the replayer commits it (intake WAL)
	auditError     = "error"     // not written: logged at Error
)

// newAuditCounter returns txlog_audit_records_total, with a series for
// each result from the start.
func newAuditCounter() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "txlog_audit_records_total",
		Help: "Audit records of admin actions this node wrote to the log, by result: committed, pending (parked, committed later) or error (lost; logged).",
	}, []string{"result"})
	for _, r := range []string{auditCommitted, auditPending, auditError} {
		c.WithLabelValues(r)
	}
	return c
}

// audit writes rec, one admin action, to the log (api.Config.Audit): a
// transaction of one put, of the key auth.AuditPrefix + a txid this node
// issues now (unique in the cluster, in time order; not the transaction's
// own txid, which the write path issues), and of rec as JSON. It goes
// through the node's own write path (SubmitBatch), not the API: no
// credential writes under auth.ReservedPrefix, but the node does. It
// returns at once: the write runs in the background, bounded by
// auditTimeout, and Close waits for it. Each record is logged at Info, and
// at Error if it could not be written.
func (n *Node) audit(rec wire.AuditRecord) {
	if rec.Node == "" {
		rec.Node = n.cfg.ID
	}
	if rec.At.IsZero() {
		rec.At = time.Now()
	}
	attrs := []any{"who", rec.Who, "role", rec.Role, "via", rec.Via, "action", rec.Action, "from", rec.From, "status", rec.Status}
	fail := func(err error, more ...any) {
		n.met.audits.WithLabelValues(auditError).Inc()
		n.log.Error("audit record not written", append(append(slices.Clip(attrs), more...), "err", err)...)
	}
	if n.refused != nil {
		fail(n.refused)
		return
	}
	if err := n.mem.writeErr(); err != nil {
		fail(err) // no txids to issue (number.go)
		return
	}
	key := auth.AuditPrefix + n.mem.ids.Next().String()
	attrs = append(attrs, "key", key)
	value, err := json.Marshal(rec)
	if err != nil {
		fail(err)
		return
	}
	n.log.Info("admin action", attrs...)
	tx := wire.TxRequest{Ops: []wire.Op{{Op: wire.OpPut, Key: key, Value: value}}}
	n.wg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), auditTimeout)
		defer cancel()
		res, err := n.Submit(ctx, tx, wire.SubmitOptions{Timeout: auditTimeout})
		switch {
		case err != nil:
			fail(err, "txid", res.TxID)
		case res.Status == wire.StatusCommitted:
			n.met.audits.WithLabelValues(auditCommitted).Inc()
		case res.Status == wire.StatusPending:
			n.met.audits.WithLabelValues(auditPending).Inc()
			n.log.Warn("audit record parked; the replayer commits it", append(slices.Clip(attrs), "txid", res.TxID)...)
		default: // rejected: an unconditional put is never
			fail(errUnexpected(res.Status), "txid", res.TxID)
		}
	})
}

// errUnexpected is an audit write's outcome that a put without conditions
// cannot have.
type errUnexpected string

func (e errUnexpected) Error() string { return "audit record write ended " + string(e) }
