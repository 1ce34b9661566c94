package launchertest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/txlog/txlog/launcher"
)

// BuildTimeout is how long BuildWithTxlogd gives the go command.
const BuildTimeout = 5 * time.Minute

// PollInterval is how often WaitFor asks its condition again.
const PollInterval = 20 * time.Millisecond

// BuildWithTxlogd builds txlogd and the main package in the test's working
// directory (an example's, say), named name, into a directory of the test's,
// and returns the two binaries' paths.
func BuildWithTxlogd(t testing.TB, name string) (txlogd, bin string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), BuildTimeout)
	defer cancel()
	dir := t.TempDir()
	txlogd, err := launcher.BuildBinaries(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(dir, name)
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v: %s", name, err, out)
	}
	return txlogd, bin
}

// StartProcess starts the program cfg describes, with its log in a directory
// of the test's unless cfg.LogDir is set, and kills it when the test ends,
// printing its log's tail when the test failed.
func StartProcess(t testing.TB, cfg launcher.ProcessConfig) *launcher.Process {
	t.Helper()
	if cfg.LogDir == "" {
		cfg.LogDir = t.TempDir()
	}
	p, err := launcher.NewProcess(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("--- %s log tail:\n%s", cfg.ID, p.LogTail(logTailLines))
		}
	})
	return p
}

// WaitFor asks cond every PollInterval until it holds, and fails the test,
// naming what it waited for, when ctx ends first.
func WaitFor(ctx context.Context, t testing.TB, what string, cond func() bool) {
	t.Helper()
	err := launcher.Poll(ctx, PollInterval, func(context.Context) error {
		if cond() {
			return nil
		}
		return errors.New("not yet")
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// LogRecord is what a test reads of every record in the JSON log (log/slog's
// JSON handler) of a tool that holds a lease: its time, its message and the
// lease token it names (0 in one that names none). A test that reads more
// fields decodes into a struct of its own that embeds LogRecord.
type LogRecord struct {
	Time  time.Time `json:"time"`
	Msg   string    `json:"msg"`
	Token uint64    `json:"token"`
}

// Record returns r; a struct that embeds LogRecord has it too.
func (r LogRecord) Record() LogRecord { return r }

// A Record is a LogRecord or a struct that embeds one.
type Record interface{ Record() LogRecord }

// ReadLog returns the records p has logged so far, decoded into R, in their
// order. A line that is not a JSON record with a message, such as one still
// being written, is left out; a log not yet created has no records.
func ReadLog[R Record](t testing.TB, p *launcher.Process) []R {
	t.Helper()
	b, err := os.ReadFile(p.LogPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []R
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var r R
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.Record().Msg != "" {
			out = append(out, r)
		}
	}
	return out
}

// Last returns the last of rs whose message is msg, and whether there is one.
func Last[R Record](rs []R, msg string) (R, bool) {
	for i := len(rs) - 1; i >= 0; i-- {
		if rs[i].Record().Msg == msg {
			return rs[i], true
		}
	}
	var zero R
	return zero, false
}

// Holder returns the process of ps whose last record with message msg (the
// one its tool logs when it gains the lease) has the largest token, and that
// token: the latest holder of the lease as the logs tell. It returns nil and
// 0 while no log has such a record.
func Holder(t testing.TB, ps []*launcher.Process, msg string) (*launcher.Process, uint64) {
	t.Helper()
	var best *launcher.Process
	var token uint64
	for _, p := range ps {
		if r, ok := Last(ReadLog[LogRecord](t, p), msg); ok && r.Token > token {
			best, token = p, r.Token
		}
	}
	return best, token
}
