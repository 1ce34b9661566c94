package main

import (
	"context"
	"fmt"
	"time"

	"github.com/txlog/txlog/launcher"
	"github.com/txlog/txlog/tools/internal/servers"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// startTimeout bounds the wait until every member knows the leader.
const startTimeout = time.Minute

// cluster is a three-member etcd cluster on loopback, bootstrapped together,
// with default settings (fsync on) and its data in a directory of its own.
type cluster struct {
	*servers.Set
	clientURLs []string
}

// startCluster starts three etcd members with the binary bin in a new
// directory under parent and waits until each of them knows the leader. On
// error it stops what it started.
func startCluster(ctx context.Context, bin, parent string) (*cluster, error) {
	s, ports, err := servers.New(parent, "etcd-bench-", 6)
	if err != nil {
		return nil, err
	}
	urls, err := s.StartEtcd(bin, "etcdbench", ports, "--logger", "zap", "--log-outputs", "stderr")
	if err != nil {
		s.Close()
		return nil, err
	}
	c := &cluster{Set: s, clientURLs: urls}
	readyCtx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := c.waitLeader(readyCtx); err != nil {
		return nil, s.Fail("etcd cluster", err)
	}
	return c, nil
}

// waitLeader polls every member's status until all of them name the same
// leader.
func (c *cluster) waitLeader(ctx context.Context) error {
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.clientURLs, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer cli.Close()
	err = launcher.Poll(ctx, 100*time.Millisecond, func(ctx context.Context) error { return c.agree(ctx, cli) })
	if err != nil {
		return fmt.Errorf("wait for a leader: %w", err)
	}
	return nil
}

func (c *cluster) agree(ctx context.Context, cli *clientv3.Client) error {
	var leader uint64
	for _, u := range c.clientURLs {
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := cli.Status(sctx, u)
		cancel()
		switch {
		case err != nil:
			return fmt.Errorf("%s: %w", u, err)
		case st.Leader == 0:
			return fmt.Errorf("%s knows no leader", u)
		case leader != 0 && st.Leader != leader:
			return fmt.Errorf("%s sees leader %x, another %x", u, st.Leader, leader)
		}
		leader = st.Leader
	}
	return nil
}
