package alert

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// Format is the body sent to a webhook.
type Format string

const (
	// FormatJSON sends Event as JSON (the default).
	FormatJSON Format = "json"
	// FormatSlack sends a Slack-compatible {"text": ...}.
	FormatSlack Format = "slack"
)

// Statuses of an Event.
const (
	Firing   = "firing"
	Resolved = "resolved"
)

// Event is one firing or resolved alert, the JSON body a webhook gets.
type Event struct {
	Alert    string `json:"alert"`
	Status   string `json:"status"` // Firing or Resolved
	Severity string `json:"severity"`
	Node     string `json:"node"` // the node that sent it
	// Scope is ScopeCluster for the ClusterRules, ScopeNode for the rest.
	Scope string `json:"scope"`
	// Episode names one occurrence of a cluster-wide alert, the same on
	// every node (e.g. "after-term-7"); empty for node alerts. A receiver
	// may deduplicate on alert, labels and episode.
	Episode string `json:"episode,omitempty"`
	Summary string `json:"summary"`
	// Since is when the condition began (as the sender saw it), on the
	// firing and the resolved event alike; absent only on the resolved
	// event of a leader that took over an episode it did not see begin.
	Since time.Time `json:"since,omitzero"`
	// FiredAt is when this event was sent: for a firing event, when the
	// alert fired; for a resolved one, when it resolved. At is the same
	// time, kept for readers of the older field.
	FiredAt time.Time         `json:"fired_at"`
	At      time.Time         `json:"at"`
	Labels  map[string]string `json:"labels"`
}

// Episodes is where the nodes of a cluster record the episodes of
// cluster-wide alerts that were sent, so that each is sent once whichever
// node sees it (the node keeps them in Redis, next to the parked writes).
// Each method is bounded by ctx; an error means "unknown", and the Manager
// then sends rather than stays silent.
type Episodes interface {
	// Open records key as sent, for ttl; it reports whether this call
	// recorded it (false: it was already open, or closed and kept).
	Open(ctx context.Context, key string, ttl time.Duration) (bool, error)
	// Keep extends an open key's ttl.
	Keep(ctx context.Context, key string, ttl time.Duration) error
	// Close ends an open key, keeping it closed for keep (0: forgets it);
	// it reports whether this call closed it.
	Close(ctx context.Context, key string, keep time.Duration) (bool, error)
}

// Config holds a Manager's settings.
type Config struct {
	// Node is this node's ID, the events' "node". Required.
	Node string
	// Webhooks are the URLs events are POSTed to. None: events only go to
	// the ring (Events).
	Webhooks []string
	// Format of the bodies. Default FormatJSON.
	Format Format
	Thresholds
	// Client sends the POSTs. Default: a client with a 5s timeout.
	Client *http.Client
	// Logger. Default slog.Default().
	Logger *slog.Logger
	// RingSize is how many events Events keeps. Default 100.
	RingSize int
	// Episodes, when set, deduplicates cluster-wide alerts across nodes;
	// nil: each node decides from its own view (doc.go).
	Episodes Episodes
	// Reachable reports whether member id answers now (the node asks its
	// peer link, bounded by ctx). A leader uses it before it resolves an
	// unreachable-member episode an earlier leader left open (sweep); nil:
	// it does not.
	Reachable func(ctx context.Context, id string) bool

	interval    time.Duration // sampling interval, default 1s
	retryBase   time.Duration // first retry delay, default 500ms
	retryMax    int           // attempts per event, default 6
	retryCapped time.Duration // largest retry delay, default 30s
	gap         time.Duration // a longer time between two samples is a pause, default 3s
}

// Validate reports every problem with c.
func (c Config) Validate() error {
	var errs []error
	if c.Node == "" {
		errs = append(errs, errors.New("alert: Node is required"))
	}
	switch c.Format {
	case "", FormatJSON, FormatSlack:
	default:
		errs = append(errs, fmt.Errorf("alert: Format %q: want json or slack", c.Format))
	}
	for _, w := range c.Webhooks {
		if u, err := url.Parse(w); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("alert: webhook %q: want an http(s) URL", w))
		}
	}
	if c.BackupStale < 0 {
		errs = append(errs, fmt.Errorf("alert: BackupStale (--alert-backup-stale) %s: want 0 (twice --backup-interval) or more", c.BackupStale))
	}
	if c.DiskFreePercent < 0 || c.DiskFreePercent > 100 || c.ParkedMax < 0 {
		errs = append(errs, errors.New("alert: DiskFreePercent must be in 0..100 and ParkedMax >= 0"))
	}
	return errors.Join(errs...)
}

// Sampler returns the node's state now.
type Sampler func(now time.Time) Snapshot

// Manager evaluates the rules and sends their events.
type Manager struct {
	cfg    Config
	t      Thresholds
	log    *slog.Logger
	queues []chan Event

	active  map[string]*state // by key; touched only by Step's caller
	last    time.Time         // the previous Step's Now
	resumed time.Time         // the last Step after a pause (a gap); the view before it is stale
	// swept are the members this leader has seen reachable and whose
	// unreachable episode, left open by an earlier leader, it has closed
	// (sweep); reset when it stops leading.
	swept map[string]bool

	mu     sync.Mutex
	ring   []Event
	next   int
	full   bool
	firing []Event // what Firing returns, set by each Step
}

// state is one alert the rules see as true.
type state struct {
	f       finding
	pending time.Time // first seen true
	firing  bool
	since   time.Time
	firedAt time.Time // when it fired (or, silent, joined the episode) here
	// silent: another node sent this cluster episode; this one keeps it
	// open but sends nothing unless it is the one that closes it.
	silent bool
}

// Episode records: how long an open one lives without a Keep, and how long
// a closed one named by a term is kept.
const (
	episodeTTL  = 10 * time.Minute
	episodeTomb = time.Hour
	episodeOp   = time.Second // bound of one Episodes call
)

// New returns a Manager; Run starts it.
func New(cfg Config) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Format == "" {
		cfg.Format = FormatJSON
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 5 * time.Second}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.RingSize <= 0 {
		cfg.RingSize = 100
	}
	if cfg.interval <= 0 {
		cfg.interval = time.Second
	}
	if cfg.retryBase <= 0 {
		cfg.retryBase = 500 * time.Millisecond
	}
	if cfg.retryMax <= 0 {
		cfg.retryMax = 6
	}
	if cfg.retryCapped <= 0 {
		cfg.retryCapped = 30 * time.Second
	}
	if cfg.gap <= 0 {
		cfg.gap = max(3*cfg.interval, 3*time.Second)
	}
	m := &Manager{cfg: cfg, t: cfg.Thresholds.WithDefaults(), log: cfg.Logger, active: map[string]*state{}, ring: make([]Event, cfg.RingSize)}
	for range cfg.Webhooks {
		m.queues = append(m.queues, make(chan Event, 256))
	}
	return m, nil
}

// Run samples and evaluates once per interval and delivers events until ctx
// is done.
func (m *Manager) Run(ctx context.Context, sample Sampler) {
	var wg sync.WaitGroup
	for i, q := range m.queues {
		wg.Go(func() { m.deliver(ctx, m.cfg.Webhooks[i], q) })
	}
	tick := time.NewTicker(m.cfg.interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case now := <-tick.C:
			m.Step(sample(now))
		}
	}
}

// Step runs the rules over s and returns the events it produced (also
// queued for the webhooks and kept in the ring). Not safe for concurrent use.
func (m *Manager) Step(s Snapshot) []Event {
	if s.Node == "" {
		s.Node = m.cfg.Node
	}
	m.unstale(&s)
	if st := m.active[NoLeader]; st != nil && st.firing && s.Leader == "" {
		// The node that sent "no leader" keeps it until it sees a leader,
		// even if a lower voter comes up leaderless: one pair per outage.
		s.LowerVoterUp = false
	}
	seen := map[string]bool{}
	var out []Event
	for _, r := range rules {
		for _, f := range r(s, m.t) {
			k := key(f)
			seen[k] = true
			st, ok := m.active[k]
			if !ok {
				st = &state{pending: s.Now}
				m.active[k] = st
			}
			st.f = f
			if st.firing {
				m.keep(st)
				continue
			}
			if s.Now.Sub(st.pending) < f.hold {
				continue
			}
			st.firing = true
			st.since = f.since
			if st.since.IsZero() {
				st.since = st.pending
			}
			st.firedAt = s.Now
			st.silent = !m.open(st)
			if !st.silent {
				out = append(out, m.event(st, Firing, s.Now))
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(m.active)) {
		if seen[k] {
			continue
		}
		st := m.active[k]
		delete(m.active, k)
		if !st.firing {
			continue
		}
		if m.cfg.Episodes != nil && st.f.episode != "" && !st.f.tomb && !s.IsLeader {
			// A leader rule whose leader stepped down (an unreachable
			// member): the condition is not over, only this node's say in
			// it; the next leader goes on with the open episode.
			continue
		}
		if m.close(st) {
			out = append(out, m.event(st, Resolved, s.Now))
		}
	}
	out = append(out, m.sweep(s)...)
	m.last = s.Now
	for _, e := range out {
		m.emit(e)
	}
	m.setFiring()
	return out
}

// setFiring publishes the alerts firing now for Firing.
func (m *Manager) setFiring() {
	var now []Event
	for _, k := range slices.Sorted(maps.Keys(m.active)) {
		if st := m.active[k]; st.firing {
			now = append(now, m.event(st, Firing, st.firedAt))
		}
	}
	m.mu.Lock()
	m.firing = now
	m.mu.Unlock()
}

// Firing returns the alerts firing now as this node sees them, in key
// order: its node alerts and the cluster episodes it is in, including
// those another node sent (their FiredAt is when this node joined the
// episode). Safe for concurrent use; for the dashboard's "firing now".
func (m *Manager) Firing() []Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.firing)
}

// unstale drops what s says about the time before a pause: after a gap
// between two samples (the process was stopped, or starved), this node
// knows nothing of the cluster while it was away, so a cluster-wide
// condition counts only from the resume. A node that comes back from
// SIGSTOP with an old view thus needs the whole hold time of fresh
// evidence before it sends, and by then the others have either resolved
// the episode or are still in it.
func (m *Manager) unstale(s *Snapshot) {
	if !m.last.IsZero() && s.Now.Sub(m.last) > m.cfg.gap {
		m.resumed = s.Now
		m.log.Warn("alert: sampling resumed after a pause; cluster conditions count from now", "gap", s.Now.Sub(m.last).Round(time.Millisecond))
		for _, st := range m.active {
			if !st.firing && st.f.episode != "" {
				st.pending = s.Now
			}
		}
	}
	if m.resumed.IsZero() {
		return
	}
	if !s.LeaderlessSince.IsZero() && s.LeaderlessSince.Before(m.resumed) {
		s.LeaderlessSince = m.resumed
	}
	for id, ago := range s.Unreachable {
		s.Unreachable[id] = min(ago, s.Now.Sub(m.resumed))
	}
}

// sweep closes, on a verified leader, the unreachable-member episodes that
// an earlier leader left open for members that answer this one: the
// earlier leader handed them over when it stepped down, and a member that
// came back before this leader's own view passed the threshold would
// otherwise never be resolved. One Close per member per change, not per
// sample: a member is swept again only after it was seen unreachable.
func (m *Manager) sweep(s Snapshot) []Event {
	if m.cfg.Episodes == nil || m.cfg.Reachable == nil || !s.IsLeader {
		m.swept = nil
		return nil
	}
	if m.swept == nil {
		m.swept = map[string]bool{}
	}
	var out []Event
	for _, id := range s.Members {
		if _, down := s.Unreachable[id]; down {
			m.swept[id] = false
			continue
		}
		f := unreachableFinding(id)
		if m.swept[id] || m.active[key(f)] != nil {
			continue
		}
		// The leader's own view says nothing of a member it has not yet
		// failed a heartbeat to (a new leader, a SIGSTOPped member whose
		// connection hangs): ask the member itself.
		ctx, cancel := context.WithTimeout(context.Background(), episodeOp/2)
		up := m.cfg.Reachable(ctx, id)
		cancel()
		if !up {
			continue
		}
		m.swept[id] = true
		f.summary = fmt.Sprintf("member %s reachable again from the leader", id)
		st := &state{f: f, firing: true, silent: true}
		if m.close(st) {
			out = append(out, m.event(st, Resolved, s.Now))
		}
	}
	return out
}

// episodeKey names st's episode in Episodes.
func episodeKey(st *state) string { return key(st.f) + "," + st.f.episode }

// open records a cluster episode and reports whether this node is the one
// to send it (always, for a node alert or without Episodes).
func (m *Manager) open(st *state) bool {
	if m.cfg.Episodes == nil || st.f.episode == "" {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), episodeOp)
	defer cancel()
	ok, err := m.cfg.Episodes.Open(ctx, episodeKey(st), episodeTTL)
	if err != nil {
		m.log.Warn("alert: episode store unavailable; sending", "alert", st.f.name, "err", err)
		return true
	}
	if !ok {
		m.log.Info("alert: episode already sent by the cluster", "alert", st.f.name, "episode", st.f.episode)
	}
	return ok
}

func (m *Manager) keep(st *state) {
	if m.cfg.Episodes == nil || st.f.episode == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), episodeOp)
	defer cancel()
	if err := m.cfg.Episodes.Keep(ctx, episodeKey(st), episodeTTL); err != nil {
		m.log.Debug("alert: keep episode", "alert", st.f.name, "err", err)
	}
}

// close ends a cluster episode and reports whether this node sends the
// resolved event: the one whose Close closed it, or, when the store does
// not answer, the one that sent the firing.
func (m *Manager) close(st *state) bool {
	if m.cfg.Episodes == nil || st.f.episode == "" {
		return true
	}
	keep := time.Duration(0)
	if st.f.tomb {
		keep = episodeTomb
	}
	ctx, cancel := context.WithTimeout(context.Background(), episodeOp)
	defer cancel()
	ok, err := m.cfg.Episodes.Close(ctx, episodeKey(st), keep)
	if err != nil {
		m.log.Warn("alert: episode store unavailable", "alert", st.f.name, "err", err)
		return !st.silent
	}
	return ok
}

func (m *Manager) event(st *state, status string, at time.Time) Event {
	labels := maps.Clone(st.f.labels)
	if labels == nil {
		labels = map[string]string{}
	}
	scope := ScopeNode
	if st.f.episode != "" {
		scope = ScopeCluster
	}
	return Event{Alert: st.f.name, Status: status, Severity: st.f.severity, Node: m.cfg.Node, Scope: scope, Episode: st.f.episode,
		Summary: st.f.summary, Since: st.since.UTC(), FiredAt: at.UTC(), At: at.UTC(), Labels: labels}
}

func (m *Manager) emit(e Event) {
	m.log.Warn("alert", "alert", e.Alert, "status", e.Status, "severity", e.Severity, "summary", e.Summary)
	m.mu.Lock()
	m.ring[m.next] = e
	m.next = (m.next + 1) % len(m.ring)
	m.full = m.full || m.next == 0
	m.mu.Unlock()
	for i, q := range m.queues {
		select {
		case q <- e:
		default:
			m.log.Error("alert queue full: event dropped", "webhook", i, "alert", e.Alert, "status", e.Status)
		}
	}
}

// Events returns the last events, oldest first (at most Config.RingSize).
// Safe for concurrent use; the dashboard reads it.
func (m *Manager) Events() []Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.full {
		return slices.Clone(m.ring[:m.next])
	}
	return append(slices.Clone(m.ring[m.next:]), m.ring[:m.next]...)
}

// key names an alert by its name and labels.
func key(f finding) string {
	var b strings.Builder
	b.WriteString(f.name)
	for _, k := range slices.Sorted(maps.Keys(f.labels)) {
		b.WriteString("," + k + "=" + f.labels[k])
	}
	return b.String()
}
