package launcher

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// newFake returns a fakenode Process in a fresh temp dir with the given env.
func newFake(t *testing.T, env ...string) *Process {
	t.Helper()
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "n1")
	p, err := NewProcess(ProcessConfig{
		ID:      "n1",
		Bin:     fakeBin,
		Args:    []string{"--id=n1", "--data-dir=" + dataDir, "--http-addr=127.0.0.1:0", "--raft-addr=127.0.0.1:0"},
		Env:     env,
		DataDir: dataDir,
		LogDir:  dir,
	})
	if err != nil {
		t.Fatalf("NewProcess: %v", err)
	}
	t.Cleanup(func() { p.Kill() })
	return p
}

func startFake(t *testing.T, ctx context.Context, p *Process) string {
	t.Helper()
	if err := p.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	addr, err := p.HTTPAddr(ctx)
	if err != nil {
		t.Fatalf("HTTPAddr: %v", err)
	}
	return addr
}

func httpGet(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

// procState returns the state letter of pid in /proc ("" when it is gone).
func procState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) == 0 {
		return ""
	}
	return fields[0]
}

func needProc(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("needs Linux /proc")
	}
}

func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	if err := Poll(ctx, pollInterval, func(context.Context) error {
		if cond() {
			return nil
		}
		return errors.New("not yet")
	}); err != nil {
		t.Fatalf("wait for %s: %v", what, err)
	}
}

func TestProcessStartStopRestart(t *testing.T) {
	ctx := testCtx(t, 30*time.Second)
	p := newFake(t)

	if got := p.PID(); got != 0 {
		t.Fatalf("PID() before Start = %d, want 0", got)
	}
	if err := p.Wait(ctx); !errors.Is(err, ErrNotStarted) {
		t.Fatalf("Wait() before Start = %v, want ErrNotStarted", err)
	}
	addr := startFake(t, ctx, p)
	if err := httpGet(ctx, "http://"+addr+"/healthz"); err != nil {
		t.Fatal(err)
	}
	if !p.Running() || p.PID() == 0 {
		t.Fatalf("Running() = %v, PID() = %d after Start", p.Running(), p.PID())
	}
	if err := p.Start(); !errors.Is(err, ErrRunning) {
		t.Fatalf("second Start() = %v, want ErrRunning", err)
	}
	// The fake logs right after it writes http.addr.
	waitFor(t, ctx, "http listening in LogTail(1)", func() bool {
		return strings.Contains(p.LogTail(1), `"msg":"http listening"`)
	})

	if err := p.Stop(ctx); err != nil {
		t.Fatalf("Stop() = %v", err)
	}
	if p.Running() {
		t.Fatal("Running() = true after Stop")
	}
	if err := p.Wait(ctx); err != nil {
		t.Fatalf("Wait() after graceful stop = %v, want nil", err)
	}
	if err := p.Stop(ctx); err != nil {
		t.Fatalf("Stop() when stopped = %v, want nil", err)
	}
	if _, err := os.Stat(filepath.Join(p.DataDir(), httpAddrFile)); err != nil {
		t.Fatalf("http.addr after stop: %v", err)
	}

	firstPID := p.PID()
	startFake(t, ctx, p)
	if p.PID() == firstPID {
		t.Fatalf("PID() after restart = %d, same as before", p.PID())
	}
	// The log is appended to across runs: both runs' lines are there.
	waitFor(t, ctx, "two http listening lines", func() bool {
		return strings.Count(p.LogTail(100), `"msg":"http listening"`) == 2
	})
	if tail := p.LogTail(100); !strings.Contains(tail, `"msg":"shutting down"`) {
		t.Fatalf("log lacks the first run's shutdown:\n%s", tail)
	}
}

func TestProcessKill(t *testing.T) {
	ctx := testCtx(t, 30*time.Second)
	p := newFake(t)
	startFake(t, ctx, p)
	if err := p.Kill(); err != nil {
		t.Fatalf("Kill() = %v", err)
	}
	if p.Running() {
		t.Fatal("Running() = true after Kill")
	}
	var exitErr *exec.ExitError
	if err := p.Wait(ctx); !errors.As(err, &exitErr) || exitErr.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("Wait() after Kill = %v, want death by SIGKILL", err)
	}
	if err := p.Kill(); err != nil {
		t.Fatalf("second Kill() = %v, want nil", err)
	}
	if err := p.Pause(); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Pause() after Kill = %v, want ErrNotRunning", err)
	}
}

func TestProcessStopEscalatesToKill(t *testing.T) {
	ctx := testCtx(t, 30*time.Second)
	p := newFake(t, "FAKENODE_IGNORE_TERM=1")
	startFake(t, ctx, p)

	stopCtx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	err := p.Stop(stopCtx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stop() = %v, want an error wrapping DeadlineExceeded", err)
	}
	if p.Running() {
		t.Fatal("Running() = true after Stop escalated")
	}
	// Before SIGKILL, SIGQUIT made the Go program print its goroutines.
	if tail := p.LogTail(500); !strings.Contains(tail, "ignoring signal") || !strings.Contains(tail, "SIGQUIT") {
		t.Fatalf("log tail:\n%s\nwant the ignored SIGTERM and the stacks of SIGQUIT", tail)
	}
}

func TestProcessPauseResume(t *testing.T) {
	needProc(t)
	ctx := testCtx(t, 30*time.Second)
	p := newFake(t)
	addr := startFake(t, ctx, p)

	if err := p.Pause(); err != nil {
		t.Fatalf("Pause() = %v", err)
	}
	if !p.Paused() || !p.Running() {
		t.Fatalf("Paused() = %v, Running() = %v after Pause, want true, true", p.Paused(), p.Running())
	}
	waitFor(t, ctx, "state T", func() bool { return procState(p.PID()) == "T" })

	if err := p.Resume(); err != nil {
		t.Fatalf("Resume() = %v", err)
	}
	if p.Paused() {
		t.Fatal("Paused() = true after Resume")
	}
	waitFor(t, ctx, "state not T", func() bool { return procState(p.PID()) != "T" })
	if err := httpGet(ctx, "http://"+addr+"/healthz"); err != nil {
		t.Fatalf("after Resume: %v", err)
	}

	// A paused process still stops gracefully: Stop continues it.
	if err := p.Pause(); err != nil {
		t.Fatalf("Pause() = %v", err)
	}
	if err := p.Stop(ctx); err != nil {
		t.Fatalf("Stop() of a paused process = %v", err)
	}
}

func TestProcessExitBeforeListening(t *testing.T) {
	ctx := testCtx(t, 30*time.Second)
	p := newFake(t, "FAKENODE_EXIT=3")
	if err := p.Start(); err != nil {
		t.Fatalf("Start() = %v", err)
	}
	_, err := p.HTTPAddr(ctx)
	if err == nil || !strings.Contains(err.Error(), "exiting on request") {
		t.Fatalf("HTTPAddr() = %v, want an error quoting the log", err)
	}
	var exitErr *exec.ExitError
	if err := p.Wait(ctx); !errors.As(err, &exitErr) || exitErr.ExitCode() != 3 {
		t.Fatalf("Wait() = %v, want exit status 3", err)
	}
}

func TestProcessHTTPAddrTimeout(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	ctx := testCtx(t, 30*time.Second)
	// A program that runs but never writes http.addr.
	p, err := NewProcess(ProcessConfig{ID: "sh", Bin: "/bin/sh", Args: []string{"-c", "echo started; exec sleep 60"},
		DataDir: t.TempDir(), LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Kill() })
	waitFor(t, ctx, "log line", func() bool { return p.LogTail(1) == "started" })
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = p.HTTPAddr(short)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "started") {
		t.Fatalf("HTTPAddr() = %v, want DeadlineExceeded quoting the log", err)
	}
}

func TestParentDeathKillsChild(t *testing.T) {
	needProc(t)
	ctx := testCtx(t, 30*time.Second)
	helper := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	helper.Env = append(os.Environ(), helperEnv+"="+fakeBin, "LAUNCHER_TEST_ORPHAN_DIR="+t.TempDir())
	stdout, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	helper.Stderr = &stderr
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		helper.Wait()
		t.Fatalf("read child PID: %v; helper stderr:\n%s", err, stderr.String())
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("child PID %q: %v", line, err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	if s := procState(pid); s == "" || s == "Z" {
		t.Fatalf("child %d state %q before the parent died", pid, s)
	}

	helper.Process.Kill()
	helper.Wait()
	// A reparented child may stay a zombie if nothing reaps it; that is dead too.
	waitFor(t, ctx, "orphaned child to die", func() bool {
		s := procState(pid)
		return s == "" || s == "Z"
	})
}

func TestTailFile(t *testing.T) {
	long := make([]string, 5000)
	for i := range long {
		long[i] = fmt.Sprintf("line %d %s", i, strings.Repeat("x", i%50))
	}
	tests := []struct {
		name    string
		content string
		n       int
		want    string
	}{
		{"empty", "", 3, ""},
		{"zero lines", "a\nb\n", 0, ""},
		{"fewer than n", "a\nb\n", 5, "a\nb"},
		{"exactly n", "a\nb\nc\n", 3, "a\nb\nc"},
		{"more than n", "a\nb\nc\nd\n", 2, "c\nd"},
		{"no final newline", "a\nb\nc", 2, "b\nc"},
		{"one line", "only\n", 1, "only"},
		{"across chunks", strings.Join(long, "\n") + "\n", 3, strings.Join(long[4997:], "\n")},
		{"all of a large file", strings.Join(long, "\n") + "\n", 5000, strings.Join(long, "\n")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log")
			if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := TailFile(path, tt.n)
			if err != nil {
				t.Fatalf("TailFile() error = %v", err)
			}
			if got != tt.want {
				t.Fatalf("TailFile(%d) = %q, want %q", tt.n, got, tt.want)
			}
		})
	}
}

func TestChildEnv(t *testing.T) {
	got := childEnv([]string{"PATH=/bin", "TXLOG_HTTP_ADDR=x", "TXLOGX=y", "HOME=/h"}, []string{"TXLOG_LOG_LEVEL=debug"})
	want := []string{"PATH=/bin", "TXLOGX=y", "HOME=/h", "TXLOG_LOG_LEVEL=debug"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("childEnv() = %v, want %v", got, want)
	}
}

func TestProcessConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     ProcessConfig
		wantErr []string
	}{
		{"ok", ProcessConfig{ID: "n1", Bin: "b", LogDir: "d"}, nil},
		{"empty", ProcessConfig{}, []string{"ID is required", "Bin is required", "LogDir is required"}},
		{"slash in ID", ProcessConfig{ID: "a/b", Bin: "b", LogDir: "d"}, []string{"path separator"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if (err == nil) != (len(tt.wantErr) == 0) {
				t.Fatalf("Validate() = %v, want errors %v", err, tt.wantErr)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %v, want it to mention %q", err, w)
				}
			}
		})
	}
}
