package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/chaos/procstat"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/launcher"
)

// Timeouts of the harness's own requests and of the cluster's life.
const (
	requestTimeout  = 2 * time.Second // one GET to one node
	pollInterval    = 20 * time.Millisecond
	startTimeout    = time.Minute      // first leader and readiness
	nodeStopTimeout = 30 * time.Second // each node's graceful stop
	closeTimeout    = 2 * time.Minute  // stopping the whole cluster at the end
)

// binaries returns the txlogd and txlog binaries, building with the go command
// into dir/bin those that were not given.
func binaries(ctx context.Context, txlogd, txlog, dir string, stderr io.Writer) (string, string, error) {
	build := func(given, name string) (string, error) {
		if given != "" {
			return given, nil
		}
		out := filepath.Join(dir, "bin", name)
		pkg := "github.com/txlog/txlog/cmd/" + name
		fmt.Fprintf(stderr, "scale: building %s\n", pkg)
		cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
		var msg bytes.Buffer
		cmd.Stdout, cmd.Stderr = &msg, &msg
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("go build %s: %w: %s (or give --%s)", pkg, err, strings.TrimSpace(msg.String()), name)
		}
		return out, nil
	}
	d, err := build(txlogd, "txlogd")
	if err != nil {
		return "", "", err
	}
	t, err := build(txlog, "txlog")
	return d, t, err
}

// scaler measures one cluster. It is used by one goroutine at a time.
type scaler struct {
	cfg    config
	dir    string // the run's directory; the cluster is in a directory below it
	cl     *launcher.Cluster
	client *client.Client
	out    io.Writer // the tables
	log    io.Writer // progress
}

// startScaler starts a fresh cluster in dir/sub and waits until it has a
// leader and every node is ready.
func startScaler(ctx context.Context, cfg config, dir, sub string, out, log io.Writer) (*scaler, error) {
	cl, err := launcher.StartCluster(ctx, launcher.ClusterConfig{
		Bin:         cfg.txlogd,
		Dir:         filepath.Join(dir, sub),
		ExtraArgs:   cfg.txlogdArgs,
		StopTimeout: nodeStopTimeout,
	})
	if err != nil {
		return nil, err
	}
	s := &scaler{
		cfg:    cfg,
		dir:    dir,
		cl:     cl,
		client: client.NewClient(client.ClientConfig{AttemptTimeout: requestTimeout}),
		out:    out,
		log:    log,
	}
	fmt.Fprintf(log, "scale: cluster in %s, nodes %s\n", cl.Dir(), strings.Join(cl.HTTPAddrs(), " "))
	if err := s.settle(ctx, startTimeout); err != nil {
		return nil, errors.Join(err, s.close(ctx))
	}
	return s, nil
}

// close stops the cluster, followers first.
func (s *scaler) close(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
	defer cancel()
	if err := s.cl.Close(ctx); err != nil {
		return fmt.Errorf("stop the cluster: %w", err)
	}
	return nil
}

// settle waits until the cluster agrees on a leader and every running node is
// ready (has applied what the leader committed).
func (s *scaler) settle(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if _, err := s.cl.Leader(ctx); err != nil {
		return err
	}
	return s.cl.WaitReady(ctx)
}

// status asks node id for GET /v1/cluster, once.
func (s *scaler) status(ctx context.Context, id string) (wire.ClusterStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	return s.client.ClusterFrom(ctx, s.cl.URL(id))
}

// leader waits for the agreed leader and returns its ID and status.
func (s *scaler) leader(ctx context.Context) (string, wire.ClusterStatus, error) {
	lctx, cancel := context.WithTimeout(ctx, s.cfg.catchUpTimeout)
	defer cancel()
	id, err := s.cl.Leader(lctx)
	if err != nil {
		return "", wire.ClusterStatus{}, err
	}
	st, err := s.status(ctx, id)
	if err != nil {
		return "", wire.ClusterStatus{}, fmt.Errorf("status of leader: %w", err)
	}
	return id, st, nil
}

// pids returns the process IDs of the nodes, in node order.
func (s *scaler) pids() []int {
	var ps []int
	for _, p := range s.cl.Nodes() {
		ps = append(ps, p.PID())
	}
	return ps
}

// nodesCPU returns the CPU time all nodes have used so far.
func (s *scaler) nodesCPU() (time.Duration, error) {
	var sum time.Duration
	for _, pid := range s.pids() {
		d, err := procstat.CPU(strconv.Itoa(pid))
		if err != nil {
			return 0, err
		}
		sum += d
	}
	return sum, nil
}

// checkpoints measures at every checkpoint, growing the log in between, and
// prints each row when it has it. save is called after every checkpoint.
func (s *scaler) checkpoints(ctx context.Context, rep *report, save func() error) error {
	var ids []string
	for _, p := range s.cl.Nodes() {
		ids = append(ids, p.ID())
	}
	printHeader(s.out, ids)
	for i, target := range checkpointTargets(s.cfg.total, s.cfg.step) {
		if i > 0 {
			fill, err := s.fill(ctx, target)
			if err != nil {
				return err
			}
			rep.Checkpoints[i-1].Fill = fill
		}
		cp, err := s.measure(ctx, target)
		if err != nil {
			return fmt.Errorf("checkpoint %d: %w", target, err)
		}
		rep.Checkpoints = append(rep.Checkpoints, cp)
		printCheckpoint(s.out, cp, rep.Checkpoints[0])
		if err := save(); err != nil {
			return err
		}
	}
	return nil
}

// fill grows the log to target transactions, when it is short of it, with
// batched requests over all nodes, and waits until every node applied them.
// It returns nil when there was nothing to add.
func (s *scaler) fill(ctx context.Context, target int64) (*benchResult, error) {
	_, st, err := s.leader(ctx)
	if err != nil {
		return nil, err
	}
	n := target - int64(st.CommitIndex)
	if n <= 0 {
		fmt.Fprintf(s.log, "scale: log index %d already at checkpoint %d\n", st.CommitIndex, target)
		return nil, nil
	}
	fmt.Fprintf(s.log, "scale: growing the log from %d to %d\n", st.CommitIndex, target)
	res, err := runBench(ctx, s.cfg.txlog, s.cl.HTTPAddrs(), fillFlags(s.cfg.fillClients, s.cfg.fillBatch, n)...)
	if err != nil {
		return nil, err
	}
	if err := s.settle(ctx, s.cfg.catchUpTimeout); err != nil {
		return nil, fmt.Errorf("after growing the log to %d: %w", target, err)
	}
	return &res, nil
}

// measure runs the measurement runs of a checkpoint and samples the nodes
// after them. With --reference, past the empty log, it also starts a fresh
// empty cluster and runs the same measurement on it, alternating with this
// cluster's runs, so that both see the same machine: on a shared machine the
// load moves more between checkpoints than the log size moves throughput.
func (s *scaler) measure(ctx context.Context, target int64) (cp checkpoint, err error) {
	leader, st, err := s.leader(ctx)
	if err != nil {
		return checkpoint{}, err
	}
	cp = checkpoint{Target: target, LogIndex: st.CommitIndex, Leader: leader}
	var ref *scaler
	if s.cfg.reference && target > 0 {
		sub := fmt.Sprintf("reference-%d", target)
		if ref, err = startScaler(ctx, s.cfg, s.dir, sub, io.Discard, s.log); err != nil {
			return cp, fmt.Errorf("reference cluster: %w", err)
		}
		defer func() {
			if cerr := ref.close(ctx); cerr != nil {
				err = errors.Join(err, fmt.Errorf("reference cluster: %w", cerr))
			} else if !s.cfg.keep {
				err = errors.Join(err, os.RemoveAll(filepath.Join(s.dir, sub)))
			}
		}()
	}
	flags := measureFlags(s.cfg.clients, s.cfg.warmup, s.cfg.measure)
	again := func(r benchResult, try int) bool {
		if !cp.setAside(r, try, s.cfg.retries, s.cfg.maxSteal) {
			return false
		}
		fmt.Fprintf(s.log, "scale: a run had %.1f%% steal, over %.1f%%: measured again\n", *r.MachineStealPct, s.cfg.maxSteal)
		return true
	}
	var cpu, elapsed time.Duration
	for range s.cfg.repeats {
		if ref != nil {
			for try := 0; ; try++ {
				r, err := runBench(ctx, s.cfg.txlog, ref.cl.HTTPAddrs(), flags...)
				if err != nil {
					return cp, fmt.Errorf("reference cluster: %w", err)
				}
				if !again(r, try) {
					cp.RefRuns = append(cp.RefRuns, r)
					break
				}
			}
		}
		for try := 0; ; try++ {
			// The CPU of the whole bench process's life, warm-up included: close
			// to the measured window's, and the same at every checkpoint.
			cpu0, err := s.nodesCPU()
			if err != nil {
				return cp, err
			}
			t0 := time.Now()
			r, err := runBench(ctx, s.cfg.txlog, s.cl.HTTPAddrs(), flags...)
			if err != nil {
				return cp, err
			}
			took := time.Since(t0)
			cpu1, err := s.nodesCPU()
			if err != nil {
				return cp, err
			}
			if again(r, try) {
				continue
			}
			elapsed += took
			cpu += cpu1 - cpu0
			cp.Runs = append(cp.Runs, r)
			break
		}
	}
	cp.Bench = medianRun(cp.Runs)
	if ref != nil {
		m := medianRun(cp.RefRuns)
		cp.RefBench = &m
	}
	if secs := elapsed.Seconds(); secs > 0 {
		cp.NodesCPU = cpu.Seconds() / secs
		if mean := meanTxPerSec(cp.Runs); mean > 0 {
			cp.NodesCPUPerTx = cp.NodesCPU * 1e6 / mean
		}
	}
	end, err := s.status(ctx, leader)
	if err != nil {
		return cp, err
	}
	cp.LogIndexEnd = end.CommitIndex
	cp.Nodes, err = s.sampleNodes(ctx)
	return cp, err
}

// sampleNodes reads every node's state, memory and data dir.
func (s *scaler) sampleNodes(ctx context.Context) ([]nodeSample, error) {
	var out []nodeSample
	for _, p := range s.cl.Nodes() {
		st, err := s.status(ctx, p.ID())
		if err != nil {
			return nil, err
		}
		mem, err := readMemStatus(p.PID())
		if err != nil {
			return nil, err
		}
		disk, err := dirUsage(p.DataDir())
		if err != nil {
			return nil, err
		}
		n := nodeSample{
			ID: p.ID(), PID: p.PID(), State: st.State, AppliedIndex: st.AppliedIndex,
			RSSBytes: mem.RSSBytes, HWMBytes: mem.HWMBytes, AnonBytes: mem.AnonBytes, FileBytes: mem.FileBytes,
			Disk: disk,
		}
		for _, e := range disk {
			n.DiskBytes += e.Bytes
		}
		out = append(out, n)
	}
	return out, nil
}

// others returns the IDs of the nodes other than id, in node order.
func (s *scaler) others(id string) []string {
	var ids []string
	for _, p := range s.cl.Nodes() {
		if p.ID() != id {
			ids = append(ids, p.ID())
		}
	}
	return ids
}

// urls returns the base URLs of the nodes ids.
func (s *scaler) urls(ids []string) []string {
	us := make([]string, len(ids))
	for i, id := range ids {
		us[i] = s.cl.URL(id)
	}
	return us
}
