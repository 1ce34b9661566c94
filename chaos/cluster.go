package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/txlog/txlog/api/wire"
)

// ErrClosed is returned by Cluster methods that would start a node after Close.
var ErrClosed = errors.New("cluster is closed")

// Defaults of ClusterConfig.
const (
	DefaultNodes       = 3
	DefaultStopTimeout = 10 * time.Second
)

// loopback is the host the launcher binds nodes to unless ClusterConfig.Host
// names another loopback address.
const loopback = "127.0.0.1"

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
	nodes     []*Process        // in ID order n1..nN; immutable
	raftAddrs map[string]string // immutable

	mu   sync.Mutex
	urls map[string]string // base URL of each node's current or last run

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error // set inside closeOnce
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
		log:       cfg.Logger.With("component", "chaos"),
		client:    &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()},
		raftAddrs: make(map[string]string, len(ids)),
		urls:      make(map[string]string, len(ids)),
	}
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

// ports returns n ports from base on, or, when base is 0, n reserved free ports
// on host other than those in exclude.
func ports(host string, base, n int, exclude []int) ([]int, error) {
	if base == 0 {
		return freePorts(host, n, exclude...)
	}
	ps := make([]int, n)
	for i := range ps {
		ps[i] = base + i
	}
	return ps, nil
}

// PrivateLoopback returns a random address in 127.0.0.0/8 other than 127.0.0.1
// that this machine lets a program bind (Linux routes the whole block to the
// loopback interface), or 127.0.0.1 where it does not. Connections to it come
// from 127.0.0.1, so neither the kernel's ephemeral ports nor other programs'
// listeners on 127.0.0.1 take its ports.
func PrivateLoopback() string {
	for range 10 {
		ip := net.IPv4(127, byte(1+rand.IntN(254)), byte(rand.IntN(256)), byte(1+rand.IntN(254))).String()
		l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err == nil {
			l.Close()
			return ip
		}
	}
	return loopback
}

// freePorts reserves n distinct free TCP ports on host, none of them in exclude,
// and releases them for the caller's processes to bind. The ports come from
// below the kernel's ephemeral range, checked free by binding each once: a port
// the kernel hands out for a bind to port 0 or for an outgoing connection (every
// other node's HTTP listener, every client) could otherwise be taken between the
// release here and the node's own bind, which made a test's node exit with
// "address already in use" now and then. Only another caller choosing the same
// random port on the same host in that window can still collide. Where the range
// is not known, the kernel picks (bind to port 0).
func freePorts(host string, n int, exclude ...int) ([]int, error) {
	lo, hi, ok := belowEphemeral()
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ps := make([]int, 0, n)
	for tries := 0; len(ps) < n; tries++ {
		port := 0
		if ok && tries < 100*n {
			port = lo + rand.IntN(hi-lo)
			if slices.Contains(exclude, port) {
				continue
			}
		}
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			if port != 0 {
				continue // taken: try another
			}
			return nil, err
		}
		p := l.Addr().(*net.TCPAddr).Port
		ls = append(ls, l)
		if slices.Contains(exclude, p) {
			continue // the kernel's pick; keep it bound so it is not picked again
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// FreeRange returns the first of n consecutive ports on host that are free now,
// from below the kernel's ephemeral range where that is known (see freePorts),
// for a cluster's fixed HTTP ports (ClusterConfig.HTTPBasePort).
func FreeRange(host string, n int) (int, error) {
	lo, hi, ok := belowEphemeral()
	if !ok {
		lo, hi = 20000, 30000
	}
	for range 100 {
		base := lo + rand.IntN(hi-lo-n)
		var ls []net.Listener
		for i := range n {
			l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(base+i)))
			if err != nil {
				break
			}
			ls = append(ls, l)
		}
		for _, l := range ls {
			l.Close()
		}
		if len(ls) == n {
			return base, nil
		}
	}
	return 0, fmt.Errorf("no %d consecutive free ports on %s", n, host)
}

// belowEphemeral returns the range [lo, hi) of ports that freePorts picks
// from: from 10000 up to the start of the kernel's ephemeral port range.
func belowEphemeral() (lo, hi int, ok bool) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0, false
	}
	start, err := strconv.Atoi(f[0])
	if err != nil || start <= 11000 {
		return 0, 0, false
	}
	return 10000, start, true
}

func (c *Cluster) killAll() {
	for _, p := range c.nodes {
		if err := p.Kill(); err != nil {
			c.log.Warn("kill failed", "node", p.ID(), "err", err)
		}
	}
}

func (c *Cluster) setURL(id, hostPort string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.urls[id] = "http://" + hostPort
}

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

// URL returns the base URL (http://host:port) of node id's HTTP API in its current
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

// liveNodes returns the nodes that run, are not paused and have a known URL.
func (c *Cluster) liveNodes() []*Process {
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
func (c *Cluster) Leader(ctx context.Context) (string, error) {
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

func (c *Cluster) agreedLeader(ctx context.Context) (string, error) {
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
// *wrongNodeError (see checkNode).
func (c *Cluster) status(ctx context.Context, id string) (wire.ClusterStatus, error) {
	var s wire.ClusterStatus
	body, err := c.get(ctx, id, "/v1/cluster")
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(body, &s); err != nil {
		return s, fmt.Errorf("%s: decode /v1/cluster: %w", id, err)
	}
	return s, checkNode(id, s)
}

// get does one GET on node id with requestTimeout and wants status 200.
func (c *Cluster) get(ctx context.Context, id, path string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL(id)+path, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
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
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: GET %s: %s: %s", id, path, resp.Status, strings.TrimSpace(string(body)))
	}
	return body, nil
}

// WaitReady polls every live node until all answer GET /v1/cluster as
// themselves (see checkNode) and GET /readyz with 200.
func (c *Cluster) WaitReady(ctx context.Context) error {
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

// Kill sends SIGKILL to node id and waits until it is gone.
func (c *Cluster) Kill(id string) error {
	p, err := c.node(id)
	if err != nil {
		return err
	}
	return p.Kill()
}

// Stop stops node id gracefully (see Process.Stop), within ctx and StopTimeout.
func (c *Cluster) Stop(ctx context.Context, id string) error {
	p, err := c.node(id)
	if err != nil {
		return err
	}
	return c.stop(ctx, p)
}

func (c *Cluster) stop(ctx context.Context, p *Process) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.StopTimeout)
	defer cancel()
	return p.Stop(ctx)
}

// Pause stops node id with SIGSTOP.
func (c *Cluster) Pause(id string) error {
	p, err := c.node(id)
	if err != nil {
		return err
	}
	return p.Pause()
}

// Resume continues node id with SIGCONT.
func (c *Cluster) Resume(id string) error {
	p, err := c.node(id)
	if err != nil {
		return err
	}
	return p.Resume()
}

// Restart starts node id again with the same arguments and data dir, first stopping
// it gracefully if it still runs, and returns once it listens on HTTP. Its HTTP port
// may change (when the cluster uses port 0); URL and HTTPAddrs follow it.
func (c *Cluster) Restart(ctx context.Context, id string) error {
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
func (c *Cluster) Close(ctx context.Context) error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		c.closeErr = c.shutdown(ctx)
		c.client.CloseIdleConnections()
	})
	return c.closeErr
}

func (c *Cluster) shutdown(ctx context.Context) error {
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

// leaderHint asks the live nodes once, briefly, which of them leads, and returns its
// ID or "" when none answers that it does.
func (c *Cluster) leaderHint(ctx context.Context) string {
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
