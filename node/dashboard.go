package node

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/txlog/txlog/replication"
	"github.com/txlog/txlog/ui"
)

// dashboard feeds package ui: the write samples of /v1/stats (writer.submit
// calls stats.Observe) and the events of /v1/events, which its loop derives
// from what this node observes: leader changes from replication's feed, joins
// and removals from the membership it reads every ui.SampleInterval. Every
// node records them, so any node's page shows them.
type dashboard struct {
	stats  *ui.Stats
	events ui.Events
	raft   *replication.Raft // nil on a node that refused to start Raft
	log    *slog.Logger
}

func newDashboard(raft *replication.Raft, log *slog.Logger) *dashboard {
	return &dashboard{stats: ui.NewStats(time.Now()), raft: raft, log: log}
}

// handler returns the ui.Handler of GET /ui/, /v1/stats and /v1/events.
//
// Alerts: the alert package's events reach /v1/events through
// ui.Config.ExtraEvents, each as a ui.Event of kind ui.EventAlert.
func (d *dashboard) handler(id string) *ui.Handler {
	return ui.NewHandler(ui.Config{ID: id, Stats: d.stats, Events: &d.events, Status: d.status})
}

func (d *dashboard) status() ui.NodeStatus {
	if d.raft == nil {
		return ui.NodeStatus{State: "refused"}
	}
	st := d.raft.Status()
	return ui.NodeStatus{State: st.State, Term: st.Term, CommitIndex: st.CommitIndex, AppliedIndex: st.AppliedIndex}
}

// loop samples the stats and records events until life ends.
func (d *dashboard) loop(life context.Context) {
	tick := time.NewTicker(ui.SampleInterval)
	defer tick.Stop()
	var leaders <-chan replication.LeaderChange
	if d.raft != nil {
		ch, unsubscribe := d.raft.Subscribe()
		defer unsubscribe()
		leaders = ch
	}
	var members map[string]string // ID → Raft address; nil until first read
	lastLeader := ""
	for {
		select {
		case <-life.Done():
			return
		case now := <-tick.C:
			d.stats.Sample(now)
			members = d.diffMembers(life, members)
		case c, ok := <-leaders:
			if !ok {
				leaders = nil
				continue
			}
			if c.LeaderID == lastLeader {
				continue
			}
			lastLeader = c.LeaderID
			msg := "no leader"
			if c.LeaderID != "" {
				msg = fmt.Sprintf("%s is the leader in term %d", c.LeaderID, c.Term)
			}
			d.events.Add(ui.Event{At: time.Now(), Kind: ui.EventLeaderChange, Node: c.LeaderID, Term: c.Term, Message: msg})
		}
	}
}

// diffMembers reads the membership and records the joins and removals since
// prev; the first read records nothing. It returns the membership to compare
// the next read with.
func (d *dashboard) diffMembers(life context.Context, prev map[string]string) map[string]string {
	if d.raft == nil {
		return prev
	}
	ctx, cancel := context.WithTimeout(life, ui.SampleInterval)
	defer cancel()
	ms, err := d.raft.Members(ctx)
	if err != nil {
		d.log.Debug("dashboard: read members", "err", err)
		return prev
	}
	cur := make(map[string]string, len(ms))
	for _, m := range ms {
		cur[m.ID] = m.Addr
	}
	if prev == nil {
		return cur
	}
	now := time.Now()
	for _, id := range slices.Sorted(maps.Keys(cur)) {
		if _, ok := prev[id]; !ok {
			d.events.Add(ui.Event{At: now, Kind: ui.EventJoin, Node: id, Message: fmt.Sprintf("%s joined (raft %s)", id, cur[id])})
		}
	}
	for _, id := range slices.Sorted(maps.Keys(prev)) {
		if _, ok := cur[id]; !ok {
			d.events.Add(ui.Event{At: now, Kind: ui.EventRemove, Node: id, Message: id + " was removed"})
		}
	}
	return cur
}
