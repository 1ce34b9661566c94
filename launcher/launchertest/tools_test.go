package launchertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/launcher"
)

// logged returns a process (not started) whose log holds lines.
func logged(t *testing.T, id string, lines ...string) *launcher.Process {
	t.Helper()
	dir := t.TempDir()
	p, err := launcher.NewProcess(launcher.ProcessConfig{ID: id, Bin: "unused", LogDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if lines != nil {
		if err := os.WriteFile(filepath.Join(dir, id+".log"), []byte(strings.Join(lines, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// wideRecord is a test's own record type, with a field of its own.
type wideRecord struct {
	LogRecord
	Period int64 `json:"period"`
}

func TestReadLog(t *testing.T) {
	p := logged(t, "a",
		`{"time":"2026-01-02T03:04:05Z","level":"INFO","msg":"lease gained","token":3}`,
		`not JSON: a panic, say`,
		`{"time":"2026-01-02T03:04:06Z","msg":""}`,
		`{"no":"message"}`,
		`{"time":"2026-01-02T03:04:07Z","msg":"run started","token":3,"period":9}`,
		`{"time":"2026-01-02T03:04:08Z","msg":"run comm`) // being written
	got := ReadLog[wideRecord](t, p)
	want := []wideRecord{
		{LogRecord{time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), "lease gained", 3}, 0},
		{LogRecord{time.Date(2026, 1, 2, 3, 4, 7, 0, time.UTC), "run started", 3}, 9},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ReadLog() = %+v, want %+v", got, want)
	}
	if got := ReadLog[LogRecord](t, logged(t, "none")); got != nil {
		t.Fatalf("ReadLog() of a log not yet created = %+v, want none", got)
	}
	if r, ok := Last(got, "run started"); !ok || r.Period != 9 {
		t.Fatalf(`Last(, "run started") = %+v, %v`, r, ok)
	}
	if r, ok := Last(got, "lease lost"); ok {
		t.Fatalf(`Last(, "lease lost") = %+v, true; there is none`, r)
	}
}

func TestHolder(t *testing.T) {
	rec := func(msg string, token uint64) string { return fmt.Sprintf(`{"msg":%q,"token":%d}`, msg, token) }
	a := logged(t, "a", rec("lease gained", 2), rec("lease gained", 7), rec("run committed", 9))
	b := logged(t, "b", rec("lease gained", 8), rec("lease gained", 5)) // its last grant counts
	c := logged(t, "c", rec("run committed", 10))
	if p, token := Holder(t, []*launcher.Process{a, b, c}, "lease gained"); p != a || token != 7 {
		t.Fatalf("Holder() = %v, %d; want a, 7", p, token)
	}
	if p, token := Holder(t, []*launcher.Process{c}, "lease gained"); p != nil || token != 0 {
		t.Fatalf("Holder() with no grant logged = %v, %d; want nil, 0", p, token)
	}
}

// fatalTB records a Fatalf and ends the goroutine, as testing's does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestWaitFor(t *testing.T) {
	n := 0
	WaitFor(context.Background(), t, "the third ask", func() bool { n++; return n == 3 })
	if n != 3 {
		t.Fatalf("WaitFor returned after %d asks, want 3", n)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	f := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		WaitFor(ctx, f, "what never comes", func() bool { return false })
	}()
	<-done
	if !strings.Contains(f.msg, "waiting for what never comes") {
		t.Fatalf("WaitFor past its deadline failed with %q, want the wait named", f.msg)
	}
}
