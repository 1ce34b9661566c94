package servers

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/txlog/txlog/launcher"
)

// StopTimeout bounds the wait for each server after SIGTERM; then it gets
// SIGKILL.
const StopTimeout = 10 * time.Second

// tailLines is how many lines of each log Fail quotes.
const tailLines = 10

// Set is the server processes a program started, with their logs, in a
// directory of its own. Its methods are for one goroutine.
type Set struct {
	dir   string
	procs []*exec.Cmd
	logs  []string
}

// New makes a new directory under parent (the system's temporary directory
// when ""), named by pattern as os.MkdirTemp does, and reserves ports free
// loopback ports for the servers. On error nothing is left behind.
func New(parent, pattern string, ports int) (*Set, []int, error) {
	dir, err := os.MkdirTemp(parent, pattern)
	if err != nil {
		return nil, nil, err
	}
	s := &Set{dir: dir}
	free, err := launcher.FreePorts("127.0.0.1", ports)
	if err != nil {
		s.Close()
		return nil, nil, fmt.Errorf("reserve ports: %w", err)
	}
	return s, free, nil
}

// Dir returns the set's directory.
func (s *Set) Dir() string { return s.dir }

// Start launches bin with args, its stdout and stderr in <Dir>/<name>.log.
func (s *Set) Start(name, bin string, args ...string) error {
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

// StartEtcd starts len(ports)/2 etcd members with the binary bin, named e1,
// e2 and so on, bootstrapped together as a new cluster with the token token:
// member i serves clients on ports[i] and its peers on ports[n+i], keeps its
// data in <Dir>/e<i+1>, and gets extra as further arguments. It returns the
// members' client URLs.
func (s *Set) StartEtcd(bin, token string, ports []int, extra ...string) ([]string, error) {
	n := len(ports) / 2
	var initial, urls []string
	peerURL := func(i int) string { return "http://127.0.0.1:" + strconv.Itoa(ports[n+i]) }
	for i := range n {
		initial = append(initial, fmt.Sprintf("e%d=%s", i+1, peerURL(i)))
		urls = append(urls, "http://127.0.0.1:"+strconv.Itoa(ports[i]))
	}
	for i := range n {
		name := fmt.Sprintf("e%d", i+1)
		args := append([]string{
			"--name", name,
			"--data-dir", filepath.Join(s.dir, name),
			"--listen-client-urls", urls[i],
			"--advertise-client-urls", urls[i],
			"--listen-peer-urls", peerURL(i),
			"--initial-advertise-peer-urls", peerURL(i),
			"--initial-cluster", strings.Join(initial, ","),
			"--initial-cluster-token", token,
			"--initial-cluster-state", "new",
		}, extra...)
		if err := s.Start(name, bin, args...); err != nil {
			return nil, err
		}
	}
	return urls, nil
}

// PIDs returns the servers' process IDs, in the order of their start.
func (s *Set) PIDs() []int {
	out := make([]int, 0, len(s.procs))
	for _, p := range s.procs {
		out = append(out, p.Process.Pid)
	}
	return out
}

// Close stops each server it started, by its PID, with SIGTERM (SIGKILL after
// StopTimeout), and removes the directory.
func (s *Set) Close() {
	for _, p := range s.procs {
		p.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range s.procs {
		done := make(chan struct{})
		go func() { p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(StopTimeout):
			p.Process.Kill()
			<-done
		}
	}
	os.RemoveAll(s.dir)
}

// Fail is for a cluster that did not come up: it closes s and returns err
// wrapped as "what: err", followed by the last lines of every server's log.
func (s *Set) Fail(what string, err error) error {
	tails := s.Tails()
	s.Close()
	return fmt.Errorf("%s: %w\n%s", what, err, tails)
}

// Tails returns the last lines of every server's log, each log under a line
// "--- <file name>".
func (s *Set) Tails() string {
	var b strings.Builder
	for _, path := range s.logs {
		data, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintf(&b, "--- %s: %v\n", filepath.Base(path), err)
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		fmt.Fprintf(&b, "--- %s\n%s\n", filepath.Base(path), strings.Join(lines[max(0, len(lines)-tailLines):], "\n"))
	}
	return b.String()
}
