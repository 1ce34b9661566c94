package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/chaos/lazyfs"
	"github.com/txlog/txlog/chaos/procstat"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/launcher"
)

// Config describes one run of the chaos verifier. Zero values mean "use the
// default". The cluster under test is either launched here (Bin set) or an
// existing one (Targets set).
type Config struct {
	// Bin is the txlogd binary of a local three-node cluster launched for the run.
	Bin string
	// RedisBin is the redis-server of the local cluster; empty runs it without
	// Redis (parking in the intake WAL alone) and leaves out redis-outage.
	RedisBin string
	// Targets are the base URLs of an existing cluster's nodes, instead of Bin.
	Targets []string
	// Commands inject faults into Targets.
	Commands Commands
	// Dir holds the local cluster's data and logs and the run's artifacts
	// (the linearizability visualization). Required.
	Dir      string
	Workload WorkloadConfig
	Nemesis  NemesisConfig
	// Leases is the lease workload (lease_workload.go): on when it has a
	// Command and is not Off.
	Leases LeaseConfig
	// Consumers is the consumer workload (consumer_workload.go): on when it
	// has a Command and is not Off.
	Consumers ConsumerConfig
	// Duration is how long the clients issue operations. Default 1m. With
	// Nemesis.MaxFaults the run ends earlier, once the last fault recovered.
	Duration time.Duration
	// Seed makes the schedule of faults and the clients' choices replayable.
	Seed uint64
	// RequireAllFaults adds a checker that fails when a configured fault
	// kind was never injected (--require-all-faults).
	RequireAllFaults bool
	// ResolveTimeout bounds, after the clients stopped, the wait for every 202 to
	// resolve and every node to catch up. Default 60s.
	ResolveTimeout time.Duration
	// CheckTimeout bounds the linearizability check. Default 2m.
	CheckTimeout time.Duration
	// PowerLossDirs is the directory rule of the nodes' lazyfs mounts when the
	// faults include powerloss (docs/chaos.md). Default lazyfs.DirsPOSIX.
	PowerLossDirs lazyfs.DirRule
	// Progress receives a live progress line every second; nil for none.
	Progress io.Writer
	// Logger receives the run's records; nil discards them.
	Logger *slog.Logger
	// TLS runs the local cluster secured (launcher.SecureConfig with mutual
	// TLS: https, peer TLS, an auth file), and every client of the run with
	// its CA, client certificate and admin token. Only with Bin.
	TLS bool
	// Credentials are those of every client of the run against Targets (a
	// secured deployment). With TLS they come from the launcher.
	Credentials Credentials
}

// Defaults of Config.
const (
	DefaultDuration       = time.Minute
	DefaultResolveTimeout = 60 * time.Second
	DefaultCheckTimeout   = 2 * time.Minute
)

func (c Config) withDefaults() Config {
	c.Workload = c.Workload.withDefaults()
	c.Nemesis = c.Nemesis.withDefaults()
	if c.Duration == 0 {
		c.Duration = DefaultDuration
	}
	if c.ResolveTimeout == 0 {
		c.ResolveTimeout = DefaultResolveTimeout
	}
	if c.CheckTimeout == 0 {
		c.CheckTimeout = DefaultCheckTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.PowerLossDirs == "" {
		c.PowerLossDirs = lazyfs.DirsPOSIX
	}
	return c
}

// Validate reports every problem with c.
func (c Config) Validate() error {
	var errs []error
	if (c.Bin == "") == (len(c.Targets) == 0) {
		errs = append(errs, errors.New("give Bin (a local cluster) or Targets (an existing one), not both"))
	}
	if c.Dir == "" {
		errs = append(errs, errors.New("Dir is required"))
	}
	if c.TLS && c.Bin == "" {
		errs = append(errs, errors.New("TLS secures a local cluster (Bin); give an existing one's Credentials instead"))
	}
	if c.TLS && c.Credentials != (Credentials{}) {
		errs = append(errs, errors.New("TLS makes its own Credentials: give one or the other"))
	}
	for i, t := range c.Targets {
		if err := (client.ClientConfig{Endpoints: []string{t}}).Validate(); err != nil {
			errs = append(errs, fmt.Errorf("Targets[%d]: %w", i, err))
		}
	}
	if c.Duration < 0 || c.ResolveTimeout < 0 || c.CheckTimeout < 0 {
		errs = append(errs, errors.New("Duration, ResolveTimeout and CheckTimeout must not be negative"))
	}
	if c.Nemesis.Interval < 0 || c.Nemesis.Hold < 0 || c.Nemesis.MaxFaults < 0 || c.Nemesis.RecoverTimeout < 0 {
		errs = append(errs, errors.New("Nemesis: Interval, Hold, MaxFaults and RecoverTimeout must not be negative"))
	}
	if err := c.Workload.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("Workload: %w", err))
	}
	if err := c.Leases.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("Leases: %w", err))
	}
	if err := c.Consumers.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("Consumers: %w", err))
	}
	if c.PowerLossDirs != "" {
		if _, err := lazyfs.ParseDirRule(string(c.PowerLossDirs)); err != nil {
			errs = append(errs, fmt.Errorf("PowerLossDirs: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Run runs the verifier: it brings up (or finds) the cluster, runs the clients
// and the nemesis for Duration, lets the cluster settle, reads every node's log
// and runs the checkers. It returns the report, also when a checker failed
// (see Report.Failed); an error means the run itself could not be carried out.
// A local cluster is stopped before Run returns.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("chaos config: %w", err)
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, err
	}
	cfg.Dir = dir
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	log := cfg.Logger.With("component", "chaos")
	if err := checkPowerLoss(cfg); err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}

	rep := &Report{Seed: cfg.Seed, Dir: dir, Redis: "none (WAL-only parking)", Acks: cfg.Workload.Acks}
	var (
		target Target
		urls   map[string]string
	)
	if cfg.Bin != "" {
		lt, err := startLocal(ctx, cfg)
		if err != nil {
			return nil, err
		}
		defer lt.close(context.WithoutCancel(ctx))
		target, rep.Mode = lt, "local"
		if sec := lt.c.Security(); sec != nil {
			cfg.Credentials = Credentials{Token: sec.AdminToken, CAFile: sec.CAFile, CertFile: sec.ClientCertFile, KeyFile: sec.ClientKeyFile}
			rep.Mode = "local, TLS and auth"
		}
		urls = map[string]string{}
		for _, p := range lt.c.Nodes() {
			urls[p.ID()] = lt.c.URL(p.ID())
		}
		if lt.redis != nil {
			rep.Redis = lt.redis.Addr()
		}
	}
	creds := cfg.Credentials
	if err := creds.load(); err != nil {
		return nil, fmt.Errorf("chaos: credentials: %w", err)
	}
	if cfg.Bin == "" {
		target, rep.Mode, rep.Redis = &cmdTarget{cmds: cfg.Commands}, "targets", "as deployed"
		if urls, err = discover(ctx, cfg.Targets, creds); err != nil {
			return nil, err
		}
	}

	var weights []FaultWeight
	for _, w := range cfg.Nemesis.Faults {
		if w.Fault == FaultPauseHolder && !cfg.Leases.on() {
			log.Warn("fault left out", "fault", w.Fault, "err", "no lease workload")
			continue
		}
		if w.Fault == FaultPauseConsumer && !cfg.Consumers.on() {
			log.Warn("fault left out", "fault", w.Fault, "err", "no consumer workload")
			continue
		}
		if err := target.Supports(w.Fault); err != nil {
			log.Warn("fault left out", "fault", w.Fault, "err", err)
			continue
		}
		weights = append(weights, w)
	}
	if len(weights) == 0 {
		return nil, errors.New("chaos: the target supports none of the faults asked for")
	}

	mon := newMonitor(urls, creds)
	wctx, cancel := context.WithTimeout(ctx, cfg.Nemesis.RecoverTimeout)
	err = mon.waitHealthy(wctx)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("chaos: cluster not ready at the start: %w", err)
	}
	endpoints := make([]string, 0, len(urls))
	for _, id := range mon.ids {
		endpoints = append(endpoints, urls[id])
	}

	start := time.Now()
	rep.Started = start
	runID := "chaos-" + strconv.FormatInt(start.UnixMilli(), 36)
	wl := newWorkload(cfg.Workload, endpoints, cfg.Seed, runID)
	wl.creds = creds
	nem := &nemesis{cfg: cfg.Nemesis, target: target, sched: NewSchedule(cfg.Seed, weights), mon: mon, log: log}
	if cfg.Leases.on() {
		if nem.leases, err = startLeaseWorkload(cfg.Leases, dir, endpoints, runID, creds, log); err != nil {
			return nil, err
		}
		defer nem.leases.stop(context.WithoutCancel(ctx)) // on an early return; stopping twice is harmless
	}
	if cfg.Consumers.on() {
		if nem.consumers, err = startConsumerWorkload(cfg.Consumers, dir, endpoints, runID, wl.keyPrefixes(), creds, log); err != nil {
			return nil, err
		}
		defer nem.consumers.stop(context.WithoutCancel(ctx)) // on an early return; stopping twice is harmless
	}

	monCtx, stopMon := context.WithCancel(ctx)
	var bg sync.WaitGroup
	bg.Go(func() { mon.run(monCtx) })
	if cfg.Progress != nil {
		bg.Go(func() { progress(monCtx, cfg.Progress, start, wl, nem, mon) })
	}

	issue, stopIssue := context.WithTimeout(ctx, cfg.Duration)
	resolve, stopResolve := context.WithCancel(ctx)
	nemDone := make(chan struct{})
	go func() {
		nem.run(issue)
		close(nemDone)
	}()
	wlDone := make(chan struct{})
	go func() {
		wl.run(issue, ctx, resolve)
		close(wlDone)
	}()
	select {
	case <-issue.Done():
	case <-nemDone:
		if cfg.Nemesis.MaxFaults > 0 {
			sleepCtx(issue, cfg.Nemesis.Interval) // a quiet tail after the last fault
		}
	}
	stopIssue()
	<-nemDone
	if nem.leases != nil {
		nem.leases.stop(context.WithoutCancel(ctx))
	}
	log.Info("clients stopping", "ops", wl.ops.Load())
	resolveTimer := time.AfterFunc(cfg.ResolveTimeout, stopResolve)
	<-wlDone
	resolveTimer.Stop()
	stopResolve()
	if ctx.Err() != nil {
		stopMon()
		bg.Wait()
		return nil, fmt.Errorf("chaos: interrupted after %v: %w", time.Since(start).Round(time.Second), ctx.Err())
	}

	// A leader change on the idle cluster: it must become ready with no write
	// after it.
	if !nem.idleFault(ctx, weights) {
		log.Info("no idle leader change: the run's faults include none of", "faults", faultNames(idleFaults))
	}

	// Settle: the cluster whole, every node caught up, nothing parked.
	settleCtx, cancel := context.WithTimeout(ctx, cfg.ResolveTimeout)
	if err := mon.waitHealthy(settleCtx); err != nil {
		log.Warn("cluster not healthy at the end", "err", err)
	}
	upTo, err := mon.waitSettled(settleCtx)
	cancel()
	if err != nil {
		log.Warn("cluster did not settle", "err", err)
	}
	// The 202s that the resolvers gave up on get one more bounded try, now.
	finalResolve(ctx, wl, cfg.ResolveTimeout/2)
	if upTo == 0 {
		upTo = ^uint64(0) >> 1
	}
	logs := map[string][]wire.LogEntry{}
	var logErrs []error
	for _, id := range mon.ids {
		l, err := mon.readLog(ctx, id, upTo)
		if err != nil {
			logErrs = append(logErrs, err)
			continue
		}
		logs[id] = l
	}
	stopMon()
	bg.Wait()
	if cfg.Progress != nil {
		fmt.Fprintln(cfg.Progress)
	}

	ops := wl.hist.Snapshot()
	_, ref := ReferenceLog(logs)
	FillFromLog(ops, ref)
	rep.Duration = time.Since(start)
	rep.Counts = countOps(ops)
	rep.Faults = nem.Events()
	for _, f := range rep.Faults {
		rep.LeaderKills += f.LeaderKills
		if f.PowerLoss != nil {
			rep.PowerLosses++
		}
		rep.NotRestarted += len(f.NotRestarted)
	}
	rep.FaultsConfigured, rep.FaultsNeverInjected = neverInjected(cfg.Nemesis.Faults, rep.Faults)
	rep.FaultStats = FaultSummary(ops, rep.Faults)
	rep.Leaders = mon.Timeline()
	rep.Series = series(ops, start, rep.Duration)

	identical := CheckLogsIdentical(logs)
	for _, err := range logErrs {
		identical.Pass = false
		identical.Evidence = append(identical.Evidence, err.Error())
	}
	rep.Checks = []CheckResult{
		CheckNoLostWrites(ops, ref),
		CheckPendingResolved(ops),
		CheckNoDuplicates(logs),
		identical,
		CheckLinearizable(ops, start, cfg.CheckTimeout, dir),
		CheckAvailability(ops, rep.Faults),
		CheckRestarts(rep.Faults),
	}
	if nem.leases != nil {
		var lc CheckResult
		rep.Leases, lc = nem.leases.finish(ref, rep.Faults)
		rep.Checks = append(rep.Checks, lc)
	}
	if nem.consumers != nil {
		var cc CheckResult
		rep.Consumers, cc = nem.consumers.finish(ctx, ref, rep.Faults, cfg.ResolveTimeout)
		rep.Checks = append(rep.Checks, cc)
	}
	if cfg.RequireAllFaults {
		rep.Checks = append(rep.Checks, CheckAllFaults(rep.FaultsConfigured, rep.FaultsNeverInjected))
	}
	rep.number()
	return rep, nil
}

// finalResolve polls the still unresolved 202s, several at once, until all
// resolved or d has passed.
func finalResolve(ctx context.Context, wl *workload, d time.Duration) {
	ops := wl.unresolved()
	if len(ops) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	c := client.NewClient(wl.creds.apply(client.ClientConfig{Endpoints: wl.endpoints, Timeout: resolveWait + 5*time.Second}))
	work := make(chan *Op)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for op := range work {
				wl.resolve(ctx, c, op)
			}
		})
	}
	for _, op := range ops {
		work <- op
	}
	close(work)
	wg.Wait()
}

// discover maps each target to the ID of the node that serves it.
func discover(ctx context.Context, targets []string, creds Credentials) (map[string]string, error) {
	c := client.NewClient(creds.apply(client.ClientConfig{}))
	urls := map[string]string{}
	for _, t := range targets {
		t = strings.TrimRight(t, "/")
		st, err := c.ClusterFrom(ctx, t)
		if err != nil {
			return nil, fmt.Errorf("chaos: ask %s who it is: %w", t, err)
		}
		if _, dup := urls[st.ID]; dup {
			return nil, fmt.Errorf("chaos: two targets are node %s", st.ID)
		}
		urls[st.ID] = t
	}
	return urls, nil
}

// startLocal launches Redis (when configured), the fault proxies and three
// txlogd nodes on fixed loopback HTTP ports under cfg.Dir/cluster.
func startLocal(ctx context.Context, cfg Config) (*localTarget, error) {
	lt := &localTarget{net: NewNetwork(cfg.Logger)}
	if hasFault(cfg.Nemesis.Faults, FaultPowerLoss) {
		disks, err := mountDisks(filepath.Join(cfg.Dir, "cluster"), launcher.DefaultNodes, cfg)
		if err != nil {
			lt.net.Close()
			return nil, err
		}
		lt.disks = disks
	}
	// The nodes and Redis are killed and started again on their ports: on an
	// address of their own, nothing else takes those ports meanwhile.
	host := launcher.PrivateLoopback()
	if cfg.RedisBin != "" {
		r, err := launcher.StartRedis(ctx, launcher.RedisConfig{Bin: cfg.RedisBin, Dir: filepath.Join(cfg.Dir, "redis"), Host: host, Logger: cfg.Logger})
		if err != nil {
			lt.close(ctx)
			return nil, err
		}
		lt.redis = r
	}
	httpBase, err := launcher.FreeRange(host, launcher.DefaultNodes)
	if err != nil {
		lt.close(ctx)
		return nil, err
	}
	extra := []string{"--log-level=info"}
	if lt.redis != nil {
		extra = append(extra, "--redis-addr="+lt.redis.Addr())
	}
	var secure *launcher.SecureConfig
	if cfg.TLS {
		secure = &launcher.SecureConfig{MutualTLS: true}
	}
	lt.c, err = launcher.StartCluster(ctx, launcher.ClusterConfig{
		Secure:       secure,
		Bin:          cfg.Bin,
		Dir:          filepath.Join(cfg.Dir, "cluster"),
		Host:         host,
		HTTPBasePort: httpBase,
		ExtraArgs:    extra,
		NodeArgs:     lt.net.DialArgs,
		Logger:       cfg.Logger,
	})
	if err != nil {
		lt.close(ctx)
		return nil, fmt.Errorf("chaos: %w", err)
	}
	return lt, nil
}

// close stops the nodes, then the proxies, Redis and the nodes' lazyfs mounts.
func (t *localTarget) close(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if t.c != nil {
		t.net.Heal()
		t.c.Close(ctx)
	}
	t.net.Close()
	if t.redis != nil {
		t.redis.Stop(ctx)
	}
	if t.disks != nil {
		if t.c != nil {
			for _, p := range t.c.Nodes() {
				p.Kill() // a node that would not stop must not hold its mount
			}
		}
		closeDisks(t.disks)
	}
}

// progress writes a status line every second until ctx ends.
func progress(ctx context.Context, w io.Writer, start time.Time, wl *workload, nem *nemesis, mon *monitor) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	tty := procstat.IsTerminal(w)
	n := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n++
		cur := mon.current()
		leader := cur.Leader
		if leader == "" {
			leader = "none"
		}
		events := nem.Events()
		last := ""
		if len(events) > 0 {
			last = ", last " + string(events[len(events)-1].Kind)
		}
		line := fmt.Sprintf("%v  ops %d  errors %d  indeterminate %d  leader %s (term %d)  faults %d%s",
			time.Since(start).Round(time.Second), wl.ops.Load(), wl.errs.Load(), wl.unknown.Load(), leader, cur.Term, len(events), last)
		switch {
		case tty:
			fmt.Fprintf(w, "\r\033[K%s", line)
		case n%10 == 0:
			fmt.Fprintln(w, line)
		}
	}
}
