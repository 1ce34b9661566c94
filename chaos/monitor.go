package chaos

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/launcher"
)

// monitorInterval is how often the monitor asks every node for its view.
const monitorInterval = 200 * time.Millisecond

// requestTimeout bounds one HTTP request of the monitor to one node, so that a
// paused node does not hold a poll round hostage, and a fault proxy's dial to
// its upstream.
const requestTimeout = time.Second

// httpPollInterval is how often the monitor asks the nodes again while it waits
// for a leader or for them to be healthy.
const httpPollInterval = 50 * time.Millisecond

// viewTimeout bounds the monitor's wait for one node's view while it watches
// the leader: a paused node must not hold up the view of the others.
const viewTimeout = 400 * time.Millisecond

// LeaderChange is a point of the leader timeline: from At on, Leader led in Term
// ("" while no node was an agreed leader).
type LeaderChange struct {
	At     time.Time `json:"at"`
	Leader string    `json:"leader"`
	Term   uint64    `json:"term,omitempty"`
}

// monitor watches the nodes over HTTP: who leads, and whether they are ready.
// It sees a cluster the way a client does, so it works for a local cluster and a
// deployment alike.
type monitor struct {
	client *client.Client
	creds  Credentials       // of client, and of the clients it makes
	urls   map[string]string // node ID → base URL; immutable
	ids    []string          // sorted; immutable

	mu       sync.Mutex
	timeline []LeaderChange
}

func newMonitor(urls map[string]string, creds Credentials) *monitor {
	return &monitor{
		client: client.NewClient(creds.apply(client.ClientConfig{AttemptTimeout: requestTimeout})),
		creds:  creds,
		urls:   urls,
		ids:    slices.Sorted(maps.Keys(urls)),
	}
}

// others returns the node IDs other than id.
func (m *monitor) others(id string) []string {
	return slices.DeleteFunc(slices.Clone(m.ids), func(s string) bool { return s == id })
}

// views asks every node for GET /v1/cluster at once. A node that does not
// answer within timeout, or answers as another node (see launcher.CheckNode), is left
// out, and the error says why, one line per node left out.
func (m *monitor) views(ctx context.Context, timeout time.Duration) (map[string]wire.ClusterStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out := make([]wire.ClusterStatus, len(m.ids))
	errs := make([]error, len(m.ids))
	var wg sync.WaitGroup
	for i, id := range m.ids {
		wg.Go(func() {
			st, err := m.client.ClusterFrom(ctx, m.urls[id])
			if err != nil {
				errs[i] = fmt.Errorf("%s: %w", id, err)
				return
			}
			out[i], errs[i] = st, launcher.CheckNode(id, st)
		})
	}
	wg.Wait()
	views := map[string]wire.ClusterStatus{}
	for i, id := range m.ids {
		if errs[i] == nil {
			views[id] = out[i]
		}
	}
	return views, errors.Join(errs...)
}

// agreedLeader returns the node that says it leads in the highest term, when a
// majority of all nodes (itself included) name it; else "".
func (m *monitor) agreedLeader(views map[string]wire.ClusterStatus) (string, uint64) {
	best, term := "", uint64(0)
	for id, v := range views {
		if v.State == "leader" && (best == "" || v.Term > term) {
			best, term = id, v.Term
		}
	}
	if best == "" {
		return "", 0
	}
	votes := 0
	for _, v := range views {
		if v.LeaderID == best {
			votes++
		}
	}
	if votes*2 <= len(m.ids) {
		return "", 0
	}
	return best, term
}

// run polls the nodes until ctx ends and records every change of leader.
func (m *monitor) run(ctx context.Context) {
	t := time.NewTicker(monitorInterval)
	defer t.Stop()
	for {
		views, _ := m.views(ctx, viewTimeout)
		leader, term := m.agreedLeader(views)
		m.mu.Lock()
		if n := len(m.timeline); n == 0 || m.timeline[n-1].Leader != leader || m.timeline[n-1].Term != term {
			m.timeline = append(m.timeline, LeaderChange{At: time.Now(), Leader: leader, Term: term})
		}
		m.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// current returns the last leader seen.
func (m *monitor) current() LeaderChange {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.timeline) == 0 {
		return LeaderChange{}
	}
	return m.timeline[len(m.timeline)-1]
}

// Timeline returns the leader changes so far.
func (m *monitor) Timeline() []LeaderChange {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.timeline)
}

// waitLeader polls until a majority agrees on a leader other than not, and
// returns it.
func (m *monitor) waitLeader(ctx context.Context, not string) (string, error) {
	var leader string
	err := launcher.Poll(ctx, httpPollInterval, func(ctx context.Context) error {
		views, missing := m.views(ctx, viewTimeout)
		id, _ := m.agreedLeader(views)
		switch {
		case id == "":
			return errors.Join(fmt.Errorf("no agreed leader among %d answering nodes", len(views)), missing)
		case id == not:
			return fmt.Errorf("%s still leads", id)
		}
		leader = id
		return nil
	})
	return leader, err
}

// errNotHealthy wraps the failures of waitHealthy.
var errNotHealthy = errors.New("cluster not healthy")

// waitHealthy polls until every node answers GET /v1/cluster as itself (see
// checkNode) and /readyz with 200, and a majority agrees on the leader. A 200
// from /readyz alone could come from any process that took a node's port.
func (m *monitor) waitHealthy(ctx context.Context) error {
	err := launcher.Poll(ctx, httpPollInterval, func(ctx context.Context) error {
		views, err := m.views(ctx, viewTimeout)
		if err != nil {
			return err
		}
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		errs := make([]error, len(m.ids))
		var wg sync.WaitGroup
		for i, id := range m.ids {
			wg.Go(func() {
				if err := m.client.Ready(rctx, m.urls[id]); err != nil {
					errs[i] = fmt.Errorf("%s: %w", id, err)
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
		if id, _ := m.agreedLeader(views); id == "" {
			return errors.New("no agreed leader")
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w: %w", errNotHealthy, err)
	}
	return nil
}

// waitSettled polls until every node has applied what the leader committed and
// holds no unresolved intake (transactions it accepted but has not seen
// resolved), and returns the leader's commit index.
func (m *monitor) waitSettled(ctx context.Context) (uint64, error) {
	var commit uint64
	err := launcher.Poll(ctx, httpPollInterval, func(ctx context.Context) error {
		views, err := m.views(ctx, requestTimeout)
		if err != nil {
			return fmt.Errorf("%d of %d nodes answer: %w", len(views), len(m.ids), err)
		}
		leader, _ := m.agreedLeader(views)
		if leader == "" {
			return errors.New("no agreed leader")
		}
		commit = views[leader].CommitIndex
		for _, id := range m.ids {
			v := views[id]
			if v.AppliedIndex < commit {
				return fmt.Errorf("%s applied %d of %d", id, v.AppliedIndex, commit)
			}
			if n, err := strconv.Atoi(v.Extra["intake_unresolved"]); err == nil && n > 0 {
				return fmt.Errorf("%s holds %d unresolved intake transactions", id, n)
			}
		}
		return nil
	})
	return commit, err
}

// readLog reads node id's whole log up to index upTo, once node id has
// answered as itself at its URL.
func (m *monitor) readLog(ctx context.Context, id string, upTo uint64) ([]wire.LogEntry, error) {
	st, err := m.client.ClusterFrom(ctx, m.urls[id])
	if err != nil {
		return nil, fmt.Errorf("read log of %s: %w", id, err)
	}
	if err := launcher.CheckNode(id, st); err != nil {
		return nil, fmt.Errorf("read log: %w", err)
	}
	c := client.NewClient(m.creds.apply(client.ClientConfig{Endpoints: []string{m.urls[id]}, Timeout: 30 * time.Second}))
	var out []wire.LogEntry
	from := uint64(1)
	for from <= upTo {
		page, err := c.Log(ctx, from, 1000)
		if err != nil {
			return out, fmt.Errorf("read log of %s from %d: %w", id, from, err)
		}
		for _, e := range page.Entries {
			if e.Index <= upTo {
				out = append(out, e)
			}
		}
		if page.Next <= from {
			break
		}
		from = page.Next
	}
	return out, nil
}
