package replication

import (
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// leaderWatch is the part of Raft that watches raft's observations: it
// publishes leader changes to Subscribe's subscribers and keeps the followers
// whose heartbeats fail. Raft embeds it, so callers call r.Subscribe.
type leaderWatch struct{ r *Raft }

// LeaderChange is the cluster's leader as this server sees it.
type LeaderChange struct {
	LeaderID   string // empty while there is no known leader
	LeaderAddr string
	Term       uint64 // this server's current term when the change was seen
	Self       bool   // this server is the leader
}

// Subscribe returns a channel of leader changes and a function that ends the
// subscription. The channel first receives the current state, then every
// change. It holds one value: a subscriber that falls behind finds only the
// latest change, never a stale one, and never holds raft up. The channel is
// closed by the returned function and by Close.
func (l *leaderWatch) Subscribe() (<-chan LeaderChange, func()) {
	r := l.r
	return r.feed.subscribe()
}

// LeaderLostAt returns when this server last saw the cluster's leader go
// (a change from a known leader to none), or the zero time if it never did.
// A sampler that looks once a second can miss a leader that came and went
// between two looks; this tells it that the leaderless time began later.
func (l *leaderWatch) LeaderLostAt() time.Time {
	f := l.r.feed
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lostAt
}

// feed fans leader changes out to subscribers.
type feed struct {
	mu     sync.Mutex // guards the fields below; held only for non-blocking sends
	last   LeaderChange
	lostAt time.Time // when a change from a leader to none was last published
	subs   map[chan LeaderChange]struct{}
	closed bool
}

func newFeed() *feed {
	return &feed{subs: make(map[chan LeaderChange]struct{})}
}

// publish sends c to every subscriber unless it equals the last change, and
// reports whether it was new.
func (f *feed) publish(c LeaderChange) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed || c == f.last {
		return false
	}
	if f.last.LeaderID != "" && c.LeaderID == "" {
		f.lostAt = time.Now()
	}
	f.last = c
	for ch := range f.subs {
		offer(ch, c)
	}
	return true
}

// offer puts c in ch, replacing a value the subscriber has not taken yet. Only
// the feed sends on ch, under f.mu, so the second send always finds room.
func offer(ch chan LeaderChange, c LeaderChange) {
	select {
	case ch <- c:
		return
	default:
	}
	select {
	case <-ch:
	default:
	}
	select {
	case ch <- c:
	default:
	}
}

func (f *feed) subscribe() (<-chan LeaderChange, func()) {
	ch := make(chan LeaderChange, 1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		close(ch)
		return ch, func() {}
	}
	f.subs[ch] = struct{}{}
	ch <- f.last // the channel is new and empty
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			if _, ok := f.subs[ch]; ok {
				delete(f.subs, ch)
				close(ch)
			}
		})
	}
}

func (f *feed) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	for ch := range f.subs {
		close(ch)
	}
	clear(f.subs)
}

// observeFilter picks the observations the watch loop wants.
func observeFilter(o *raft.Observation) bool {
	switch o.Data.(type) {
	case raft.LeaderObservation, raft.RaftState,
		raft.FailedHeartbeatObservation, raft.ResumedHeartbeatObservation:
		return true
	}
	return false
}

// watch follows raft's observations until Close. Raft drops observations when
// obs is full rather than block, so watch reads the current state instead of
// trusting each observation's content.
func (l *leaderWatch) watch(obs <-chan raft.Observation) {
	r := l.r
	for {
		select {
		case <-r.done:
			return
		case o := <-obs:
			switch d := o.Data.(type) {
			case raft.FailedHeartbeatObservation:
				r.setFailing(string(d.PeerID), true, d.LastContact)
			case raft.ResumedHeartbeatObservation:
				r.setFailing(string(d.PeerID), false, time.Time{})
			}
			r.publishLeader()
		}
	}
}

// publishLeader publishes raft's current leader if it changed. On becoming
// leader it starts the term's barrier, so that the first ReadIndex is fast.
func (l *leaderWatch) publishLeader() {
	r := l.r
	addr, id := r.raft.LeaderWithID()
	c := LeaderChange{
		LeaderID:   string(id),
		LeaderAddr: string(addr),
		Term:       r.raft.CurrentTerm(),
		Self:       id != "" && string(id) == r.id,
	}
	if !r.feed.publish(c) {
		return
	}
	if c.LeaderID != "" {
		r.met.leaderChanges.Inc()
	}
	r.logger.Info("leader changed", "leader", c.LeaderID, "leader_addr", c.LeaderAddr, "term", c.Term, "self", c.Self)
	if c.Self {
		r.startBarrier(c.Term)
	} else {
		r.clearFailing()
	}
}

// setFailing records whether the leader's heartbeats to a follower fail, and
// when the leader last heard from it (zero if never).
func (l *leaderWatch) setFailing(id string, failing bool, last time.Time) {
	r := l.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if !failing {
		delete(r.failing, id)
		return
	}
	r.failing[id] = last
}

func (l *leaderWatch) clearFailing() {
	r := l.r
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.failing)
}
