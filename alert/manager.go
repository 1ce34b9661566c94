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
	Summary  string `json:"summary"`
	// Since is when the alert began firing; on a resolved event, when it
	// resolved.
	Since  time.Time         `json:"since"`
	Labels map[string]string `json:"labels"`
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

	interval    time.Duration // sampling interval, default 1s
	retryBase   time.Duration // first retry delay, default 500ms
	retryMax    int           // attempts per event, default 6
	retryCapped time.Duration // largest retry delay, default 30s
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

	active map[string]*state // by key; touched only by Step's caller

	mu   sync.Mutex
	ring []Event
	next int
	full bool
}

// state is one alert the rules see as true.
type state struct {
	f       finding
	pending time.Time // first seen true
	firing  bool
	since   time.Time
}

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
	m := &Manager{cfg: cfg, t: cfg.Thresholds.withDefaults(), log: cfg.Logger, active: map[string]*state{}, ring: make([]Event, cfg.RingSize)}
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
			if !st.firing && s.Now.Sub(st.pending) >= f.hold {
				st.firing = true
				st.since = f.since
				if st.since.IsZero() {
					st.since = st.pending
				}
				out = append(out, m.event(st, Firing, st.since))
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(m.active)) {
		if seen[k] {
			continue
		}
		if st := m.active[k]; st.firing {
			out = append(out, m.event(st, Resolved, s.Now))
		}
		delete(m.active, k)
	}
	for _, e := range out {
		m.emit(e)
	}
	return out
}

func (m *Manager) event(st *state, status string, since time.Time) Event {
	labels := maps.Clone(st.f.labels)
	if labels == nil {
		labels = map[string]string{}
	}
	return Event{Alert: st.f.name, Status: status, Severity: st.f.severity, Node: m.cfg.Node, Summary: st.f.summary, Since: since.UTC(), Labels: labels}
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
