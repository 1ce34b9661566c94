package servers

import (
	"context"
	"time"

	"github.com/txlog/txlog/launcher"
)

// readyTimeout bounds WaitTxlog.
const readyTimeout = time.Minute

// StartTxlog starts a cluster of launcher.DefaultNodes txlogd nodes (the
// binary bin) in dir, on HTTP ports fixed now on a private loopback address:
// a killed node comes back where clients made at the start look for it (with
// ports chosen at each start, a client made before the restarts ends up with
// no node that answers). It does not wait for a leader: see WaitTxlog.
func StartTxlog(ctx context.Context, bin, dir string) (*launcher.Cluster, error) {
	host := launcher.PrivateLoopback()
	base, err := launcher.FreeRange(host, launcher.DefaultNodes)
	if err != nil {
		return nil, err
	}
	return launcher.StartCluster(ctx, launcher.ClusterConfig{Bin: bin, Dir: dir, Host: host, HTTPBasePort: base})
}

// WaitTxlog waits, for a minute at most, until cl has a leader and every node
// is ready, and returns the leader's ID.
func WaitTxlog(ctx context.Context, cl *launcher.Cluster) (leader string, err error) {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	if leader, err = cl.Leader(ctx); err != nil {
		return "", err
	}
	return leader, cl.WaitReady(ctx)
}
