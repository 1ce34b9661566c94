package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/txlog/txlog/launcher"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Timeouts of a cluster's start and stop.
const (
	startTimeout = time.Minute      // until the cluster takes writes
	stopTimeout  = 10 * time.Second // for each server after SIGTERM, then SIGKILL
	pollInterval = 100 * time.Millisecond
)

// servers are the processes of a NATS or etcd cluster that this program
// started, with their logs, in a directory of their own.
type servers struct {
	dir   string
	procs []*exec.Cmd
	logs  []string
}

// start launches one server with args, its output in dir/name.log.
func (s *servers) start(name, bin string, args ...string) error {
	logPath := filepath.Join(s.dir, name+".log")
	log, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer log.Close() // the child has its own descriptor
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = launcher.SysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", bin, err)
	}
	s.procs = append(s.procs, cmd)
	s.logs = append(s.logs, logPath)
	return nil
}

// pids returns the servers' process IDs.
func (s *servers) pids() []int {
	out := make([]int, 0, len(s.procs))
	for _, p := range s.procs {
		out = append(out, p.Process.Pid)
	}
	return out
}

// close stops each server it started, by its PID, with SIGTERM (SIGKILL after
// stopTimeout), and removes the directory.
func (s *servers) close() {
	for _, p := range s.procs {
		p.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range s.procs {
		done := make(chan struct{})
		go func() { p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(stopTimeout):
			p.Process.Kill()
			<-done
		}
	}
	os.RemoveAll(s.dir)
}

// tails returns the last lines of every server's log.
func (s *servers) tails() string {
	var b strings.Builder
	for _, path := range s.logs {
		data, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintf(&b, "--- %s: %v\n", filepath.Base(path), err)
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		fmt.Fprintf(&b, "--- %s\n%s\n", filepath.Base(path), strings.Join(lines[max(0, len(lines)-10):], "\n"))
	}
	return b.String()
}

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
	dir, err := os.MkdirTemp(cfg.dir, "nats-")
	if err != nil {
		return nil, err
	}
	s := &servers{dir: dir}
	ports, err := launcher.FreePorts("127.0.0.1", 6)
	if err != nil {
		s.close()
		return nil, fmt.Errorf("reserve ports: %w", err)
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
`, name, ports[i], filepath.Join(dir, name), ports[n+i], strings.Join(routes, ", "))
		path := filepath.Join(dir, name+".conf")
		if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
			s.close()
			return nil, err
		}
		if err := s.start(name, cfg.natsServer, "-c", path); err != nil {
			s.close()
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
		tails := s.tails()
		s.close()
		return nil, fmt.Errorf("nats cluster: %w\n%s", err, tails)
	}
	return &cluster{targets: urls, pids: s.pids(), close: s.close}, nil
}

// startEtcd starts three etcd members bootstrapped together, with default
// settings (fsync on), and waits until a put succeeds.
func startEtcd(ctx context.Context, cfg config) (*cluster, error) {
	dir, err := os.MkdirTemp(cfg.dir, "etcd-")
	if err != nil {
		return nil, err
	}
	s := &servers{dir: dir}
	ports, err := launcher.FreePorts("127.0.0.1", 6)
	if err != nil {
		s.close()
		return nil, fmt.Errorf("reserve ports: %w", err)
	}
	const n = 3
	var initial, urls []string
	peerURL := func(i int) string { return "http://127.0.0.1:" + strconv.Itoa(ports[n+i]) }
	for i := range n {
		initial = append(initial, fmt.Sprintf("e%d=%s", i+1, peerURL(i)))
		urls = append(urls, "http://127.0.0.1:"+strconv.Itoa(ports[i]))
	}
	for i := range n {
		name := fmt.Sprintf("e%d", i+1)
		err := s.start(name, cfg.etcd,
			"--name", name,
			"--data-dir", filepath.Join(dir, name),
			"--listen-client-urls", urls[i],
			"--advertise-client-urls", urls[i],
			"--listen-peer-urls", peerURL(i),
			"--initial-advertise-peer-urls", peerURL(i),
			"--initial-cluster", strings.Join(initial, ","),
			"--initial-cluster-token", "compare",
			"--initial-cluster-state", "new",
		)
		if err != nil {
			s.close()
			return nil, err
		}
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
		tails := s.tails()
		s.close()
		return nil, fmt.Errorf("etcd cluster: %w\n%s", err, tails)
	}
	return &cluster{targets: urls, pids: s.pids(), close: s.close}, nil
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
	if _, err = cl.Leader(ctx); err == nil {
		err = cl.WaitReady(ctx)
	}
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("txlog cluster: %w", err)
	}
	var pids []int
	for _, p := range cl.Nodes() {
		pids = append(pids, p.PID())
	}
	return &cluster{targets: cl.HTTPAddrs(), pids: pids, close: closeAll}, nil
}
