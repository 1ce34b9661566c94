package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/txlog/txlog/launcher"
)

// restarts times how long nodes take to come back at the log's final size: a
// follower stopped gracefully, the other follower killed, then the leader
// killed. The cluster settles (agrees on a leader, every node ready) before
// each. A failed measurement is recorded with its error, and the next one
// still runs if the cluster settles.
func (s *scaler) restarts(ctx context.Context) []restart {
	var rs []restart
	if err := s.settle(ctx, s.cfg.catchUpTimeout); err != nil {
		return append(rs, restart{Name: "follower SIGTERM", Err: err.Error()})
	}
	add := func(r restart) bool {
		rs = append(rs, r)
		if r.Err != "" {
			fmt.Fprintf(s.log, "scale: %s: %s\n", r.Name, r.Err)
		}
		if err := s.settle(ctx, s.cfg.catchUpTimeout); err != nil {
			fmt.Fprintf(s.log, "scale: after %s: %v\n", r.Name, err)
			return false
		}
		return true
	}
	leader, _, err := s.leader(ctx)
	if err != nil {
		return append(rs, restart{Name: "follower SIGTERM", Err: err.Error()})
	}
	followers := s.others(leader)
	if !add(s.restartFollower(ctx, "follower SIGTERM", followers[0], false)) {
		return rs
	}
	if !add(s.restartFollower(ctx, "follower SIGKILL", followers[len(followers)-1], true)) {
		return rs
	}
	add(s.restartLeader(ctx))
	return rs
}

// restartFollower stops follower id (SIGKILL when kill, else SIGTERM), starts
// it again and times it until it has caught up with the leader's commit index
// at the time it went down.
func (s *scaler) restartFollower(ctx context.Context, name, id string, kill bool) restart {
	r := restart{Name: name, Node: id, Signal: signalName(kill)}
	fmt.Fprintf(s.log, "scale: %s: %s\n", name, id)
	leader, _, err := s.leader(ctx)
	if err != nil {
		return r.fail(err)
	}
	stopLoad, err := s.startLoad(ctx, s.others(id))
	if err != nil {
		return r.fail(err)
	}
	defer stopLoad()

	t := time.Now()
	if kill {
		err = s.cl.Kill(id)
	} else {
		err = s.cl.Stop(ctx, id)
	}
	r.StopSeconds = time.Since(t).Seconds()
	if err != nil {
		return r.fail(err)
	}
	st, err := s.status(ctx, leader)
	if err != nil {
		return r.fail(err)
	}
	r.LogIndex = st.CommitIndex
	return s.startAndCatchUp(ctx, r)
}

// restartLeader kills the leader, starts it again at once (as a supervisor
// would) and times both how soon a node answers as leader in a later term and
// how soon the old leader has caught up with its own commit index at the kill.
// The new leader may be the old one: back within the election timeout, with
// the longest log, it can win the election.
func (s *scaler) restartLeader(ctx context.Context) restart {
	r := restart{Name: "leader SIGKILL", Signal: signalName(true)}
	leader, st, err := s.leader(ctx)
	if err != nil {
		return r.fail(err)
	}
	r.Node, r.LogIndex = leader, st.CommitIndex
	fmt.Fprintf(s.log, "scale: %s: %s\n", r.Name, leader)
	stopLoad, err := s.startLoad(ctx, s.others(leader))
	if err != nil {
		return r.fail(err)
	}
	defer stopLoad()

	type elected struct {
		id  string
		in  time.Duration
		err error
	}
	t := time.Now()
	if err := s.cl.Kill(leader); err != nil {
		return r.fail(err)
	}
	r.StopSeconds = time.Since(t).Seconds()
	ch := make(chan elected, 1)
	go func() {
		id, err := s.waitNewLeader(ctx, st.Term)
		ch <- elected{id, time.Since(t), err}
	}()
	r = s.startAndCatchUp(ctx, r)
	e := <-ch
	if e.err != nil {
		return r.fail(e.err)
	}
	r.NewLeader, r.NewLeaderSeconds = e.id, e.in.Seconds()
	return r
}

// startAndCatchUp starts r.Node again and fills in how long it took to listen
// and to catch up with r.LogIndex, and its memory then.
func (s *scaler) startAndCatchUp(ctx context.Context, r restart) restart {
	start := time.Now()
	if err := s.cl.Restart(ctx, r.Node); err != nil {
		return r.fail(err)
	}
	r.ListenSeconds = time.Since(start).Seconds()
	if err := s.waitCaughtUp(ctx, r.Node, r.LogIndex); err != nil {
		return r.fail(err)
	}
	r.CaughtUpSeconds = time.Since(start).Seconds()
	mem, err := readMemStatus(s.cl.Node(r.Node).PID())
	if err != nil {
		return r.fail(err)
	}
	r.RSSBytes, r.HWMBytes, r.AnonBytes = mem.RSSBytes, mem.HWMBytes, mem.AnonBytes
	return r
}

func (r restart) fail(err error) restart {
	r.Err = err.Error()
	return r
}

func signalName(kill bool) string {
	if kill {
		return "SIGKILL"
	}
	return "SIGTERM"
}

// waitCaughtUp polls node id until its applied index is at least index and
// its /readyz answers 200.
func (s *scaler) waitCaughtUp(ctx context.Context, id string, index uint64) error {
	return s.poll(ctx, func(ctx context.Context) error {
		st, err := s.status(ctx, id)
		if err != nil {
			return err
		}
		if st.AppliedIndex < index {
			return fmt.Errorf("%s applied %d of %d", id, st.AppliedIndex, index)
		}
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		return s.client.Ready(rctx, s.cl.URL(id))
	})
}

// waitNewLeader polls every node, at its current URL, until one of them says
// it leads in a term after term, and returns its ID. A node that is down or
// not yet listening does not answer and is skipped.
func (s *scaler) waitNewLeader(ctx context.Context, term uint64) (string, error) {
	var leader string
	err := s.poll(ctx, func(ctx context.Context) error {
		for _, p := range s.cl.Nodes() {
			st, err := s.status(ctx, p.ID())
			if err == nil && st.State == "leader" && st.Term > term {
				leader = p.ID()
				return nil
			}
		}
		return fmt.Errorf("no node leads in a term after %d", term)
	})
	return leader, err
}

// poll calls f every pollInterval until it returns nil, or until
// --catch-up-timeout or ctx ends, and then returns f's last error.
func (s *scaler) poll(ctx context.Context, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.catchUpTimeout)
	defer cancel()
	return launcher.Poll(ctx, pollInterval, f)
}

// startLoad starts a light closed-loop load of --restart-load clients on the
// nodes ids, unless that is 0, and returns the function that stops it. The
// load's own numbers are not kept: it is there so that a restart happens
// under writes, as it would in production.
func (s *scaler) startLoad(ctx context.Context, ids []string) (stop func(), err error) {
	if s.cfg.restartLoad == 0 {
		return func() {}, nil
	}
	lctx, cancel := context.WithCancel(ctx)
	cmd := benchCommand(lctx, s.cfg.txlog, s.urls(ids),
		"--clients", strconv.Itoa(s.cfg.restartLoad), "--duration", "24h")
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("start load: %w", err)
	}
	return func() {
		cancel()
		cmd.Wait() // ends with "context canceled": the load has no summary to give
	}, nil
}
