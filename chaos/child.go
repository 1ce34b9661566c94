package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/txlog/txlog/launcher"
)

// The chaos child processes: the lease workload's contenders
// (lease_contender.go) and the consumer workload's consumers
// (consumer_process.go) run as processes of their own, so that a fault can
// SIGSTOP one. Both sides of that are here: childMain is a child's start,
// startChild, pause and stopChildren are the verifier's handle on one, and
// a child records what it did as JSON lines (jsonLines, readJSONLines).

// childMain is the start of a chaos child process named name (`txlog
// chaos-contender`, `txlog chaos-consumer`): ctx ends on SIGTERM or SIGINT,
// args are parsed with the flags define adds, every flag in required must
// be set, and run gets a JSON logger on stderr that names the process by
// role and its --id.
func childMain(ctx context.Context, args []string, stderr io.Writer, name, role string, required []string,
	define func(fs *flag.FlagSet), run func(ctx context.Context, logger *slog.Logger) error) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	define(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	missing := false
	names := make([]string, len(required))
	for i, r := range required {
		names[i] = "--" + r
		if f := fs.Lookup(r); f == nil || f.Value.String() == "" {
			missing = true
		}
	}
	if missing {
		last := len(names) - 1
		return fmt.Errorf("%s: %s and %s are required", name, strings.Join(names[:last], ", "), names[last])
	}
	id := ""
	if f := fs.Lookup("id"); f != nil {
		id = f.Value.String()
	}
	return run(ctx, slog.New(slog.NewJSONHandler(stderr, nil)).With(role, id))
}

// commaList is a flag of comma-separated values, such as --targets.
type commaList []string

func (l *commaList) String() string { return strings.Join(*l, ",") }

func (l *commaList) Set(s string) error {
	*l = nil
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			*l = append(*l, v)
		}
	}
	return nil
}

// child is one chaos child process the verifier started.
type child struct {
	id   string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
}

// startChild starts child id: cmd (the program and its leading arguments,
// such as {"txlog", "chaos-contender"}) followed by args, its stdout and
// stderr appended to logPath, env added to the verifier's environment. It dies
// with the verifier (launcher.SysProcAttr).
func startChild(id string, cmd, args, env []string, logPath string) (*child, error) {
	if len(cmd) == 0 {
		return nil, fmt.Errorf("chaos: no command for child %s", id)
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	argv := append(append([]string(nil), cmd...), args...)
	c := &child{id: id, cmd: exec.Command(argv[0], argv[1:]...), done: make(chan struct{})}
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	if env != nil {
		c.cmd.Env = append(os.Environ(), env...)
	}
	c.cmd.SysProcAttr = launcher.SysProcAttr()
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("chaos: start %s: %w", id, err)
	}
	go func() {
		c.cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// pause SIGSTOPs c, waits hold (or until ctx ends) and SIGCONTs it,
// recording the times in ev (Injected, Healed).
func (c *child) pause(ctx context.Context, hold time.Duration, ev *FaultEvent) error {
	ev.Injected = time.Now()
	if err := c.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("SIGSTOP %s: %w", c.id, err)
	}
	sleepCtx(ctx, hold)
	ev.Healed = time.Now()
	if err := c.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		return fmt.Errorf("SIGCONT %s: %w", c.id, err)
	}
	return nil
}

// stopChildren SIGCONTs and SIGTERMs children (they resign what they hold)
// and waits for them, SIGKILLing any that has not exited within 10s. A
// child stopped before is left as it is.
func stopChildren(ctx context.Context, children []*child, log *slog.Logger) {
	for _, c := range children {
		c.cmd.Process.Signal(syscall.SIGCONT)
		c.cmd.Process.Signal(syscall.SIGTERM)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, c := range children {
		select {
		case <-c.done:
		case <-ctx.Done():
			log.Warn("child did not stop; killing it", "child", c.id)
			c.cmd.Process.Kill()
			<-c.done
		}
	}
}

// jsonLines is a child's history file: one JSON value a line, each line
// written at once, so that a killed child tears at most its last line.
type jsonLines struct {
	mu sync.Mutex
	f  *os.File
}

func openJSONLines(path string) (*jsonLines, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &jsonLines{f: f}, nil
}

// write appends v as one line; any goroutine may call it.
func (j *jsonLines) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	_, err = j.f.Write(append(b, '\n'))
	return err
}

func (j *jsonLines) Close() error { return j.f.Close() }

// readJSONLines reads a history file written by jsonLines. A line that does
// not decode (a torn last line) is left out.
func readJSONLines[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			continue
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("read %s: %w", path, err)
	}
	return out, nil
}
