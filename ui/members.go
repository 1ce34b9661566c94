package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"
)

// DefaultPeerTimeout is Config.PeerTimeout's default: how long GET
// /v1/stats/members waits for one member's stats. The page reads them every
// 2 s, so a member that does not answer costs it at most this.
const DefaultPeerTimeout = time.Second

// MembersAnswer is the answer of GET /v1/stats/members: every member's
// /v1/stats as the node serving the page read them, so that the page reads
// its own origin only (and the browser's credentials apply).
type MembersAnswer struct {
	Members []MemberStats `json:"members"` // by ID, this node's included
	// Error says why the membership could not be read (then Members has
	// this node only).
	Error string `json:"error,omitempty"`
}

// MemberStats is one member's entry of MembersAnswer: its stats, or why they
// could not be read.
type MemberStats struct {
	ID    string       `json:"id"`
	Stats *StatsAnswer `json:"stats,omitempty"` // nil when Error is set
	Error string       `json:"error,omitempty"`
	// LastAnswer is when this node last read the member's stats, and
	// SilentSeconds how long before this answer that was (since this node
	// started, when it never did); LastAppliedIndex the applied index that
	// last answer gave, so that the page shows how far behind it was left
	// at least. All three only with Error.
	LastAnswer       *time.Time `json:"last_answer,omitempty"`
	SilentSeconds    float64    `json:"silent_seconds,omitempty"`
	LastAppliedIndex uint64     `json:"last_applied_index,omitempty"`
}

// MembersMaxAge is how long GET /v1/stats/members reuses an answer: however
// many pages and clients ask, a node reads each other member's stats at most
// once per MembersMaxAge (the stats change every SampleInterval).
const MembersMaxAge = time.Second

// membersShare is the answer of GET /v1/stats/members that concurrent and
// close requests share: the first computes it, those that come while it
// runs wait for it, those within MembersMaxAge of it reuse it.
type membersShare struct {
	mu       sync.Mutex // guards the fields below; never held while reading
	last     MembersAnswer
	at       time.Time     // when last was computed; zero: never
	inflight chan struct{} // closed when the answer being computed is in last; nil: none
}

// errNoMember is the entry of a member that Config.PeerStats is missing for.
var errNoMember = errors.New("no way to reach this member")

// stats is this node's own StatsAnswer.
func (h *Handler) stats() *StatsAnswer {
	a := &StatsAnswer{ID: h.cfg.ID, Interval: SampleInterval.String(), Node: h.cfg.Status(), Window: h.cfg.Stats.Window(), Samples: h.cfg.Stats.Samples(),
		Alerts: []Alert{}, Thresholds: h.cfg.Thresholds}
	if h.cfg.Info != nil {
		info := h.cfg.Info()
		a.Info = &info
	}
	if h.cfg.Alerts != nil {
		if as := h.cfg.Alerts(); as != nil {
			a.Alerts = as
		}
	}
	return a
}

// silence fills the LastAnswer, SilentSeconds and LastAppliedIndex of the
// members with Error and records the answer of the others, at now.
func (h *Handler) silence(a *MembersAnswer, now time.Time) {
	for i := range a.Members {
		m := &a.Members[i]
		if m.Error == "" {
			h.seen.saw(m.ID, now, m.Stats.Node.AppliedIndex)
			continue
		}
		last, d := h.seen.silent(m.ID, now)
		if !last.at.IsZero() {
			m.LastAnswer, m.LastAppliedIndex = &last.at, last.applied
		}
		m.SilentSeconds = max(d.Seconds(), 0)
	}
}

// members answers GET /v1/stats/members: this node's stats from its own
// ring, every other member's read through Config.PeerStats, all at once, each
// within Config.PeerTimeout (and the request's context). A member that has
// not answered by then gets an entry with Error: the answer waits no longer,
// even for a PeerStats that ignores its context.
func (h *Handler) members(ctx context.Context) MembersAnswer {
	var a MembersAnswer
	ids := []string{h.cfg.ID}
	if h.cfg.Members != nil {
		mctx, cancel := context.WithTimeout(ctx, h.cfg.PeerTimeout)
		got, err := h.cfg.Members(mctx)
		cancel()
		if err != nil {
			a.Error = "read the members: " + err.Error()
		}
		ids = append(ids, got...)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)

	a.Members = make([]MemberStats, len(ids))
	type result struct {
		i   int
		st  StatsAnswer
		err error
	}
	results := make(chan result, len(ids)) // buffered: a late answer never blocks its goroutine
	pending := 0
	ctx, cancel := context.WithTimeout(ctx, h.cfg.PeerTimeout)
	defer cancel()
	for i, id := range ids {
		m := &a.Members[i]
		m.ID = id
		switch {
		case id == h.cfg.ID:
			m.Stats = h.stats()
		case h.cfg.PeerStats == nil:
			m.Error = errNoMember.Error()
		default:
			pending++
			go func() {
				st, err := h.cfg.PeerStats(ctx, id)
				results <- result{i, st, err}
			}()
		}
	}
	for ; pending > 0; pending-- {
		select {
		case r := <-results:
			switch {
			case r.err != nil && ctx.Err() != nil:
				a.Members[r.i].Error = fmt.Sprintf("no answer within %v", h.cfg.PeerTimeout)
			case r.err != nil:
				a.Members[r.i].Error = r.err.Error()
			default:
				if r.st.Alerts == nil { // a node of a version without alerts
					r.st.Alerts = []Alert{}
				}
				a.Members[r.i].Stats = &r.st
			}
		case <-ctx.Done():
			for i := range a.Members {
				m := &a.Members[i]
				if m.Stats == nil && m.Error == "" {
					m.Error = fmt.Sprintf("no answer within %v", h.cfg.PeerTimeout)
				}
			}
			return a
		}
	}
	return a
}

// serveMembers writes members' answer, shared (membersShare).
func (h *Handler) serveMembers(w http.ResponseWriter, r *http.Request) {
	a, err := h.sharedMembers(r.Context())
	if err != nil {
		return // the asker is gone
	}
	writeJSON(w, a)
}

// sharedMembers returns an answer of members at most MembersMaxAge old,
// computing it if there is none and none is being computed, or waiting for
// the one being computed (or for ctx to end). The answer's own reads are not
// bound to ctx, so that one asker leaving spoils nobody else's: they end at
// Config.PeerTimeout anyway.
func (h *Handler) sharedMembers(ctx context.Context) (MembersAnswer, error) {
	s := &h.share
	s.mu.Lock()
	if !s.at.IsZero() && time.Since(s.at) < MembersMaxAge {
		a := s.last
		s.mu.Unlock()
		return a, nil
	}
	if ch := s.inflight; ch != nil {
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return MembersAnswer{}, ctx.Err()
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.last, nil
	}
	ch := make(chan struct{})
	s.inflight = ch
	s.mu.Unlock()

	a := h.members(context.WithoutCancel(ctx))
	h.silence(&a, time.Now())
	s.mu.Lock()
	s.last, s.at, s.inflight = a, time.Now(), nil
	s.mu.Unlock()
	close(ch)
	return a, nil
}
