package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeTxlogd is chaos's stand-in for txlogd, built by TestMain.
var fakeTxlogd string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "txlog-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fakeTxlogd = filepath.Join(dir, "fakenode")
	out, err := exec.Command("go", "build", "-o", fakeTxlogd, "github.com/txlog/txlog/launcher/testdata/fakenode").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build fakenode: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func writeExecutable(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestFindTxlogd(t *testing.T) {
	exeDir, pathDir, emptyDir := t.TempDir(), t.TempDir(), t.TempDir()
	nextToTxlog := filepath.Join(exeDir, "txlogd")
	onPath := filepath.Join(pathDir, "txlogd")
	explicit := filepath.Join(t.TempDir(), "my-txlogd")
	writeExecutable(t, nextToTxlog)
	writeExecutable(t, onPath)
	writeExecutable(t, explicit)
	notExec := filepath.Join(t.TempDir(), "txlogd")
	if err := os.WriteFile(notExec, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		explicit string
		exeDir   string
		path     string // PATH
		want     string
		wantErr  string
	}{
		{"explicit wins", explicit, exeDir, pathDir, explicit, ""},
		{"explicit not executable", notExec, exeDir, pathDir, "", "not an executable"},
		{"next to txlog", "", exeDir, pathDir, nextToTxlog, ""},
		{"on PATH", "", emptyDir, pathDir, onPath, ""},
		// Neither: it would build, but without go on PATH that fails with a hint.
		{"build without go", "", emptyDir, emptyDir, "", "pass --txlogd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PATH", tt.path)
			var stderr strings.Builder
			got, err := findTxlogd(t.Context(), tt.explicit, tt.exeDir, filepath.Join(t.TempDir(), "bin"), &stderr)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("findTxlogd() = %q, %v; want an error with %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("findTxlogd() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestLocal(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	for run := 1; run <= 2; run++ { // the second run resumes the same data dir
		localCtx, stop := context.WithCancel(ctx)
		var stdout, stderr syncBuffer
		c := &cli{stdout: &stdout, stderr: &stderr, lookupEnv: func(string) (string, bool) { return "", false }}
		done := make(chan error, 1)
		go func() {
			done <- c.run(localCtx, []string{"local", "--dir", dir, "--http-base-port", "0", "--raft-base-port", "0", "--txlogd", fakeTxlogd, "--no-redis"})
		}()

		tick := time.NewTicker(10 * time.Millisecond)
		for !strings.Contains(stdout.String(), "Ctrl-C stops the cluster") {
			select {
			case err := <-done:
				t.Fatalf("local returned early: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
			case <-ctx.Done():
				t.Fatalf("no ready message; stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
			case <-tick.C:
			}
		}
		tick.Stop()
		out := stdout.String()
		for _, want := range []string{"n1  ", "n2  ", "n3  ", "leader", filepath.Join(dir, "n2.log"), "curl -s -X POST http://127.0.0.1:", "TXLOG_TARGETS=http://127.0.0.1:"} {
			if !strings.Contains(out, want) {
				t.Errorf("stdout:\n%s\nwant it to contain %q", out, want)
			}
		}

		stop() // Ctrl-C
		if err := <-done; err != nil {
			t.Fatalf("local after Ctrl-C = %v; stderr:\n%s", err, stderr.String())
		}
		if !strings.HasSuffix(stdout.String(), "stopped\n") {
			t.Fatalf("stdout:\n%s\nwant it to end with the stop", stdout.String())
		}
		for _, id := range []string{"n1", "n2", "n3"} {
			log, err := os.ReadFile(filepath.Join(dir, id+".log"))
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Count(string(log), `"msg":"shutting down"`); got != run {
				t.Fatalf("%s log has %d graceful shutdowns after run %d:\n%s", id, got, run, log)
			}
			starts, err := os.ReadFile(filepath.Join(dir, id, "starts"))
			if err != nil || strings.TrimSpace(string(starts)) != fmt.Sprint(run) {
				t.Fatalf("%s started %q times on its data dir after run %d (%v)", id, starts, run, err)
			}
		}
	}
}
