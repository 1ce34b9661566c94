package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/txlog/txlog/launcher"
	"github.com/txlog/txlog/tools/internal/servers"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Timeouts of a cluster's start and stop.
const (
	startTimeout = time.Minute         // until the cluster takes writes
	stopTimeout  = servers.StopTimeout // for each server after SIGTERM, then SIGKILL
	pollInterval = 100 * time.Millisecond
)

// cluster is a running three-node cluster of one system.
type cluster struct {
	targets []string // client URLs, one per node
	pids    []int    // the server processes
	close   func()
}

// startCluster starts a fresh three-node cluster of cfg.system in a new
// directory under cfg.dir and waits until it takes writes.
func startCluster(ctx context.Context, cfg config) (*cluster, error) {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	switch cfg.system {
	case systemNATS, systemNATSAsync:
		return startNATS(ctx, cfg)
	case systemEtcd:
		return startEtcd(ctx, cfg)
	default:
		return startTxlog(ctx, cfg)
	}
}

// natsStream and natsSubject are the stream every NATS run writes to.
const (
	natsStream  = "BENCH"
	natsSubject = "bench.tx"
)

// startNATS starts three nats-server processes as one cluster with
// JetStream, each syncing its stream files on every write
// (sync_interval: always), and creates the file stream natsStream with
// three replicas.
func startNATS(ctx context.Context, cfg config) (*cluster, error) {
	s, ports, err := servers.New(cfg.dir, "nats-", 6)
	if err != nil {
		return nil, err
	}
	const n = 3
	var routes, urls []string
	for i := range n {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", ports[n+i]))
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", ports[i]))
	}
	for i := range n {
		name := fmt.Sprintf("n%d", i+1)
		conf := fmt.Sprintf(`server_name: %s
listen: 127.0.0.1:%d
jetstream {
  store_dir: %q
  sync_interval: always
}
cluster {
  name: bench
  listen: 127.0.0.1:%d
  routes: [%s]
}
`, name, ports[i], filepath.Join(s.Dir(), name), ports[n+i], strings.Join(routes, ", "))
		path := filepath.Join(s.Dir(), name+".conf")
		if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
			s.Close()
			return nil, err
		}
		if err := s.Start(name, cfg.natsServer, "-c", path); err != nil {
			s.Close()
			return nil, err
		}
	}
	err = launcher.Poll(ctx, pollInterval, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		nc, err := nats.Connect(urls[0], nats.Timeout(time.Second))
		if err != nil {
			return err
		}
		defer nc.Close()
		js, err := nc.JetStream(nats.Context(ctx))
		if err != nil {
			return err
		}
		_, err = js.AddStream(&nats.StreamConfig{
			Name: natsStream, Subjects: []string{natsSubject}, Storage: nats.FileStorage, Replicas: n,
		}, nats.Context(ctx))
		if err != nil && !errors.Is(err, nats.ErrStreamNameAlreadyInUse) {
			return err
		}
		_, err = js.Publish(natsSubject, []byte("ready"), nats.Context(ctx))
		return err
	})
	if err != nil {
		return nil, s.Fail("nats cluster", err)
	}
	return &cluster{targets: urls, pids: s.PIDs(), close: s.Close}, nil
}

// startEtcd starts three etcd members bootstrapped together, with default
// settings (fsync on), and waits until a put succeeds.
func startEtcd(ctx context.Context, cfg config) (*cluster, error) {
	s, ports, err := servers.New(cfg.dir, "etcd-", 6)
	if err != nil {
		return nil, err
	}
	urls, err := s.StartEtcd(cfg.etcd, "compare", ports)
	if err != nil {
		s.Close()
		return nil, err
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: urls, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err == nil {
		err = launcher.Poll(ctx, pollInterval, func(ctx context.Context) error {
			pctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			_, err := cli.Put(pctx, "ready", "1")
			return err
		})
		cli.Close()
	}
	if err != nil {
		return nil, s.Fail("etcd cluster", err)
	}
	return &cluster{targets: urls, pids: s.PIDs(), close: s.Close}, nil
}

// startTxlog starts three txlogd nodes with the launcher (default settings:
// fsync on) and waits until they agree on a leader and are ready.
func startTxlog(ctx context.Context, cfg config) (*cluster, error) {
	dir, err := os.MkdirTemp(cfg.dir, "txlog-")
	if err != nil {
		return nil, err
	}
	cl, err := launcher.StartCluster(ctx, launcher.ClusterConfig{
		Bin:         cfg.txlogd,
		Dir:         filepath.Join(dir, "cluster"),
		StopTimeout: stopTimeout,
	})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("txlog cluster: %w", err)
	}
	closeAll := func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 3*stopTimeout)
		defer cancel()
		cl.Close(stopCtx)
		os.RemoveAll(dir)
	}
	if _, err := servers.WaitTxlog(ctx, cl); err != nil {
		closeAll()
		return nil, fmt.Errorf("txlog cluster: %w", err)
	}
	var pids []int
	for _, p := range cl.Nodes() {
		pids = append(pids, p.PID())
	}
	return &cluster{targets: cl.HTTPAddrs(), pids: pids, close: closeAll}, nil
}
