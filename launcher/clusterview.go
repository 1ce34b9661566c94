package launcher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/txlog/txlog/api/wire"
)

// clusterView is the part of Cluster that asks the nodes what they see: which
// node leads (Leader), whether all are ready (WaitReady), each one's status.
// Cluster embeds it, so callers call c.Leader.
type clusterView struct{ c *Cluster }

// liveNodes returns the nodes that run, are not paused and have a known URL.
func (v *clusterView) liveNodes() []*Process {
	c := v.c
	var live []*Process
	for _, p := range c.nodes {
		if p.Running() && !p.Paused() && c.URL(p.ID()) != "" {
			live = append(live, p)
		}
	}
	return live
}

// Leader polls GET /v1/cluster on every live (running, not paused) node until all of
// them name the same leader and that leader, itself live, says it leads. It returns
// the leader's ID, or an error with the last disagreement once ctx ends.
func (v *clusterView) Leader(ctx context.Context) (string, error) {
	c := v.c
	var leader string
	err := Poll(ctx, httpPollInterval, func(ctx context.Context) error {
		id, err := c.agreedLeader(ctx)
		leader = id
		return err
	})
	if err != nil {
		return "", fmt.Errorf("wait for leader: %w", err)
	}
	return leader, nil
}

func (v *clusterView) agreedLeader(ctx context.Context) (string, error) {
	c := v.c
	live := c.liveNodes()
	if len(live) == 0 {
		return "", errors.New("no live nodes")
	}
	statuses := make([]wire.ClusterStatus, len(live))
	errs := make([]error, len(live))
	var wg sync.WaitGroup
	for i, p := range live {
		wg.Go(func() { statuses[i], errs[i] = c.status(ctx, p.ID()) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return "", err
	}
	leader := statuses[0].LeaderID
	for i, s := range statuses {
		if s.LeaderID == "" {
			return "", fmt.Errorf("%s knows no leader", live[i].ID())
		}
		if s.LeaderID != leader {
			return "", fmt.Errorf("%s sees leader %q, %s sees %q", live[0].ID(), leader, live[i].ID(), s.LeaderID)
		}
	}
	for i, s := range statuses {
		if live[i].ID() == leader {
			if s.State != "leader" {
				return "", fmt.Errorf("all see leader %s, but it is %s", leader, s.State)
			}
			return leader, nil
		}
	}
	return "", fmt.Errorf("all see leader %q, which is not live", leader)
}

// status asks node id for GET /v1/cluster. An answer from another node is a
// *WrongNodeError (see CheckNode).
func (v *clusterView) status(ctx context.Context, id string) (wire.ClusterStatus, error) {
	c := v.c
	var s wire.ClusterStatus
	body, err := c.get(ctx, id, "/v1/cluster?consistency=stale") // its own view, leader or not
	if errors.Is(err, errBadRequest) {
		// A node from before read consistency refuses the parameter; it
		// answers the plain request from its own state anyway.
		body, err = c.get(ctx, id, "/v1/cluster")
	}
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(body, &s); err != nil {
		return s, fmt.Errorf("%s: decode /v1/cluster: %w", id, err)
	}
	return s, CheckNode(id, s)
}

// WrongNodeError is the answer of a process that is not the node the caller
// expects at that URL: another process took the node's port while the node was
// down, say. Callers treat it as the node not answering.
type WrongNodeError struct {
	Want string // the node expected at the URL
	Got  string // the ID the answer gave; "" when it gave none
}

func (e *WrongNodeError) Error() string {
	return fmt.Sprintf("%s: answered as %q", e.Want, e.Got)
}

// CheckNode returns a *WrongNodeError unless st, an answer to GET /v1/cluster
// at the URL of node id, comes from node id.
func CheckNode(id string, st wire.ClusterStatus) error {
	if st.ID != id {
		return &WrongNodeError{Want: id, Got: st.ID}
	}
	return nil
}

// get does one GET on node id with requestTimeout and wants status 200.
func (v *clusterView) get(ctx context.Context, id, path string) ([]byte, error) {
	c := v.c
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL(id)+path, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	if c.security != nil {
		req.Header.Set("Authorization", "Bearer "+c.security.AdminToken)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("%s: read %s: %w", id, path, err)
	}
	if resp.StatusCode == http.StatusBadRequest {
		return nil, fmt.Errorf("%s: GET %s: %w: %s", id, path, errBadRequest, strings.TrimSpace(string(body)))
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: GET %s: %s: %s", id, path, resp.Status, strings.TrimSpace(string(body)))
	}
	return body, nil
}

// errBadRequest is get's error for a 400 answer.
var errBadRequest = errors.New("400 Bad Request")

// WaitReady polls every live node until all answer GET /v1/cluster as
// themselves (see CheckNode) and GET /readyz with 200.
func (v *clusterView) WaitReady(ctx context.Context) error {
	c := v.c
	err := Poll(ctx, httpPollInterval, func(ctx context.Context) error {
		live := c.liveNodes()
		if len(live) == 0 {
			return errors.New("no live nodes")
		}
		errs := make([]error, len(live))
		var wg sync.WaitGroup
		for i, p := range live {
			wg.Go(func() {
				if _, errs[i] = c.status(ctx, p.ID()); errs[i] == nil {
					_, errs[i] = c.get(ctx, p.ID(), "/readyz")
				}
			})
		}
		wg.Wait()
		return errors.Join(errs...)
	})
	if err != nil {
		return fmt.Errorf("wait until ready: %w", err)
	}
	return nil
}

// leaderHint asks the live nodes once, briefly, which of them leads, and returns its
// ID or "" when none answers that it does.
func (v *clusterView) leaderHint(ctx context.Context) string {
	c := v.c
	live := c.liveNodes()
	ids := make([]string, len(live))
	var wg sync.WaitGroup
	for i, p := range live {
		wg.Go(func() {
			if s, err := c.status(ctx, p.ID()); err == nil && s.State == "leader" {
				ids[i] = p.ID()
			}
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id != "" {
			return id
		}
	}
	return ""
}
