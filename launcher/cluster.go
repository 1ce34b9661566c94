package launcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ErrClosed is returned by Cluster methods that would start a node after Close.
var ErrClosed = errors.New("cluster is closed")

// Defaults of ClusterConfig.
const (
	DefaultNodes       = 3
	DefaultStopTimeout = 10 * time.Second
)

// requestTimeout bounds one HTTP request of the launcher to one node, so that a
// paused node does not hold a poll round hostage.
const requestTimeout = time.Second

// httpPollInterval is how often Leader and WaitReady ask the nodes again.
const httpPollInterval = 50 * time.Millisecond

// ClusterConfig describes a cluster of txlogd processes bootstrapped together on
// loopback. Zero values mean "use the default".
type ClusterConfig struct {
	// Bin is the txlogd binary. Required.
	Bin string
	// Dir holds node n's data dir <Dir>/<n> and log file <Dir>/<n>.log. Required;
	// made absolute by StartCluster.
	Dir string
	// Nodes is the number of nodes, named n1..nN. Default DefaultNodes.
	Nodes int
	// Host is the loopback address the nodes bind for HTTP and Raft. Default
	// 127.0.0.1. A cluster whose nodes are killed and restarted on the same ports
	// while other programs pick ports (tests running in parallel) should take its
	// own address from PrivateLoopback: a port of a node that is down is free on
	// 127.0.0.1 for anyone, but nobody else binds it on an address of its own.
	Host string
	// HTTPBasePort, when set, gives node i (from 1) the HTTP port HTTPBasePort+i-1.
	// Default 0: every node binds port 0 and the launcher reads the port back.
	HTTPBasePort int
	// RaftBasePort, when set, gives node i (from 1) the Raft port RaftBasePort+i-1.
	// Default 0: free ports are reserved just before launch. Raft addresses are part
	// of the cluster's stored configuration, so a cluster on reserved ports cannot be
	// started again on the same Dir by a new StartCluster (Restart keeps them).
	RaftBasePort int
	// ExtraArgs are appended to every node's command line.
	ExtraArgs []string
	// NodeArgs, when set, is called once per node after the Raft ports are chosen,
	// with the node's ID and every node's Raft address; what it returns is appended
	// to that node's command line after ExtraArgs. The chaos verifier uses it to
	// point each node's --raft-dial at its fault proxies. An error ends StartCluster.
	NodeArgs func(id string, raftAddrs map[string]string) ([]string, error)
	// Env is added to every node's environment (see ProcessConfig.Env).
	Env []string
	// StopTimeout bounds each node's graceful stop in Stop, Restart and Close, after
	// which the node gets SIGKILL. Default DefaultStopTimeout.
	StopTimeout time.Duration
	// Logger receives the launcher's records; nil discards them.
	Logger *slog.Logger
	// Secure, when set, runs the cluster with TLS and auth everywhere
	// (secure.go): https URLs, and the launcher's own requests carry the CA,
	// the client certificate and the admin token. See Cluster.Security.
	// Default nil: plain HTTP and Raft, no auth.
	Secure *SecureConfig
}

func (c ClusterConfig) withDefaults() ClusterConfig {
	if c.Nodes == 0 {
		c.Nodes = DefaultNodes
	}
	if c.Host == "" {
		c.Host = loopback
	}
	if c.StopTimeout == 0 {
		c.StopTimeout = DefaultStopTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports every missing or out-of-range field.
func (c ClusterConfig) Validate() error {
	var errs []error
	if c.Bin == "" {
		errs = append(errs, errors.New("Bin is required"))
	}
	if c.Dir == "" {
		errs = append(errs, errors.New("Dir is required"))
	}
	if c.Nodes < 0 || c.Nodes > 100 {
		errs = append(errs, fmt.Errorf("Nodes %d: want 1..100", c.Nodes))
	}
	if ip := net.ParseIP(c.Host); c.Host != "" && (ip == nil || !ip.IsLoopback()) {
		errs = append(errs, fmt.Errorf("Host %q: want a loopback IP address", c.Host))
	}
	for _, f := range []struct {
		name string
		port int
	}{{"HTTPBasePort", c.HTTPBasePort}, {"RaftBasePort", c.RaftBasePort}} {
		if f.port < 0 || f.port > 0 && f.port+c.Nodes-1 > 65535 {
			errs = append(errs, fmt.Errorf("%s %d: want 0, or 1..%d for %d nodes", f.name, f.port, 65536-c.Nodes, c.Nodes))
		}
	}
	if c.HTTPBasePort > 0 && c.RaftBasePort > 0 {
		h, r := c.HTTPBasePort, c.RaftBasePort
		if h < r+c.Nodes && r < h+c.Nodes {
			errs = append(errs, fmt.Errorf("HTTPBasePort %d and RaftBasePort %d: port ranges overlap", h, r))
		}
	}
	if c.StopTimeout < 0 {
		errs = append(errs, fmt.Errorf("StopTimeout %v: must not be negative", c.StopTimeout))
	}
	return errors.Join(errs...)
}

// Cluster is a set of txlogd processes bootstrapped together with --cluster. Its
// methods are safe to call from any goroutine, but lifecycle calls on the same node
// (Restart against Restart) must not race.
type Cluster struct {
	cfg       ClusterConfig // defaults filled in, Dir absolute; immutable
	log       *slog.Logger
	client    *http.Client
	security  *Security         // nil unless cfg.Secure; immutable
	scheme    string            // of the nodes' URLs: "http" or "https"
	nodes     []*Process        // in ID order n1..nN; immutable
	raftAddrs map[string]string // immutable

	mu   sync.Mutex
	urls map[string]string // base URL of each node's current or last run

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error // set inside closeOnce

	clusterView // clusterview.go: Leader, WaitReady
	nodeControl // nodecontrol.go: Kill, Stop, Pause, Resume, Restart, Close
}

// StartCluster launches cfg.Nodes txlogd processes with static bootstrap and returns
// once each of them listens on HTTP. It does not wait for a leader: use Leader or
// WaitReady. On error it kills what it started.
func StartCluster(ctx context.Context, cfg ClusterConfig) (*Cluster, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("cluster config: %w", err)
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("cluster dir: %w", err)
	}
	cfg.Dir = dir

	ids := make([]string, cfg.Nodes)
	for i := range ids {
		ids[i] = "n" + strconv.Itoa(i+1)
	}
	var httpPorts []int
	if cfg.HTTPBasePort > 0 {
		for i := range cfg.Nodes {
			httpPorts = append(httpPorts, cfg.HTTPBasePort+i)
		}
	}
	raftPorts, err := ports(cfg.Host, cfg.RaftBasePort, cfg.Nodes, httpPorts)
	if err != nil {
		return nil, fmt.Errorf("reserve raft ports: %w", err)
	}
	c := &Cluster{
		cfg:       cfg,
		log:       cfg.Logger.With("component", "launcher"),
		client:    &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()},
		raftAddrs: make(map[string]string, len(ids)),
		urls:      make(map[string]string, len(ids)),
		scheme:    "http",
	}
	if cfg.Secure != nil {
		hosts := []string{loopback, "localhost"}
		if cfg.Host != loopback {
			hosts = append(hosts, cfg.Host)
		}
		if c.security, err = newSecurity(filepath.Join(dir, SecureDirName), ids, hosts, *cfg.Secure); err != nil {
			return nil, fmt.Errorf("secure cluster: %w", err)
		}
		c.client.Transport.(*http.Transport).TLSClientConfig = c.security.TLSConfig()
		if c.security.ClientTLS {
			c.scheme = "https"
		}
	}
	c.clusterView.c, c.nodeControl.c = c, c
	members := make([]string, len(ids))
	for i, id := range ids {
		c.raftAddrs[id] = net.JoinHostPort(cfg.Host, strconv.Itoa(raftPorts[i]))
		members[i] = id + "=" + c.raftAddrs[id]
	}
	for i, id := range ids {
		httpPort := 0
		if httpPorts != nil {
			httpPort = httpPorts[i]
		}
		dataDir := filepath.Join(dir, id)
		args := []string{
			"--id=" + id,
			"--data-dir=" + dataDir,
			"--http-addr=" + net.JoinHostPort(cfg.Host, strconv.Itoa(httpPort)),
			"--raft-addr=" + c.raftAddrs[id],
			"--cluster=" + strings.Join(members, ","),
		}
		if c.security != nil {
			args = append(args, c.security.nodeArgs(id)...)
		}
		args = append(args, cfg.ExtraArgs...)
		if cfg.NodeArgs != nil {
			more, err := cfg.NodeArgs(id, maps.Clone(c.raftAddrs))
			if err != nil {
				return nil, fmt.Errorf("args of %s: %w", id, err)
			}
			args = append(args, more...)
		}
		p, err := NewProcess(ProcessConfig{
			ID:      id,
			Bin:     cfg.Bin,
			Args:    args,
			Env:     cfg.Env,
			DataDir: dataDir,
			LogDir:  dir,
			Logger:  cfg.Logger,
		})
		if err != nil {
			return nil, err
		}
		c.nodes = append(c.nodes, p)
	}

	for _, p := range c.nodes {
		if err := p.Start(); err != nil {
			c.killAll()
			return nil, err
		}
	}
	for _, p := range c.nodes {
		addr, err := p.HTTPAddr(ctx)
		if err != nil {
			c.killAll()
			return nil, err
		}
		c.setURL(p.ID(), addr)
	}
	c.log.Info("cluster started", "nodes", len(c.nodes), "dir", dir)
	return c, nil
}

func (c *Cluster) setURL(id, hostPort string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.urls[id] = c.scheme + "://" + hostPort
}

// Security returns what a client of a secured cluster needs (ClusterConfig.Secure),
// nil for a plain cluster.
func (c *Cluster) Security() *Security { return c.security }

// Dir returns the absolute directory that holds the nodes' data dirs and logs.
func (c *Cluster) Dir() string { return c.cfg.Dir }

// Node returns the node with the given ID, or nil.
func (c *Cluster) Node(id string) *Process {
	for _, p := range c.nodes {
		if p.ID() == id {
			return p
		}
	}
	return nil
}

func (c *Cluster) node(id string) (*Process, error) {
	if p := c.Node(id); p != nil {
		return p, nil
	}
	return nil, fmt.Errorf("no node %q in the cluster", id)
}

// Nodes returns all nodes in ID order, running or not. The caller owns the slice.
func (c *Cluster) Nodes() []*Process { return append([]*Process(nil), c.nodes...) }

// RaftAddr returns the Raft host:port of node id ("" for an unknown id).
func (c *Cluster) RaftAddr(id string) string { return c.raftAddrs[id] }

// URL returns the base URL (http://host:port, https:// when secured) of node id's HTTP API in its current
// or last run ("" for an unknown id).
func (c *Cluster) URL(id string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.urls[id]
}

// HTTPAddrs returns the base URLs (http://host:port) of all nodes in ID order, the
// last known one for a node that is down. The caller owns the slice.
func (c *Cluster) HTTPAddrs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.nodes))
	for _, p := range c.nodes {
		if u := c.urls[p.ID()]; u != "" {
			out = append(out, u)
		}
	}
	return out
}

// Poll calls f every interval until it returns nil or ctx ends. Then it returns
// ctx's error joined with f's last error from a call that ctx's end did not cut
// short: the call that runs into the deadline mostly fails only with it, which
// says less than the failure before it.
func Poll(ctx context.Context, interval time.Duration, f func(context.Context) error) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var last error
	for {
		err := f(ctx)
		if err == nil {
			return nil
		}
		if last == nil || ctx.Err() == nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w; last: %w", ctx.Err(), last)
		case <-tick.C:
		}
	}
}
