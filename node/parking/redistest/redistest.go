// Package redistest runs a real redis-server for tests: on a free loopback
// port, with its data in t.TempDir(), stopped in t.Cleanup. Tests of
// node/parking, node's integration tests and chaos use it to start, crash,
// pause and restart Redis.
//
// The server runs with AOF persistence and appendfsync always, as txlog
// expects in production (see docs/parking.md): an entry that Redis
// acknowledged survives Kill followed by Restart. RestartEmpty models a Redis
// that comes back without its data.
//
// If redis-server is not installed, Start skips the test, or fails it when the
// environment variable CI is set. redistest imports nothing from txlog.
package redistest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Binary is the redis-server executable that Start runs, looked up in PATH.
const Binary = "redis-server"

// How long Start and Restart wait for the server to answer PING, and Stop for
// it to exit after SIGTERM before it is killed.
const (
	StartTimeout = 10 * time.Second
	StopTimeout  = 10 * time.Second
)

// Server is a redis-server process started by Start. Its methods must be
// called from one goroutine at a time (normally the test's).
type Server struct {
	// Addr is the server's host:port on 127.0.0.1. It does not change across
	// restarts.
	Addr string
	// Dir is the server's data directory (the AOF lives under it). Its
	// server.log holds the output of every run.
	Dir string

	t    testing.TB
	port int
	proc *process // nil while stopped
}

// process is one run of redis-server.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd.Wait returns
}

// Start starts a redis-server on a free loopback port, waits until it answers
// PING, and stops it in t.Cleanup. It skips t (fails it if $CI is set) when
// redis-server is not installed.
func Start(t testing.TB) *Server {
	t.Helper()
	if _, err := exec.LookPath(Binary); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("redistest: %s not found in PATH, and CI is set: install it (Debian package redis-server)", Binary)
		}
		t.Skipf("redistest: %s not found in PATH; install it (Debian package redis-server) to run this test", Binary)
	}
	s := &Server{Dir: t.TempDir(), t: t}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			s.logTail()
		}
	})
	// The port is free when we pick it but may be taken before redis-server
	// binds it; then pick another.
	var err error
	for range 3 {
		if s.port, err = freePort(); err != nil {
			continue
		}
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
		if err = s.start(); err == nil {
			return s
		}
	}
	t.Fatalf("redistest: start %s: %v", Binary, err)
	return nil
}

// Stop shuts the server down with SIGTERM, which makes Redis flush and fsync
// its AOF, and waits for it to exit (killing it after StopTimeout). Stopping
// a stopped server does nothing.
func (s *Server) Stop() {
	s.t.Helper()
	if s.proc == nil {
		return
	}
	s.signal(syscall.SIGCONT) // a paused server cannot handle SIGTERM
	s.signal(syscall.SIGTERM)
	select {
	case <-s.proc.exited:
	case <-time.After(StopTimeout):
		s.t.Logf("redistest: %s did not exit %v after SIGTERM; killing it", s.Addr, StopTimeout)
		s.signal(syscall.SIGKILL)
		<-s.proc.exited
	}
	s.proc = nil
}

// Kill crashes the server with SIGKILL and waits for it to exit: what Redis
// acknowledged is on disk (appendfsync always), nothing else. Killing a
// stopped server does nothing.
func (s *Server) Kill() {
	s.t.Helper()
	if s.proc == nil {
		return
	}
	s.signal(syscall.SIGKILL)
	<-s.proc.exited
	s.proc = nil
}

// Pause freezes the server with SIGSTOP: connections stay open and commands
// hang, as with a Redis that is overloaded or cut off. Resume, Stop, Kill or
// the cleanup undo it.
func (s *Server) Pause() {
	s.t.Helper()
	s.signal(syscall.SIGSTOP)
}

// Resume undoes Pause with SIGCONT.
func (s *Server) Resume() {
	s.t.Helper()
	s.signal(syscall.SIGCONT)
}

// Restart stops the server if it runs (SIGTERM, as Stop) and starts it again
// on the same port with the same data directory, so it reloads its AOF.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		s.t.Fatalf("redistest: restart %s: %v", s.Addr, err)
	}
}

// RestartEmpty stops the server if it runs, deletes its data, and starts it
// again on the same port: a Redis that comes back empty (lost disk, new
// host, FLUSHALL).
func (s *Server) RestartEmpty() {
	s.t.Helper()
	s.Stop()
	entries, err := os.ReadDir(s.Dir)
	if err != nil {
		s.t.Fatalf("redistest: %v", err)
	}
	for _, e := range entries {
		if e.Name() == logName {
			continue
		}
		if err := os.RemoveAll(filepath.Join(s.Dir, e.Name())); err != nil {
			s.t.Fatalf("redistest: wipe %s: %v", s.Dir, err)
		}
	}
	if err := s.start(); err != nil {
		s.t.Fatalf("redistest: restart %s empty: %v", s.Addr, err)
	}
}

// Running reports whether the server process is running (paused counts as
// running).
func (s *Server) Running() bool {
	if s.proc == nil {
		return false
	}
	select {
	case <-s.proc.exited:
		return false
	default:
		return true
	}
}

const logName = "server.log"

// start runs redis-server on s.port and waits until it answers PING.
func (s *Server) start() error {
	log, err := os.OpenFile(filepath.Join(s.Dir, logName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close() // the child has its own descriptor
	cmd := exec.Command(Binary,
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "yes",
		"--appendfsync", "always",
		"--dir", s.Dir,
		"--daemonize", "no",
	)
	cmd.Stdout = log
	cmd.Stderr = log
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return err
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	if err := waitPing(s.Addr, p.exited); err != nil {
		_ = cmd.Process.Kill()
		<-p.exited
		return err
	}
	s.proc = p
	return nil
}

// signal sends sig to the running server, if any: only to the process this
// Server started, by its PID.
func (s *Server) signal(sig syscall.Signal) {
	if s.proc == nil {
		return
	}
	if err := s.proc.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		s.t.Logf("redistest: signal %v to %s: %v", sig, s.Addr, err)
	}
}

// waitPing polls addr with PING until it answers +PONG, the process exits, or
// StartTimeout passes.
func waitPing(addr string, exited <-chan struct{}) error {
	deadline := time.Now().Add(StartTimeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var err error
	for {
		if err = ping(addr); err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("%s exited before answering PING (see %s)", Binary, logName)
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no PONG from %s within %v: %w", addr, StartTimeout, err)
		}
	}
}

// ping sends one inline PING and expects +PONG. A server still loading its
// AOF answers -LOADING, which is not ready.
func ping(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// logTail logs the last lines of the server's output.
func (s *Server) logTail() {
	b, err := os.ReadFile(filepath.Join(s.Dir, logName))
	if err != nil {
		return
	}
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	lines = lines[max(0, len(lines)-30):]
	s.t.Logf("redistest: last lines of %s's log:\n%s", s.Addr, bytes.Join(lines, []byte("\n")))
}
