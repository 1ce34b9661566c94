package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Errors of the lifecycle methods. Check with errors.Is.
var (
	ErrRunning    = errors.New("process is running")
	ErrNotRunning = errors.New("process is not running")
	ErrNotStarted = errors.New("process was never started")
)

// httpAddrFile is the file in a node's data dir where txlogd writes the host:port
// its HTTP server listens on, atomically, once it listens.
const httpAddrFile = "http.addr"

// pollInterval is how often the launcher looks again at a file or an endpoint while
// it waits for something with a deadline.
const pollInterval = 10 * time.Millisecond

// ProcessConfig describes one program to run.
type ProcessConfig struct {
	// ID names the process in logs and errors and names its log file. Required.
	ID string
	// Bin is the path of the program. Required.
	Bin string
	// Args are the program's arguments, without the program name.
	Args []string
	// Env is added to the environment the child inherits. The child does not inherit
	// the parent's TXLOG_* variables, so that only Args and Env configure it.
	Env []string
	// DataDir is the node's data dir, where txlogd writes http.addr. Optional; without
	// it HTTPAddr fails.
	DataDir string
	// LogDir holds the log file <LogDir>/<ID>.log, to which the child's stdout and
	// stderr are appended across runs. Required.
	LogDir string
	// Logger receives the launcher's own records; nil discards them.
	Logger *slog.Logger
}

// Validate reports every missing or bad field.
func (c ProcessConfig) Validate() error {
	var errs []error
	if c.ID == "" {
		errs = append(errs, errors.New("ID is required"))
	} else if strings.ContainsAny(c.ID, `/\`) {
		errs = append(errs, fmt.Errorf("ID %q must not contain a path separator", c.ID))
	}
	if c.Bin == "" {
		errs = append(errs, errors.New("Bin is required"))
	}
	if c.LogDir == "" {
		errs = append(errs, errors.New("LogDir is required"))
	}
	return errors.Join(errs...)
}

// Process is one program across its runs: Start launches a run, and the other methods
// act on the current (or, once it exited, the last) run. Its methods are safe to call
// from any goroutine; of two Starts that race, one gets ErrRunning.
type Process struct {
	cfg ProcessConfig // immutable after NewProcess
	log *slog.Logger

	mu       sync.Mutex
	cur      *run // current or last run; nil before the first Start
	starting bool // a Start is between its checks and its fork
}

// run is one execution of the program. Its fields are set before the run is
// published and never change, except those marked otherwise.
type run struct {
	cmd  *exec.Cmd
	pid  int
	done chan struct{} // closed once the child exited and was reaped
	err  error         // exit error of cmd.Wait; read only after done is closed

	paused atomic.Bool
	addr   atomic.Pointer[string] // HTTP host:port, once read from http.addr
}

func (r *run) exited() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// signal sends sig to the child itself. It uses the pidfd-backed os.Process, so it
// never hits a recycled PID; after the child was reaped it returns os.ErrProcessDone.
func (r *run) signal(sig syscall.Signal) error {
	return r.cmd.Process.Signal(sig)
}

// NewProcess checks cfg and returns a Process that has not started yet.
func NewProcess(cfg ProcessConfig) (*Process, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("process config: %w", err)
	}
	cfg.Args = append([]string(nil), cfg.Args...)
	cfg.Env = append([]string(nil), cfg.Env...)
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Process{cfg: cfg, log: log.With("component", "launcher", "node", cfg.ID)}, nil
}

// ID returns the process's ID.
func (p *Process) ID() string { return p.cfg.ID }

// DataDir returns the data dir from the config ("" when none).
func (p *Process) DataDir() string { return p.cfg.DataDir }

// LogPath returns the file the child's stdout and stderr go to.
func (p *Process) LogPath() string { return filepath.Join(p.cfg.LogDir, p.cfg.ID+".log") }

// Args returns a copy of the program's arguments.
func (p *Process) Args() []string { return append([]string(nil), p.cfg.Args...) }

func (p *Process) current() *run {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cur
}

// Start launches a new run. It removes the data dir's stale http.addr first, so that
// HTTPAddr reads only what this run writes. It returns ErrRunning when a run is
// still alive (a paused one too) or another Start is underway. Start does not wait
// for the program to be ready: use HTTPAddr for that.
func (p *Process) Start() error {
	p.mu.Lock()
	if p.starting || (p.cur != nil && !p.cur.exited()) {
		p.mu.Unlock()
		return fmt.Errorf("start %s: %w", p.cfg.ID, ErrRunning)
	}
	p.starting = true
	p.mu.Unlock()

	r, err := p.launch()

	p.mu.Lock()
	p.starting = false
	if err == nil {
		p.cur = r
	}
	p.mu.Unlock()
	if err != nil {
		return fmt.Errorf("start %s: %w", p.cfg.ID, err)
	}
	p.log.Info("process started", "pid", r.pid)
	return nil
}

func (p *Process) launch() (*run, error) {
	if p.cfg.DataDir != "" {
		if err := os.MkdirAll(p.cfg.DataDir, 0o755); err != nil {
			return nil, err
		}
		if err := os.Remove(filepath.Join(p.cfg.DataDir, httpAddrFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	if err := os.MkdirAll(p.cfg.LogDir, 0o755); err != nil {
		return nil, err
	}
	logFile, err := os.OpenFile(p.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	// The child gets its own descriptors for the file; ours is not needed after the fork.
	defer logFile.Close()

	cmd := exec.Command(p.cfg.Bin, p.cfg.Args...)
	cmd.Env = childEnv(os.Environ(), p.cfg.Env)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = SysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	r := &run{cmd: cmd, pid: cmd.Process.Pid, done: make(chan struct{})}
	// This goroutine ends when the child exits; Kill and Stop make sure it does.
	go func() {
		r.err = cmd.Wait()
		p.log.Info("process exited", "pid", r.pid, "err", r.err)
		close(r.done)
	}()
	return r, nil
}

// childEnv returns parent without its TXLOG_* variables, followed by extra.
func childEnv(parent, extra []string) []string {
	env := make([]string, 0, len(parent)+len(extra))
	for _, kv := range parent {
		if !strings.HasPrefix(kv, "TXLOG_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// PID returns the OS process ID of the current or last run, or 0 before the first Start.
func (p *Process) PID() int {
	if r := p.current(); r != nil {
		return r.pid
	}
	return 0
}

// Running reports whether the current run has not exited yet. A paused process is running.
func (p *Process) Running() bool {
	r := p.current()
	return r != nil && !r.exited()
}

// Paused reports whether the current run is stopped by Pause and not resumed.
func (p *Process) Paused() bool {
	r := p.current()
	return r != nil && !r.exited() && r.paused.Load()
}

// Kill sends SIGKILL and waits until the child is gone. It is a no-op when the process
// is not running.
func (p *Process) Kill() error {
	r := p.current()
	if r == nil || r.exited() {
		return nil
	}
	if err := r.signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill %s: %w", p.cfg.ID, err)
	}
	<-r.done
	p.log.Info("process killed", "pid", r.pid)
	return nil
}

// quitGrace is how long Stop waits after SIGQUIT before it sends SIGKILL: time
// for a Go program to write its goroutines' stacks to its log.
const quitGrace = 2 * time.Second

// Stop sends SIGTERM (and SIGCONT, in case the process is paused) and waits for the
// child to exit. When ctx ends first it sends SIGQUIT, which makes a Go program
// such as txlogd print every goroutine's stack to its log and exit, so that the log
// shows where the shutdown hung; after quitGrace it sends SIGKILL. It then returns
// an error saying so. An exit other than status 0 after SIGTERM is returned as an
// error too. Stop is a no-op when the process is not running.
func (p *Process) Stop(ctx context.Context) error {
	r := p.current()
	if r == nil || r.exited() {
		return nil
	}
	if err := r.signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop %s: %w", p.cfg.ID, err)
	}
	// A stopped process would keep SIGTERM pending until it is continued.
	if err := r.signal(syscall.SIGCONT); err == nil {
		r.paused.Store(false)
	}
	select {
	case <-r.done:
		if r.err != nil {
			return fmt.Errorf("stop %s: exit after SIGTERM: %w", p.cfg.ID, r.err)
		}
		return nil
	case <-ctx.Done():
	}
	if err := r.signal(syscall.SIGQUIT); err == nil {
		t := time.NewTimer(quitGrace)
		select {
		case <-r.done:
		case <-t.C:
		}
		t.Stop()
	}
	if err := r.signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop %s: SIGKILL: %w", p.cfg.ID, err)
	}
	<-r.done
	p.log.Warn("process killed after SIGTERM", "pid", r.pid)
	return fmt.Errorf("stop %s: no exit after SIGTERM, sent SIGQUIT (stacks in %s) and SIGKILL: %w", p.cfg.ID, p.LogPath(), context.Cause(ctx))
}

// Pause stops the process with SIGSTOP: it keeps its sockets and memory but runs no
// code until Resume. It returns ErrNotRunning when there is nothing to pause.
func (p *Process) Pause() error {
	return p.pauseResume(syscall.SIGSTOP, true)
}

// Resume continues a paused process with SIGCONT.
func (p *Process) Resume() error {
	return p.pauseResume(syscall.SIGCONT, false)
}

func (p *Process) pauseResume(sig syscall.Signal, paused bool) error {
	r := p.current()
	if r == nil || r.exited() {
		return fmt.Errorf("%s %s: %w", sig, p.cfg.ID, ErrNotRunning)
	}
	if err := r.signal(sig); err != nil {
		if errors.Is(err, os.ErrProcessDone) {
			err = ErrNotRunning
		}
		return fmt.Errorf("%s %s: %w", sig, p.cfg.ID, err)
	}
	r.paused.Store(paused)
	return nil
}

// Wait blocks until the current run exits or ctx ends. It returns the run's exit error
// (nil for status 0, an *exec.ExitError otherwise, also for a death by signal), or
// ctx's error, or ErrNotStarted.
func (p *Process) Wait(ctx context.Context) error {
	r := p.current()
	if r == nil {
		return fmt.Errorf("wait %s: %w", p.cfg.ID, ErrNotStarted)
	}
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return fmt.Errorf("wait %s: %w", p.cfg.ID, ctx.Err())
	}
}

// logTailLines is how many log lines the launcher's own errors quote.
const logTailLines = 20

// HTTPAddr returns the host:port the current run's HTTP server listens on, as txlogd
// wrote it to <DataDir>/http.addr. It polls for the file until it appears, the run
// exits or ctx ends; errors then quote the tail of the log. Once read, the address
// is remembered for the run, also after the run exited.
func (p *Process) HTTPAddr(ctx context.Context) (string, error) {
	if p.cfg.DataDir == "" {
		return "", fmt.Errorf("http addr of %s: no DataDir configured", p.cfg.ID)
	}
	r := p.current()
	if r == nil {
		return "", fmt.Errorf("http addr of %s: %w", p.cfg.ID, ErrNotStarted)
	}
	if a := r.addr.Load(); a != nil {
		return *a, nil
	}
	path := filepath.Join(p.cfg.DataDir, httpAddrFile)
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		addr, err := readAddrFile(path)
		if err != nil {
			return "", fmt.Errorf("http addr of %s: %w", p.cfg.ID, err)
		}
		if addr != "" {
			r.addr.Store(&addr)
			return addr, nil
		}
		select {
		case <-r.done:
			return "", fmt.Errorf("http addr of %s: exited before listening (%v); log tail:\n%s",
				p.cfg.ID, r.err, p.LogTail(logTailLines))
		case <-ctx.Done():
			return "", fmt.Errorf("http addr of %s: %w; log tail:\n%s",
				p.cfg.ID, ctx.Err(), p.LogTail(logTailLines))
		case <-tick.C:
		}
	}
}

// readAddrFile returns the host:port in path, or "" when the file does not exist yet.
func readAddrFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	addr := strings.TrimSpace(string(b))
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return addr, nil
}

// LogTail returns the last n lines of the log file, for failure messages. It never
// fails: a log that cannot be read gives a line saying why.
func (p *Process) LogTail(n int) string {
	s, err := TailFile(p.LogPath(), n)
	if errors.Is(err, os.ErrNotExist) {
		return ""
	}
	if err != nil {
		return fmt.Sprintf("(read log: %v)", err)
	}
	return s
}

// TailFile returns the last n lines of the file at path, without the final newline.
// It reads backwards in chunks, so a large log costs only its tail.
func TailFile(path string, n int) (string, error) {
	if n <= 0 {
		return "", nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return "", err
	}
	const chunk = 8 << 10
	var buf []byte
	off := size
	for off > 0 {
		step := min(off, chunk)
		off -= step
		b := make([]byte, step)
		if _, err := f.ReadAt(b, off); err != nil {
			return "", err
		}
		buf = append(b, buf...)
		// n lines need n newlines before them, plus the one ending the last line.
		if countLines(buf) > n {
			break
		}
	}
	s := strings.TrimSuffix(string(buf), "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n"), nil
}

func countLines(b []byte) int {
	n := 0
	for _, c := range b {
		if c == '\n' {
			n++
		}
	}
	return n
}
