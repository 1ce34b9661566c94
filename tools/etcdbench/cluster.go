package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/txlog/txlog/launcher"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Timeouts of the local cluster.
const (
	startTimeout = time.Minute      // until every member knows the leader
	stopTimeout  = 10 * time.Second // for each member after SIGTERM
)

// cluster is a three-member etcd cluster on loopback, bootstrapped together,
// with default settings (fsync on) and its data in a directory of its own.
type cluster struct {
	dir        string
	procs      []*exec.Cmd
	logs       []*os.File
	clientURLs []string
}

// startCluster starts three etcd members with the binary bin in a new
// directory under parent and waits until each of them knows the leader. On
// error it stops what it started.
func startCluster(ctx context.Context, bin, parent string) (*cluster, error) {
	dir, err := os.MkdirTemp(parent, "etcd-bench-")
	if err != nil {
		return nil, err
	}
	c := &cluster{dir: dir}
	ports, err := launcher.FreePorts("127.0.0.1", 6)
	if err != nil {
		c.close()
		return nil, fmt.Errorf("reserve ports: %w", err)
	}
	const n = 3
	var initial []string
	peerURL := func(i int) string { return "http://127.0.0.1:" + strconv.Itoa(ports[n+i]) }
	for i := range n {
		initial = append(initial, fmt.Sprintf("e%d=%s", i+1, peerURL(i)))
		c.clientURLs = append(c.clientURLs, "http://127.0.0.1:"+strconv.Itoa(ports[i]))
	}
	for i := range n {
		name := fmt.Sprintf("e%d", i+1)
		log, err := os.Create(filepath.Join(dir, name+".log"))
		if err != nil {
			c.close()
			return nil, err
		}
		c.logs = append(c.logs, log)
		cmd := exec.Command(bin,
			"--name", name,
			"--data-dir", filepath.Join(dir, name),
			"--listen-client-urls", c.clientURLs[i],
			"--advertise-client-urls", c.clientURLs[i],
			"--listen-peer-urls", peerURL(i),
			"--initial-advertise-peer-urls", peerURL(i),
			"--initial-cluster", strings.Join(initial, ","),
			"--initial-cluster-token", "etcdbench",
			"--initial-cluster-state", "new",
			"--logger", "zap",
			"--log-outputs", "stderr",
		)
		cmd.Stdout, cmd.Stderr = log, log
		cmd.SysProcAttr = launcher.SysProcAttr()
		if err := cmd.Start(); err != nil {
			c.close()
			return nil, fmt.Errorf("start %s: %w", bin, err)
		}
		c.procs = append(c.procs, cmd)
	}
	readyCtx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := c.waitLeader(readyCtx); err != nil {
		tails := c.logTails()
		c.close()
		return nil, fmt.Errorf("etcd cluster: %w\n%s", err, tails)
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
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		err := c.agree(ctx, cli)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for a leader: %w; last: %w", ctx.Err(), err)
		case <-tick.C:
		}
	}
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

// pids returns the process IDs of the members.
func (c *cluster) pids() []int {
	var out []int
	for _, p := range c.procs {
		out = append(out, p.Process.Pid)
	}
	return out
}

// close stops the members with SIGTERM (SIGKILL after stopTimeout) and
// removes the directory.
func (c *cluster) close() {
	for _, p := range c.procs {
		p.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range c.procs {
		done := make(chan struct{})
		go func() { p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(stopTimeout):
			p.Process.Kill()
			<-done
		}
	}
	for _, l := range c.logs {
		l.Close()
	}
	os.RemoveAll(c.dir)
}

// logTails returns the last lines of every member's log.
func (c *cluster) logTails() string {
	var b strings.Builder
	for _, l := range c.logs {
		data, err := os.ReadFile(l.Name())
		if err != nil {
			fmt.Fprintf(&b, "--- %s: %v\n", l.Name(), err)
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		fmt.Fprintf(&b, "--- %s\n%s\n", filepath.Base(l.Name()), strings.Join(lines[max(0, len(lines)-10):], "\n"))
	}
	return b.String()
}
