package servers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/txlog/txlog/launcher"
)

// fakeServer writes a script that prints its arguments and then waits for a
// signal, as a server does.
func fakeServer(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "server")
	if err := os.WriteFile(path, []byte("#!/bin/sh\necho \"$@\"\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// waitLog polls the log of name in s until it holds want.
func waitLog(t *testing.T, s *Set, name, want string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var data []byte
	err := launcher.Poll(ctx, 10*time.Millisecond, func(context.Context) error {
		data, _ = os.ReadFile(filepath.Join(s.Dir(), name+".log"))
		if !strings.Contains(string(data), want) {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("log of %s = %q, want it to hold %q", name, data, want)
	}
	return string(data)
}

func TestSetStartEtcdAndClose(t *testing.T) {
	bin := fakeServer(t)
	s, ports, err := New(t.TempDir(), "set-", 6)
	if err != nil {
		t.Fatal(err)
	}
	if len(ports) != 6 {
		t.Fatalf("New(6) reserved %d ports, want 6", len(ports))
	}
	urls, err := s.StartEtcd(bin, "tok", ports, "--extra", "x")
	if err != nil {
		s.Close()
		t.Fatal(err)
	}
	want := []string{fmt.Sprintf("http://127.0.0.1:%d", ports[0]), fmt.Sprintf("http://127.0.0.1:%d", ports[1]), fmt.Sprintf("http://127.0.0.1:%d", ports[2])}
	if strings.Join(urls, " ") != strings.Join(want, " ") {
		t.Fatalf("StartEtcd() = %v, want %v", urls, want)
	}
	initial := fmt.Sprintf("e1=http://127.0.0.1:%d,e2=http://127.0.0.1:%d,e3=http://127.0.0.1:%d", ports[3], ports[4], ports[5])
	line := waitLog(t, s, "e2", "--extra x")
	for _, arg := range []string{
		"--name e2 ", "--data-dir " + filepath.Join(s.Dir(), "e2") + " ",
		"--listen-client-urls " + urls[1] + " ", fmt.Sprintf("--listen-peer-urls http://127.0.0.1:%d ", ports[4]),
		"--initial-cluster " + initial + " ", "--initial-cluster-token tok ", "--initial-cluster-state new ",
	} {
		if !strings.Contains(line, arg) {
			t.Errorf("e2's arguments %q lack %q", line, arg)
		}
	}
	pids := s.PIDs()
	if len(pids) != 3 {
		t.Fatalf("PIDs() = %v, want 3", pids)
	}
	tails := s.Tails()
	for _, name := range []string{"--- e1.log", "--- e2.log", "--- e3.log"} {
		if !strings.Contains(tails, name) {
			t.Errorf("Tails() = %q, want a part %q", tails, name)
		}
	}
	dir := s.Dir()
	s.Close()
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("after Close, kill(%d, 0) = %v, want ESRCH", pid, err)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after Close, stat %s: %v, want it gone", dir, err)
	}
}

func TestSetFail(t *testing.T) {
	s, _, err := New(t.TempDir(), "set-", 0)
	if err != nil {
		t.Fatal(err)
	}
	bin := fakeServer(t)
	if err := s.Start("a", bin, "hello"); err != nil {
		s.Close()
		t.Fatal(err)
	}
	waitLog(t, s, "a", "hello")
	if err := s.Start("b", filepath.Join(s.Dir(), "missing")); err == nil {
		t.Errorf("Start of a missing binary: no error")
	}
	dir := s.Dir()
	cause := errors.New("no leader")
	err = s.Fail("test cluster", cause)
	if !errors.Is(err, cause) || !strings.HasPrefix(err.Error(), "test cluster: no leader\n--- a.log\nhello") {
		t.Errorf("Fail() = %q, want it to wrap %q and quote a.log", err, cause)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after Fail, stat %s: %v, want it gone", dir, err)
	}
}
