package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/txlog/txlog/alert"
	"github.com/txlog/txlog/replication"
	"github.com/txlog/txlog/ui"
)

// dashboard feeds package ui: the write samples of /v1/stats (writer.submit
// calls stats.Observe) and the events of /v1/events, which its loop derives
// from what this node observes: leader changes from replication's feed, joins
// and removals from the membership it reads every ui.SampleInterval. Every
// node records them, so any node's page shows them. It also reads the other
// members' /v1/stats over the peer link for /v1/stats/members (peerStats), so
// that the page reads its own node only.
type dashboard struct {
	stats  *ui.Stats
	events ui.Events
	raft   *replication.Raft // nil on a node that refused to start Raft
	log    *slog.Logger
	peers  *peers // nil in tests that need no other member's stats
	// members reads the membership: raft.Members; nil without Raft.
	members func(context.Context) ([]replication.Member, error)
	// info gathers the node's health numbers (dashinfo.go); nil in tests
	// that need none.
	info *dashInfo

	// Only loop's goroutine uses these.
	lastLeader string
	lastTerm   uint64
	known      map[string]string // member ID → Raft address; nil until first read
}

func newDashboard(raft *replication.Raft, peers *peers, log *slog.Logger) *dashboard {
	d := &dashboard{stats: ui.NewStats(time.Now()), raft: raft, peers: peers, log: log}
	if raft != nil {
		d.members = raft.Members
	}
	return d
}

// handler returns the ui.Handler of GET /ui/, /v1/stats, /v1/stats/members
// and /v1/events.
//
// Alerts: the alert package's events reach /v1/events through
// ui.Config.ExtraEvents, each as a ui.Event of kind ui.EventAlert.
func (d *dashboard) handler(id string, alerts *alert.Manager) *ui.Handler {
	cfg := ui.Config{ID: id, Stats: d.stats, Events: &d.events, Status: d.status}
	if d.members != nil {
		cfg.Members = d.memberIDs
	}
	if d.peers != nil {
		cfg.PeerStats = d.peerStats
	}
	if alerts != nil {
		cfg.ExtraEvents = func() []ui.Event { return alertEvents(alerts.Events()) }
		cfg.Alerts = func() []ui.Alert { return firing(alerts.Events()) }
	}
	if d.info != nil {
		cfg.Info, cfg.Thresholds = d.info.read, d.info.thresholds
	}
	return ui.NewHandler(cfg)
}

// alertEvents converts alert events into the dashboard's.
func alertEvents(evs []alert.Event) []ui.Event {
	out := make([]ui.Event, len(evs))
	for i, e := range evs {
		out[i] = ui.Event{At: e.FiredAt, Since: e.Since, FiredAt: e.FiredAt, Kind: ui.EventAlert, Node: e.Node, Message: fmt.Sprintf("[%s] %s (%s): %s", e.Status, e.Alert, e.Severity, e.Summary)}
	}
	return out
}

// memberIDs returns the IDs of the members of this node's Raft configuration.
func (d *dashboard) memberIDs(ctx context.Context) ([]string, error) {
	ms, err := d.members(ctx)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	return ids, nil
}

// errNoPeerAddr is peerStats' error for a member without a peer address.
var errNoPeerAddr = errors.New("not in this node's Raft configuration")

// peerStats reads member id's GET /v1/stats over the peer link (KindHTTP, at
// the peer address its Raft configuration gives it): a request the other
// node's internal router answers, which asks for no credential, so a page
// that could read this node's stats reads every member's through it.
func (d *dashboard) peerStats(ctx context.Context, id string) (ui.StatsAnswer, error) {
	addr, ok := d.peers.addr(id)
	if !ok {
		return ui.StatsAnswer{}, fmt.Errorf("member %s: %w", id, errNoPeerAddr)
	}
	return d.peers.client.Stats(ctx, addr)
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
	for {
		select {
		case <-life.Done():
			return
		case now := <-tick.C:
			d.stats.Sample(now)
			d.readMembers(life, now)
		case c, ok := <-leaders:
			if !ok {
				leaders = nil
				continue
			}
			d.leaderChanged(c, time.Now())
		}
	}
}

// leaderChanged records c as an event unless it repeats the last one.
func (d *dashboard) leaderChanged(c replication.LeaderChange, now time.Time) {
	if c.LeaderID == d.lastLeader && (c.LeaderID == "" || c.Term == d.lastTerm) {
		return
	}
	d.lastLeader, d.lastTerm = c.LeaderID, c.Term
	msg := "no leader"
	if c.LeaderID != "" {
		msg = fmt.Sprintf("%s is the leader in term %d", c.LeaderID, c.Term)
	}
	d.events.Add(ui.Event{At: now, Kind: ui.EventLeaderChange, Node: c.LeaderID, Term: c.Term, Message: msg})
}

// readMembers reads the membership and records the joins and removals since
// the last read; the first read records nothing, and a failed one is tried
// again at the next tick.
func (d *dashboard) readMembers(life context.Context, now time.Time) {
	if d.members == nil {
		return
	}
	ctx, cancel := context.WithTimeout(life, ui.SampleInterval)
	defer cancel()
	ms, err := d.members(ctx)
	if err != nil {
		d.log.Debug("dashboard: read members", "err", err)
		return
	}
	cur := make(map[string]string, len(ms))
	for _, m := range ms {
		cur[m.ID] = m.Addr
	}
	prev := d.known
	d.known = cur
	if prev == nil {
		return
	}
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
}
