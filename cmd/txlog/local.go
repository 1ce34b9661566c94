package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/txlog/txlog/launcher"
)

const localSynopsis = `[flags] [-- TXLOGD-FLAGS...]

Runs a cluster of txlogd processes on loopback, with node nI's data in DIR/nI
and its log in DIR/nI.log, until Ctrl-C or SIGTERM; then it stops the nodes,
followers first and the leader last. Run it again on the same DIR to resume the
same cluster (with the same ports). Flags after "--" go to every txlogd.

txlogd is the --txlogd binary, else the one next to txlog, else the one on PATH,
else txlog builds it into DIR/bin (this needs the txlog source tree as the
working directory, as with 'go run ./cmd/txlog local').

With --tls the cluster runs with TLS and auth everywhere: a throwaway CA and
certificates in DIR/tls (made anew at every start), https on the HTTP ports,
mutual TLS between the nodes, and an auth file (DIR/tls/auth) with an admin
token that is printed once, with the commands to use it; --mtls also makes
the nodes require the client certificate in DIR/tls.`

// Timeouts of txlog local.
const (
	localLeaderTimeout = time.Minute      // for the first leader
	localStopTimeout   = 30 * time.Second // for stopping all nodes
)

func (c *cli) local(ctx context.Context, args []string) error {
	cmd := c.command("local", localSynopsis)
	dir := cmd.String("dir", "data", "directory of the nodes' data and logs")
	nodes := cmd.Int("nodes", 3, "number of nodes")
	httpBase := cmd.Int("http-base-port", 8081, "HTTP port of n1, n2 gets the next one, and so on; 0 picks free ports")
	raftBase := cmd.Int("raft-base-port", 7101, "Raft port of n1, n2 gets the next one, and so on; 0 picks free ports (such a cluster cannot be resumed)")
	txlogd := cmd.String("txlogd", "", "txlogd binary (default: next to txlog, else on PATH, else built)")
	noRedis := cmd.Bool("no-redis", false, "do not start a local redis-server even when one is on PATH")
	secure := cmd.Bool("tls", false, "TLS and auth everywhere: a throwaway CA in DIR/tls, https, peer TLS, an admin token printed once")
	mutual := cmd.Bool("mtls", false, "with --tls (implied): the nodes also require a client certificate signed by the CA")
	pos, extra, err := cmd.parseSplit(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("local takes no arguments, got %q (txlogd flags go after --)", pos)
	}
	cfg := launcher.ClusterConfig{
		Dir:          *dir,
		Nodes:        *nodes,
		HTTPBasePort: *httpBase,
		RaftBasePort: *raftBase,
		ExtraArgs:    extra,
		StopTimeout:  localStopTimeout,
		Logger:       slog.New(slog.NewJSONHandler(c.stderr, nil)).With("cmd", "txlog local"),
	}
	if *secure || *mutual {
		cfg.Secure = &launcher.SecureConfig{MutualTLS: *mutual}
	}
	if *nodes < 1 {
		return usagef("--nodes %d: want at least 1", *nodes)
	}
	check := cfg
	check.Bin = "txlogd" // found below; check the rest before building anything
	if err := check.Validate(); err != nil {
		return usagef("%v", err)
	}

	exeDir := ""
	if exe, err := os.Executable(); err == nil {
		exeDir = filepath.Dir(exe)
	}
	cfg.Bin, err = findTxlogd(ctx, *txlogd, exeDir, filepath.Join(*dir, "bin"), c.stderr)
	if err != nil {
		return err
	}

	depArgs, stopDeps, err := startLocalDeps(ctx, *dir, cfg.Logger, c.stdout, *noRedis)
	if err != nil {
		return err
	}
	defer stopDeps(context.WithoutCancel(ctx))
	cfg.ExtraArgs = append(depArgs, cfg.ExtraArgs...)

	fmt.Fprintf(c.stdout, "starting %d txlogd nodes (%s) in %s\n", cfg.Nodes, cfg.Bin, cfg.Dir)
	cl, err := launcher.StartCluster(ctx, cfg)
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	// Stop the nodes whatever happens next, with a time of its own: ctx is done
	// when the user asked us to stop.
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), localStopTimeout+5*time.Second)
		defer cancel()
		fmt.Fprintln(c.stdout, "stopping the nodes, followers first, the leader last")
		if err := cl.Close(stopCtx); err != nil {
			fmt.Fprintf(c.stderr, "txlog local: stop: %v\n", err)
			return
		}
		fmt.Fprintln(c.stdout, "stopped")
	}()

	leaderCtx, cancel := context.WithTimeout(ctx, localLeaderTimeout)
	leader, err := cl.Leader(leaderCtx)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil // asked to stop before a leader was elected
		}
		return fmt.Errorf("local: %w\n%s", err, logTails(cl))
	}
	if err := printLocal(c.stdout, cl, leader); err != nil {
		return err
	}

	// Report a node that exits on its own while we wait for Ctrl-C.
	var wg sync.WaitGroup
	for _, p := range cl.Nodes() {
		wg.Go(func() {
			err := p.Wait(ctx)
			if ctx.Err() == nil {
				fmt.Fprintf(c.stderr, "txlog local: node %s exited (%v); its log is %s\n", p.ID(), err, p.LogPath())
			}
		})
	}
	<-ctx.Done()
	wg.Wait()
	return nil
}

// startLocalDeps starts what the nodes need besides each other, before they
// start, and returns the txlogd flags that point them at it and a function that
// stops it after the nodes: a redis-server for parking during failovers, when
// one is on PATH (data in DIR/redis, append-only with appendfsync always, so a
// parked write acknowledged with 202 survives a Redis crash). Without it the
// nodes park in their intake WALs alone, and it says so.
func startLocalDeps(ctx context.Context, dir string, log *slog.Logger, out io.Writer, noRedis bool) (args []string, stop func(context.Context) error, err error) {
	none := func(context.Context) error { return nil }
	if noRedis {
		fmt.Fprintln(out, "redis: off (--no-redis): parking uses each node's intake WAL alone")
		return nil, none, nil
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		fmt.Fprintln(out, "redis: redis-server is not on PATH: parking uses each node's intake WAL alone (apt-get install redis-server to add it)")
		return nil, none, nil
	}
	// The start is bounded: a redis-server that never answers must not hold
	// up the nodes.
	startCtx, cancel := context.WithTimeout(ctx, redisStartTimeout)
	defer cancel()
	r, err := launcher.StartRedis(startCtx, launcher.RedisConfig{Bin: bin, Dir: dir, DataDir: filepath.Join(dir, "redis"), Logger: log})
	if err != nil {
		return nil, nil, fmt.Errorf("redis: %w", err)
	}
	fmt.Fprintf(out, "redis: %s (data %s, log %s)\n", r.Addr(), r.DataDir(), r.LogPath())
	return []string{"--redis-addr=" + r.Addr()}, r.Stop, nil
}

// redisStartTimeout bounds the wait for the local redis-server to answer.
const redisStartTimeout = 10 * time.Second

// findTxlogd returns the txlogd to run: explicit when set, else the one in exeDir
// (next to txlog), else the one on PATH, else one built into buildDir.
func findTxlogd(ctx context.Context, explicit, exeDir, buildDir string, stderr io.Writer) (string, error) {
	if explicit != "" {
		if !isExecutable(explicit) {
			return "", fmt.Errorf("--txlogd %s: not an executable file", explicit)
		}
		return explicit, nil
	}
	if exeDir != "" {
		if p := filepath.Join(exeDir, "txlogd"); isExecutable(p) {
			return p, nil
		}
	}
	if p, err := exec.LookPath("txlogd"); err == nil {
		return p, nil
	}
	fmt.Fprintf(stderr, "txlogd is neither next to txlog nor on PATH: building it into %s\n", buildDir)
	p, err := launcher.BuildBinaries(ctx, buildDir)
	if err != nil {
		return "", fmt.Errorf("%w (run from the txlog source tree, or pass --txlogd)", err)
	}
	return p, nil
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// printLocal tells where each node listens and how to talk to the cluster.
func printLocal(w io.Writer, cl *launcher.Cluster, leader string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tROLE\tHTTP\tRAFT\tDATA\tLOG")
	for _, p := range cl.Nodes() {
		role := "follower"
		if p.ID() == leader {
			role = "leader"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", p.ID(), role, cl.URL(p.ID()), cl.RaftAddr(p.ID()), p.DataDir(), p.LogPath())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	urls := cl.HTTPAddrs()
	u := cl.URL(leader)
	targets := strings.Join(urls, ",")
	if sec := cl.Security(); sec != nil {
		return printSecureLocal(w, sec, u, targets)
	}
	txlogCmd := "txlog"
	if targets != defaultTargets {
		txlogCmd = "TXLOG_TARGETS=" + targets + " txlog"
	}
	_, err := fmt.Fprintf(w, `
Try:
  curl -s -X POST %[1]s/v1/tx -d '{"ops":[{"op":"put","key":"greeting","value":"hello"}]}'
  curl -s %[1]s/v1/kv/greeting
  %[2]s status

Ctrl-C stops the cluster.
`, u, txlogCmd)
	return err
}

// printSecureLocal tells how to reach a secured cluster, whose leader is at
// u: the admin token, once (only its hash is on disk), and the files.
func printSecureLocal(w io.Writer, sec *launcher.Security, u, targets string) error {
	env := fmt.Sprintf("export %s=%s %s=%s %s=%s", targetsEnv, targets, caCertEnv, sec.CAFile, tokenEnv, sec.AdminToken)
	curlCert := ""
	if sec.Mutual {
		env += fmt.Sprintf(" %s=%s %s=%s", certEnv, sec.ClientCertFile, keyEnv, sec.ClientKeyFile)
		curlCert = fmt.Sprintf(" --cert %s --key %s", sec.ClientCertFile, sec.ClientKeyFile)
	}
	mode := "TLS"
	if sec.Mutual {
		mode = "mutual TLS (client certificate required)"
	}
	_, err := fmt.Fprintf(w, `
Secured: %[1]s on the HTTP ports, mutual TLS between the nodes, auth on.
  CA certificate:      %[2]s
  client certificate:  %[3]s (key %[4]s)
  auth file:           %[5]s (add lines with: txlog token create --role read)
  admin token:         %[6]s
The admin token is shown only this once: only its hash is on disk. A new start
on this directory makes a new CA, new certificates and a new token.

Try:
  %[7]s
  txlog submit greeting '"hello"'
  txlog get greeting
  txlog status
  curl -s --cacert %[2]s%[8]s -H "Authorization: Bearer $%[9]s" %[10]s/v1/kv/greeting

Ctrl-C stops the cluster.
`, mode, sec.CAFile, sec.ClientCertFile, sec.ClientKeyFile, sec.AuthFile, sec.AdminToken, env, curlCert, tokenEnv, u)
	return err
}

// logTails returns the tail of every node's log, for an error message.
func logTails(cl *launcher.Cluster) string {
	var b strings.Builder
	for _, p := range cl.Nodes() {
		fmt.Fprintf(&b, "--- %s (%s) ---\n%s\n", p.ID(), p.LogPath(), p.LogTail(10))
	}
	return b.String()
}
