package ui

import (
	"context"
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"slices"
	"strings"
	"time"
)

//go:embed assets
var assets embed.FS

// NodeStatus is what a node's /v1/stats says about its Raft state, so that a
// page served by another node can show this one's lag.
type NodeStatus struct {
	State        string `json:"state"`
	Term         uint64 `json:"term"`
	CommitIndex  uint64 `json:"commit_index"`
	AppliedIndex uint64 `json:"applied_index"`
}

// StatsAnswer is the answer of GET /v1/stats.
type StatsAnswer struct {
	ID       string     `json:"id"`
	Interval string     `json:"interval"` // between samples, a Go duration ("2s")
	Node     NodeStatus `json:"node"`
	// Window sums up the samples: mean writes/s, the quantiles of all their
	// requests together.
	Window  Sample   `json:"window"`
	Samples []Sample `json:"samples"` // oldest first, at most RingSamples
	// Info is the node's version, uptime, backlog, disk and log sizes;
	// omitted by a node that does not know them.
	Info *NodeInfo `json:"info,omitempty"`
	// Alerts are the node's alerts firing now, oldest first.
	Alerts []Alert `json:"alerts"`
	// Thresholds are the node's alert bounds the page colours against.
	Thresholds Thresholds `json:"thresholds"`
}

// EventsAnswer is the answer of GET /v1/events.
type EventsAnswer struct {
	Events []Event `json:"events"` // oldest first
}

// Config is what Handler serves.
type Config struct {
	ID     string  // the node's ID
	Stats  *Stats  // required
	Events *Events // required
	// Status returns the node's Raft state. Default: an empty NodeStatus.
	Status func() NodeStatus
	// ExtraEvents returns events kept elsewhere (the alerts), merged into
	// /v1/events by time. Default: none.
	ExtraEvents func() []Event
	// Members returns the IDs of the cluster's members, for GET
	// /v1/stats/members; this node is always added. Default: this node only.
	Members func(ctx context.Context) ([]string, error)
	// PeerStats reads member id's GET /v1/stats (over the peer link), within
	// ctx. Default: none, and the other members' entries say so.
	PeerStats func(ctx context.Context, id string) (StatsAnswer, error)
	// PeerTimeout bounds the wait for one member's stats and for Members.
	// Default DefaultPeerTimeout.
	PeerTimeout time.Duration
	// Info returns the node's NodeInfo, called once per /v1/stats. Default:
	// none (the answer has no info).
	Info func() NodeInfo
	// Alerts returns the node's alerts firing now. Default: none.
	Alerts func() []Alert
	// Thresholds are the node's alert bounds. Default: none known.
	Thresholds Thresholds
}

// Handler serves GET /ui/ (and the page's files under it), / (a redirect to
// /ui/), /v1/stats, /v1/stats/members and /v1/events. Anything else is the caller's: route only those paths here.
type Handler struct {
	cfg    Config
	static http.Handler
	files  fs.FS        // the page's files, under /ui/
	share  membersShare // GET /v1/stats/members' answer
	seen   lastSeen     // when each member last answered
}

var _ http.Handler = (*Handler)(nil)

// NewHandler returns the Handler of cfg.
func NewHandler(cfg Config) *Handler {
	if cfg.Status == nil {
		cfg.Status = func() NodeStatus { return NodeStatus{} }
	}
	if cfg.PeerTimeout <= 0 {
		cfg.PeerTimeout = DefaultPeerTimeout
	}
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree always has assets/
	}
	h := &Handler{cfg: cfg, static: http.StripPrefix("/ui/", http.FileServerFS(sub)), files: sub}
	h.seen.start = time.Now()
	return h
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/stats":
		// No Access-Control-Allow-Origin: the page reads the other members'
		// stats through its own node (/v1/stats/members), so that no page
		// needs another origin's answers, and a browser's credentials for
		// this node apply.
		writeJSON(w, h.stats())
	case "/v1/stats/members":
		h.serveMembers(w, r)
	case "/":
		// A browser pointed at a node finds its page.
		w.Header().Del("Content-Type")
		http.Redirect(w, r, "/ui/", http.StatusFound)
	case "/v1/events":
		evs := h.cfg.Events.List()
		if h.cfg.ExtraEvents != nil {
			evs = append(evs, h.cfg.ExtraEvents()...)
			slices.SortStableFunc(evs, func(a, b Event) int { return a.At.Compare(b.At) })
		}
		if evs == nil {
			evs = []Event{}
		}
		writeJSON(w, EventsAnswer{Events: evs})
	default:
		// The API answers JSON by default; the page's files have their own types.
		w.Header().Del("Content-Type")
		w.Header().Set("Cache-Control", "no-cache")
		h.static.ServeHTTP(w, r)
	}
}

// Serves reports whether path (a request's URL path) is one Handler
// answers: /, /ui/, a file of the page under /ui/, and the /v1/ paths of
// its doc. The caller answers any other path under /ui/ with its own 404.
func (h *Handler) Serves(path string) bool {
	switch path {
	case "/", "/ui/", "/v1/stats", "/v1/stats/members", "/v1/events":
		return true
	}
	name, ok := strings.CutPrefix(path, "/ui/")
	if !ok || !fs.ValidPath(name) {
		return false
	}
	st, err := fs.Stat(h.files, name)
	return err == nil && !st.IsDir()
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(append(b, '\n'))
}
