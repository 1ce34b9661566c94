package node

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/notify"
	"github.com/txlog/txlog/replication"
	"github.com/txlog/txlog/store"
)

// notifyCheck is how often callbacks.loop checks whether this node leads.
const notifyCheck = 200 * time.Millisecond

// callbacks runs the callback deliverer (package notify) on the leader, over
// the store's pending deliveries.
type callbacks struct {
	cfg  Config
	log  *slog.Logger
	db   *store.DB
	raft *replication.Raft
	life context.Context // ends when the node closes
}

// loop runs the callback deliverer (package notify) while this node
// leads, and stops it when leadership goes: the new leader reads the same
// pending deliveries from the replicated store and goes on.
func (cb *callbacks) loop() {
	t := time.NewTicker(notifyCheck)
	defer t.Stop()
	var run *deliverRun
	defer func() { run.halt() }()
	for {
		select {
		case <-cb.life.Done():
			return
		case <-t.C:
		}
		leads := cb.raft.IsLeader()
		if leads && run == nil {
			cb.log.Info("notify: delivering callbacks as leader")
			run = startDeliverer(cb.life, cb.config())
		} else if !leads && run != nil {
			cb.log.Info("notify: no longer leader; callbacks stop here")
			run.halt()
			run = nil
		}
	}
}

// deliverRun is one notify.Run, while this node leads.
type deliverRun struct {
	stop  context.CancelFunc
	ended chan struct{}
}

func startDeliverer(parent context.Context, cfg notify.Config) *deliverRun {
	ctx, stop := context.WithCancel(parent)
	r := &deliverRun{stop: stop, ended: make(chan struct{})}
	go func() {
		defer close(r.ended)
		_ = notify.Run(ctx, cfg)
	}()
	return r
}

// halt stops the run and waits for it; a nil run is a no-op.
func (r *deliverRun) halt() {
	if r != nil {
		r.stop()
		<-r.ended
	}
}

func (cb *callbacks) config() notify.Config {
	return notify.Config{
		Pending:      cb.pending,
		Done:         cb.done,
		Secret:       []byte(cb.cfg.WebhookSecret),
		Allow:        cb.cfg.WebhookAllow,
		AllowPrivate: cb.cfg.WebhookAllowPrivate,
		MinBackoff:   cb.cfg.WebhookMinBackoff,
		MaxBackoff:   cb.cfg.WebhookMaxBackoff,
		Horizon:      cb.cfg.WebhookHorizon,
		Logger:       cb.log.With("component", "notify"),
	}
}

// pending reads up to max of the store's pending deliveries after index
// after, as notify items.
func (cb *callbacks) pending(after uint64, max int) ([]notify.Item, error) {
	ds, err := cb.db.Reads().Deliveries(after, max)
	if err != nil {
		return nil, err
	}
	items := make([]notify.Item, len(ds))
	for i, d := range ds {
		o := d.Outcome
		body, err := wire.MarshalJSON(wire.Callback{
			TxID:           o.TxID,
			IdempotencyKey: o.IdempotencyKey,
			Status:         statusString(o.Status),
			Index:          o.Index,
			Conflict:       fromConflict(o.Conflict),
		})
		if err != nil {
			return nil, err
		}
		items[i] = notify.Item{Index: o.Index, ID: wire.CallbackDeliveryID(o.Index, o.TxID), URL: d.URL, Body: body, Decided: time.Unix(0, o.Time)}
	}
	return items, nil
}

// done proposes the KindNotifyDone command that removes the
// deliveries of indexes on every node.
func (cb *callbacks) done(ctx context.Context, indexes []uint64) error {
	data := store.EncodeCommand(store.Command{Kind: store.KindNotifyDone, Time: time.Now().UnixNano(), Payload: store.EncodeNotifyDone(indexes)})
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	a := cb.raft.ApplyMany(ctx, [][]byte{data})[0]
	switch {
	case a.Err != nil:
		return translate(a.Err)
	case a.Result.Err != nil:
		return fmt.Errorf("notify done at index %d: %w", a.Index, a.Result.Err)
	}
	return nil
}
