// Package redistest runs a real redis-server for tests: on a free loopback
// port, with its data in t.TempDir(), stopped in t.Cleanup. Tests of
// node/parking and the process-level tests (systemtest) use it to start,
// crash, pause and restart Redis. It is a thin test wrapper around
// launcher.Redis, the one Redis launcher, so the server runs as every other
// child of the launcher does (its own process group, killed when the test
// binary dies).
//
// The server runs with AOF persistence and appendfsync always, as txlog
// expects in production (see docs/parking.md): an entry that Redis
// acknowledged survives Kill followed by Restart. RestartEmpty models a Redis
// that comes back without its data.
//
// If redis-server is not installed, Start skips the test, or fails it when the
// environment variable CI is set. redistest imports only launcher from txlog.
package redistest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/txlog/txlog/launcher"
)

// Binary is the redis-server executable that Start runs, looked up in PATH.
const Binary = launcher.DefaultRedisBin

// How long Start and Restart wait for the server to answer PING, and Stop for
// it to exit after SIGTERM before it is killed.
const (
	StartTimeout = 10 * time.Second
	StopTimeout  = 10 * time.Second
)

// logTailLines is how many lines of the server's log a failed test prints.
const logTailLines = 30

// Server is a redis-server process started by Start. Its methods must be
// called from one goroutine at a time (normally the test's).
type Server struct {
	// Addr is the server's host:port on 127.0.0.1. It does not change across
	// restarts.
	Addr string
	// Dir holds the server's data (the AOF, under Dir/data) and its log
	// Dir/redis.log, which holds the output of every run.
	Dir string

	t testing.TB
	r *launcher.Redis
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
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	r, err := launcher.StartRedis(ctx, launcher.RedisConfig{Bin: Binary, Dir: s.Dir})
	if err != nil {
		t.Fatalf("redistest: start %s: %v", Binary, err)
	}
	s.r, s.Addr = r, r.Addr()
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			s.logTail()
		}
	})
	return s
}

// Stop shuts the server down with SIGTERM, which makes Redis flush and fsync
// its AOF, and waits for it to exit (killing it after StopTimeout). Stopping
// a stopped server does nothing.
func (s *Server) Stop() {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), StopTimeout)
	defer cancel()
	if err := s.r.Stop(ctx); err != nil {
		s.t.Logf("redistest: %v", err)
	}
}

// Kill crashes the server with SIGKILL and waits for it to exit: what Redis
// acknowledged is on disk (appendfsync always), nothing else. Killing a
// stopped server does nothing.
func (s *Server) Kill() {
	s.t.Helper()
	if err := s.r.Kill(); err != nil {
		s.t.Logf("redistest: %v", err)
	}
}

// Pause freezes the server with SIGSTOP: connections stay open and commands
// hang, as with a Redis that is overloaded or cut off. Resume, Stop, Kill or
// the cleanup undo it.
func (s *Server) Pause() {
	s.t.Helper()
	s.signalErr(s.r.Pause())
}

// Resume undoes Pause with SIGCONT.
func (s *Server) Resume() {
	s.t.Helper()
	s.signalErr(s.r.Resume())
}

// signalErr logs the error of Pause or Resume; on a stopped server they do
// nothing.
func (s *Server) signalErr(err error) {
	s.t.Helper()
	if err != nil && !errors.Is(err, launcher.ErrNotRunning) {
		s.t.Logf("redistest: %v", err)
	}
}

// Restart stops the server if it runs (SIGTERM, as Stop) and starts it again
// on the same port with the same data directory, so it reloads its AOF.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	if err := s.r.Start(ctx); err != nil {
		s.t.Fatalf("redistest: restart %s: %v", s.Addr, err)
	}
}

// RestartEmpty stops the server if it runs, deletes its data, and starts it
// again on the same port: a Redis that comes back empty (lost disk, new
// host, FLUSHALL).
func (s *Server) RestartEmpty() {
	s.t.Helper()
	s.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	if err := s.r.RestartEmpty(ctx); err != nil {
		s.t.Fatalf("redistest: restart %s empty: %v", s.Addr, err)
	}
}

// Running reports whether the server process is running (paused counts as
// running).
func (s *Server) Running() bool { return s.r.Running() }

// logTail logs the last lines of the server's output.
func (s *Server) logTail() {
	tail, err := launcher.TailFile(s.r.LogPath(), logTailLines)
	if err != nil {
		return
	}
	s.t.Logf("redistest: last lines of %s's log:\n%s", s.Addr, tail)
}
