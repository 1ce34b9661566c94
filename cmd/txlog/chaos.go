package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/txlog/txlog/chaos"
	"github.com/txlog/txlog/chaos/lazyfs"
	"github.com/txlog/txlog/launcher"
)

const chaosSynopsis = `[flags]

Runs clients against a txlog cluster while a nemesis kills, pauses and cuts off
its nodes, then checks that nothing was lost: every 200 is in the log, every 202
resolved, nothing twice, the same log on every node, a linearizable history.
It prints a summary, writes --report-json and --report-html, and exits with
status 1 when a checker failed. --require-all-faults adds a checker that fails
when a fault kind of --faults was never injected.

Without --targets it launches a local three-node cluster (txlogd found as for
'txlog local') with fault proxies on its Raft links and, when redis-server is on
PATH, a Redis of its own. With --targets it drives an existing cluster, and
faults run the --*-cmd templates through 'sh -c' with {id} replaced by the
node's ID ({mode} for --partition-cmd: both or inbound). See docs/chaos.md.

--faults powerloss (Linux, as root with /dev/fuse) serves each local node's
data dir through a FUSE file system that keeps unsynced writes in memory, and
cuts the power of all nodes, the leader, or the leader and a follower: what
was not fsynced is dropped (or, torn, partly written back), then the nodes are
SIGKILLed and restarted. --powerloss-dirs says which fsync makes a directory
entry durable: posix (its directory's) or journal (any, as ext4's journal).

--leases N (default 2; 0 leaves it out) adds the lease workload: --contenders
processes (this txlog, run as a hidden 'chaos-contender' command) campaign
for the leases and make fenced writes while they hold one, and the
pause-holder fault SIGSTOPs a holder past the --lease-ttl. The lease checker
holds the history to the applied log: tokens only grow, no fenced write
applied under a token that is not current, one holder between two grants,
a paused holder replaced in time and its late writes refused.

--consumers (on by default; --consumers=false leaves it out) adds the consumer
workload: two consumer processes of one group (this txlog, run as a hidden
'chaos-consumer' command) project the clients' committed writes with the
exactly-once helper, and the pause-consumer fault SIGSTOPs the one that holds
the group's lease past its TTL (--lease-ttl). The consumer checker holds the
projection and the group's offset to the applied log: every committed write
projected exactly once, the offset never back, no fenced-out write applied.

--tls runs the local cluster secured, as 'txlog local --mtls' does: https
with client certificates, mutual TLS between the nodes, an auth file; every
client of the run (the workload, the checks' reads, the contenders, the
consumers) uses the cluster's CA, client certificate and admin token. Against
--targets, --token, --cacert, --cert and --key (TXLOG_TOKEN, TXLOG_CACERT,
TXLOG_CERT, TXLOG_KEY) are the clients' credentials; the token needs role
write.`

func (c *cli) chaos(ctx context.Context, args []string) error {
	cmd := c.command("chaos", chaosSynopsis)
	targets := cmd.String("targets", "", "base URLs of an existing cluster's nodes (default: launch a local cluster)")
	dir := cmd.String("dir", "", "directory of the local cluster and the run's files (default: a new temporary directory)")
	txlogd := cmd.String("txlogd", "", "txlogd binary of the local cluster (default: next to txlog, else on PATH, else built)")
	redisBin := cmd.String("redis-server", launcher.DefaultRedisBin, `redis-server of the local cluster; "none" runs without Redis`)
	duration := cmd.Duration("duration", chaos.DefaultDuration, "how long the clients run")
	rate := cmd.Float64("rate", chaos.DefaultRate, "operations per second, all clients together")
	clients := cmd.Int("clients", chaos.DefaultClients, "concurrent clients")
	keys := cmd.Int("keys", chaos.DefaultKeys, "keys of the blind puts")
	hotKeys := cmd.Int("hot-keys", chaos.DefaultHotKeys, "keys of the compare-and-set chains")
	acks := cmd.String("acks", chaos.DefaultAcks, "ack levels of the writes, each with an optional weight: quorum*3,all (accepted writes fsync the intake WAL on their own)")
	clientMode := cmd.String("client", chaos.ClientHTTP, "how the clients write: http (a client.Client each, POST /v1/tx) or stream (one client.Client shared by all, over its write streams)")
	seed := cmd.Uint64("seed", 0, "seed of the fault schedule and the clients (default: from the clock, printed)")
	faults := cmd.String("faults", chaos.DefaultFaults, "faults to inject, each with an optional weight: kill-leader*4,pause-leader")
	interval := cmd.Duration("fault-interval", chaos.DefaultFaultInterval, "quiet time between faults")
	hold := cmd.Duration("fault-hold", chaos.DefaultHold, "how long a pause, partition or quorum loss lasts")
	maxFaults := cmd.Int("max-faults", 0, "stop after this many faults (0: run for --duration)")
	requireAll := cmd.Bool("require-all-faults", false, "fail the run (a failed checker) when a kind in --faults was never injected")
	powerLossDirs := cmd.String("powerloss-dirs", string(lazyfs.DirsPOSIX), "with --faults powerloss: which fsync makes a directory entry durable, posix (its directory's) or journal (any fsync)")
	resolveTimeout := cmd.Duration("resolve-timeout", chaos.DefaultResolveTimeout, "bound on the wait for 202s and for the nodes to catch up at the end")
	leases := cmd.Int("leases", chaos.DefaultLeases, "leases of the lease workload (0: no lease workload, and no pause-holder)")
	contenders := cmd.Int("contenders", 0, "contender processes of the lease workload (default: two a lease)")
	leaseTTL := cmd.Duration("lease-ttl", chaos.DefaultLeaseTTL, "TTL of the lease workload's leases and of the consumer group's lease")
	consumers := cmd.Bool("consumers", true, "run the consumer workload (and pause-consumer): two consumers of one group project the writes exactly once")
	reportJSON := cmd.String("report-json", "", "write the report as JSON to this file")
	reportHTML := cmd.String("report-html", "", "write the report as a self-contained HTML page to this file")
	secure := cmd.Bool("tls", false, "run the local cluster with TLS (mutual) and auth everywhere, and every client with its credentials")
	creds := cmd.credentialFlags()
	var cmds chaos.Commands
	cmd.StringVar(&cmds.Kill, "kill-cmd", "", "with --targets: SIGKILL node {id}")
	cmd.StringVar(&cmds.Start, "start-cmd", "", "with --targets: start node {id}")
	cmd.StringVar(&cmds.Stop, "stop-cmd", "", "with --targets: stop node {id} gracefully and wait")
	cmd.StringVar(&cmds.Pause, "pause-cmd", "", "with --targets: SIGSTOP node {id}")
	cmd.StringVar(&cmds.Resume, "resume-cmd", "", "with --targets: SIGCONT node {id}")
	cmd.StringVar(&cmds.Partition, "partition-cmd", "", "with --targets: cut node {id}'s Raft traffic ({mode}: both or inbound)")
	cmd.StringVar(&cmds.Heal, "heal-cmd", "", "with --targets: undo --partition-cmd for node {id}")
	cmd.StringVar(&cmds.RedisStop, "redis-stop-cmd", "", "with --targets: stop Redis")
	cmd.StringVar(&cmds.RedisStart, "redis-start-cmd", "", "with --targets: start Redis again, empty")
	pos, err := cmd.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("chaos takes no arguments, got %q", pos)
	}
	weights, err := chaos.ParseFaults(*faults)
	if err != nil {
		return usagef("--faults: %v", err)
	}
	ackMix, err := chaos.ParseAcks(*acks)
	if err != nil {
		return usagef("--acks: %v", err)
	}
	dirs, err := lazyfs.ParseDirRule(*powerLossDirs)
	if err != nil {
		return usagef("--powerloss-dirs: %v", err)
	}
	if *leases < 0 {
		return usagef("--leases %d: want 0 or more", *leases)
	}
	if *seed == 0 {
		*seed = uint64(time.Now().UnixNano())
	}
	cfg := chaos.Config{
		Commands: cmds,
		Workload: chaos.WorkloadConfig{Clients: *clients, Rate: *rate, Keys: *keys, HotKeys: *hotKeys, Acks: ackMix, Client: *clientMode},
		Nemesis:  chaos.NemesisConfig{Faults: weights, Interval: *interval, Hold: *hold, MaxFaults: *maxFaults},
		Duration: *duration, Seed: *seed, ResolveTimeout: *resolveTimeout, RequireAllFaults: *requireAll,
		PowerLossDirs: dirs,
		Progress:      c.stderr,
		Leases:        chaos.LeaseConfig{Off: *leases == 0, Leases: *leases, Contenders: *contenders, TTL: *leaseTTL},
		Consumers:     chaos.ConsumerConfig{Off: !*consumers, TTL: *leaseTTL},
		TLS:           *secure,
	}
	if !*secure { // --tls makes its own
		cfg.Credentials = chaos.Credentials{Token: creds.token, CAFile: creds.caCert, CertFile: creds.cert, KeyFile: creds.key}
	}
	if !cfg.Leases.Off {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("chaos: the lease workload runs this program as its contenders: %w", err)
		}
		cfg.Leases.Command = []string{exe, "chaos-contender"}
	}
	if !cfg.Consumers.Off {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("chaos: the consumer workload runs this program as its consumers: %w", err)
		}
		cfg.Consumers.Command = []string{exe, "chaos-consumer"}
	}
	for _, t := range strings.Split(*targets, ",") {
		if t = strings.TrimSpace(t); t != "" {
			if !strings.Contains(t, "://") {
				t = creds.scheme() + t
			}
			cfg.Targets = append(cfg.Targets, t)
		}
	}
	if *dir == "" {
		if *dir, err = os.MkdirTemp("", "txlog-chaos-"); err != nil {
			return err
		}
	}
	cfg.Dir = *dir
	if cfg.Targets == nil {
		cfg.Bin = "txlogd" // found below; validate the rest first
	}
	if err := cfg.Validate(); err != nil {
		return usagef("%v", err)
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	logFile, err := os.OpenFile(filepath.Join(*dir, "chaos.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cfg.Logger = slog.New(slog.NewJSONHandler(logFile, nil)).With("cmd", "txlog chaos")

	if cfg.Targets == nil {
		exeDir := ""
		if exe, err := os.Executable(); err == nil {
			exeDir = filepath.Dir(exe)
		}
		if cfg.Bin, err = findTxlogd(ctx, *txlogd, exeDir, filepath.Join(*dir, "bin"), c.stderr); err != nil {
			return err
		}
		cfg.RedisBin = chaosRedis(*redisBin, c)
	}
	fmt.Fprintf(c.stderr, "txlog chaos: seed %d, files in %s\n", *seed, *dir)
	rep, err := chaos.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if err := rep.WriteSummary(c.stdout); err != nil {
		return err
	}
	if *reportJSON != "" {
		if err := rep.WriteJSON(*reportJSON); err != nil {
			return err
		}
	}
	if *reportHTML != "" {
		if err := rep.WriteHTML(*reportHTML); err != nil {
			return err
		}
	}
	if rep.Failed() {
		n := 0
		for _, ch := range rep.Checks {
			if !ch.Pass {
				n++
			}
		}
		return fmt.Errorf("chaos: %d of %d checkers failed (replay the schedule with --seed %d)", n, len(rep.Checks), *seed)
	}
	return nil
}

// chaosRedis returns the redis-server to run, or "" (after saying so) when there
// is none.
func chaosRedis(bin string, c *cli) string {
	if bin == "" || bin == "none" {
		fmt.Fprintln(c.stderr, "txlog chaos: running without Redis (--redis-server none): parking uses the intake WAL alone; redis-outage is left out")
		return ""
	}
	p, err := exec.LookPath(bin)
	if err != nil {
		fmt.Fprintf(c.stderr, "txlog chaos: %s not found (%v): running WITHOUT Redis, parking uses the intake WAL alone; redis-outage is left out\n", bin, errors.Unwrap(err))
		return ""
	}
	return p
}
