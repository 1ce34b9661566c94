package launcher

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// nodeControl is the part of Cluster that controls the node processes: Kill,
// Stop, Pause, Resume, Restart, and Close, which stops them all. Cluster embeds
// it, so callers call c.Kill.
type nodeControl struct{ c *Cluster }

// Kill sends SIGKILL to node id and waits until it is gone.
func (n *nodeControl) Kill(id string) error {
	c := n.c
	p, err := c.node(id)
	if err != nil {
		return err
	}
	return p.Kill()
}

// Stop stops node id gracefully (see Process.Stop), within ctx and StopTimeout.
func (n *nodeControl) Stop(ctx context.Context, id string) error {
	c := n.c
	p, err := c.node(id)
	if err != nil {
		return err
	}
	return c.stop(ctx, p)
}

func (n *nodeControl) stop(ctx context.Context, p *Process) error {
	c := n.c
	ctx, cancel := context.WithTimeout(ctx, c.cfg.StopTimeout)
	defer cancel()
	return p.Stop(ctx)
}

// Pause stops node id with SIGSTOP.
func (n *nodeControl) Pause(id string) error {
	c := n.c
	p, err := c.node(id)
	if err != nil {
		return err
	}
	return p.Pause()
}

// Resume continues node id with SIGCONT.
func (n *nodeControl) Resume(id string) error {
	c := n.c
	p, err := c.node(id)
	if err != nil {
		return err
	}
	return p.Resume()
}

// Restart starts node id again with the same arguments and data dir, first stopping
// it gracefully if it still runs, and returns once it listens on HTTP. Its HTTP port
// may change (when the cluster uses port 0); URL and HTTPAddrs follow it.
func (n *nodeControl) Restart(ctx context.Context, id string) error {
	c := n.c
	p, err := c.node(id)
	if err != nil {
		return err
	}
	if c.closed.Load() {
		return fmt.Errorf("restart %s: %w", id, ErrClosed)
	}
	if err := c.stop(ctx, p); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	if err := p.Start(); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	addr, err := p.HTTPAddr(ctx)
	if err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	c.setURL(id, addr)
	return nil
}

// Close stops every running node gracefully, followers first and the leader last so
// that the cluster does not hold an election for each stop, each within ctx and
// StopTimeout, after which a straggler gets SIGKILL. Close can be called twice; the
// second call returns the first one's result.
func (n *nodeControl) Close(ctx context.Context) error {
	c := n.c
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		c.closeErr = c.shutdown(ctx)
		c.client.CloseIdleConnections()
	})
	return c.closeErr
}

func (n *nodeControl) shutdown(ctx context.Context) error {
	c := n.c
	leader := c.leaderHint(ctx)
	var followers []*Process
	for _, p := range c.nodes {
		if p.Running() && p.ID() != leader {
			followers = append(followers, p)
		}
	}
	errs := make([]error, len(followers))
	var wg sync.WaitGroup
	for i, p := range followers {
		wg.Go(func() { errs[i] = c.stop(ctx, p) })
	}
	wg.Wait()
	if p := c.Node(leader); p != nil {
		errs = append(errs, c.stop(ctx, p))
	}
	c.log.Info("cluster stopped", "leader", leader)
	return errors.Join(errs...)
}

func (n *nodeControl) killAll() {
	c := n.c
	for _, p := range c.nodes {
		if err := p.Kill(); err != nil {
			c.log.Warn("kill failed", "node", p.ID(), "err", err)
		}
	}
}
