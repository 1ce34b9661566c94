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

// TestLocalTLS runs `txlog local --mtls` on fake nodes that serve HTTPS,
// require the client certificate and check tokens: the admin token is printed
// once and written nowhere, and the printed export line is all `txlog status`
// needs.
func TestLocalTLS(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	localCtx, stop := context.WithCancel(ctx)
	defer stop()
	var stdout, stderr syncBuffer
	c := &cli{stdout: &stdout, stderr: &stderr, lookupEnv: func(string) (string, bool) { return "", false }}
	done := make(chan error, 1)
	go func() {
		done <- c.run(localCtx, []string{"local", "--mtls", "--dir", dir, "--http-base-port", "0", "--raft-base-port", "0", "--txlogd", fakeTxlogd, "--no-redis"})
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
	env := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "export "); ok {
			for _, kv := range strings.Fields(rest) {
				k, v, _ := strings.Cut(kv, "=")
				env[k] = v
			}
		}
	}
	token := env[tokenEnv]
	if token == "" || !strings.HasPrefix(env[targetsEnv], "https://127.0.0.1:") || env[caCertEnv] == "" || env[certEnv] == "" || env[keyEnv] == "" {
		t.Fatalf("stdout:\n%s\nwant an export line with https targets, the CA, the client certificate and the token", out)
	}
	if n := strings.Count(out, token); n != 2 { // the token line and the export line
		t.Errorf("the token is printed %d times, want on the token line and the export line:\n%s", n, out)
	}
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if b, _ := os.ReadFile(path); strings.Contains(string(b), token) {
				t.Errorf("%s holds the admin token", path)
			}
		}
		return nil
	})

	r := runCLI(t, ctx, env, "status")
	if r.code != 0 || !strings.Contains(r.stdout, "n1") {
		t.Errorf("status with the printed environment: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	env[tokenEnv] = "wrong"
	if r := runCLI(t, ctx, env, "status"); r.code == 0 {
		t.Errorf("status with a wrong token: exit 0, want a failure\nstdout:\n%s", r.stdout)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("local after Ctrl-C = %v; stderr:\n%s", err, stderr.String())
	}
}
