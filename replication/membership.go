package replication

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/raft"
)

// membership is the part of Raft that reads and changes the cluster's
// configuration: Members, Join, Remove, TransferLeadership. Raft embeds it, so
// callers call r.Join.
type membership struct{ r *Raft }

// Member is one server in the cluster configuration.
type Member struct {
	ID       string
	Addr     string // Raft address
	Suffrage string // "voter", "nonvoter", or "staging" (a voter being caught up)
	Leader   bool
	// Unreachable is set when this server is the leader and its heartbeats to
	// the member are failing.
	Unreachable bool
	// LastContact is how long ago the leader last heard from an Unreachable
	// member; 0 otherwise. Raft does not expose a follower's last contact while
	// heartbeats succeed, so 0 means "healthy, or not known here".
	LastContact time.Duration
}

// Members returns the latest cluster configuration, which may not be committed
// yet, in configuration order.
func (m *membership) Members(ctx context.Context) ([]Member, error) {
	r := m.r
	servers, err := r.configuration(ctx)
	if err != nil {
		return nil, err
	}
	_, leaderID := r.raft.LeaderWithID()
	self := r.IsLeader()
	r.mu.Lock()
	defer r.mu.Unlock()
	members := make([]Member, 0, len(servers))
	for _, s := range servers {
		m := Member{
			ID:       string(s.ID),
			Addr:     string(s.Address),
			Suffrage: strings.ToLower(s.Suffrage.String()),
			Leader:   s.ID == leaderID,
		}
		if last, ok := r.failing[m.ID]; ok && self {
			m.Unreachable = true
			if !last.IsZero() {
				m.LastContact = time.Since(last)
			}
		}
		members = append(members, m)
	}
	return members, nil
}

func (m *membership) configuration(ctx context.Context) ([]raft.Server, error) {
	r := m.r
	f := r.raft.GetConfiguration()
	if err := r.await(ctx, f); err != nil {
		return nil, translate("get configuration", err)
	}
	return f.Configuration().Servers, nil
}

// Join adds a server to the cluster as a voter or a nonvoter, and waits until
// the change is committed. A new voter first joins as staging and is promoted
// once it has caught up. Join is idempotent: a member with the same ID and
// address is left alone (or has its vote changed). A member with the same ID
// or the same address, but not both, is removed first.
//
// Errors: ErrNotLeader; ErrTimeout, ErrLeadershipLost and ErrShutdown leave it
// unknown whether the change happened (call Members to find out).
func (m *membership) Join(ctx context.Context, id, addr string, voter bool) error {
	r := m.r
	op := fmt.Sprintf("join %s at %s", id, addr)
	if !r.IsLeader() {
		return ErrNotLeader
	}
	servers, err := r.configuration(ctx)
	if err != nil {
		return err
	}
	for _, s := range servers {
		sameID, sameAddr := string(s.ID) == id, string(s.Address) == addr
		switch {
		case sameID && sameAddr:
			if voter == (s.Suffrage != raft.Nonvoter) {
				return nil
			}
			if !voter {
				return r.change(ctx, op, func(t time.Duration) raft.IndexFuture {
					return r.raft.DemoteVoter(s.ID, 0, t)
				})
			}
			// A nonvoter becoming a voter: AddVoter below promotes it.
		case sameID || sameAddr:
			if string(s.ID) == r.id {
				return fmt.Errorf("%s: conflicts with this server %s at %s", op, s.ID, s.Address)
			}
			err := r.change(ctx, op, func(t time.Duration) raft.IndexFuture {
				return r.raft.RemoveServer(s.ID, 0, t)
			})
			if err != nil {
				return err
			}
		}
	}
	return r.change(ctx, op, func(t time.Duration) raft.IndexFuture {
		if voter {
			return r.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, t)
		}
		return r.raft.AddNonvoter(raft.ServerID(id), raft.ServerAddress(addr), 0, t)
	})
}

// Remove removes a server from the cluster and waits until the change is
// committed. The leader sends the removed server the log up to the change and
// then stops replicating to it, so a follower that was down or cut off never
// learns of it from the log, and one that did sees only a latest
// configuration (Members) without itself; a removed leader shuts its Raft
// down (Status reports "shutdown"). Either way the server keeps running until
// it is closed: node/removed.go asks the leader and closes it. Removing the
// leader makes the rest elect a new one.
//
// Errors: ErrNotLeader; ErrUnknownServer when id is not a member; ErrTimeout,
// ErrLeadershipLost and ErrShutdown leave the outcome unknown.
func (m *membership) Remove(ctx context.Context, id string) error {
	r := m.r
	op := "remove " + id
	if !r.IsLeader() {
		return ErrNotLeader
	}
	if _, err := r.member(ctx, op, id); err != nil {
		return err
	}
	return r.change(ctx, op, func(t time.Duration) raft.IndexFuture {
		return r.raft.RemoveServer(raft.ServerID(id), 0, t)
	})
}

// member returns the member with id, or ErrUnknownServer.
func (m *membership) member(ctx context.Context, op, id string) (raft.Server, error) {
	r := m.r
	servers, err := r.configuration(ctx)
	if err != nil {
		return raft.Server{}, err
	}
	for _, s := range servers {
		if string(s.ID) == id {
			return s, nil
		}
	}
	return raft.Server{}, fmt.Errorf("%s: %w", op, ErrUnknownServer)
}

// change makes one configuration change and waits for it to commit.
func (m *membership) change(ctx context.Context, op string, do func(timeout time.Duration) raft.IndexFuture) error {
	r := m.r
	timeout, err := raftTimeout(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return translate(op, r.await(ctx, do(timeout)))
}

// TransferLeadership hands leadership to the server id, or with id empty to
// the most up-to-date voter, and waits until this server sees a new leader. It
// returns that leader's ID, which may differ from id if another server won the
// election.
//
// Errors: ErrNotLeader; ErrUnknownServer; ErrTimeout; ErrShutdown; a plain
// error when raft could not transfer (no voter to pick, or the target did not
// win within ElectionTimeout), in which case this server is still the leader.
func (m *membership) TransferLeadership(ctx context.Context, id string) (string, error) {
	r := m.r
	op := "transfer leadership"
	if id != "" {
		op += " to " + id
	}
	if !r.IsLeader() {
		return "", ErrNotLeader
	}
	var f raft.Future
	if id == "" {
		f = r.raft.LeadershipTransfer()
	} else {
		s, err := r.member(ctx, op, id)
		if err != nil {
			return "", err
		}
		f = r.raft.LeadershipTransferToServer(s.ID, s.Address)
	}
	changes, cancel := r.Subscribe()
	defer cancel()
	if err := r.await(ctx, f); err != nil {
		return "", translate(op, err)
	}
	for {
		select {
		case c, ok := <-changes:
			if !ok {
				return "", ErrShutdown
			}
			if c.LeaderID != "" && !c.Self {
				return c.LeaderID, nil
			}
		case <-ctx.Done():
			return "", timeoutError(ctx)
		}
	}
}
