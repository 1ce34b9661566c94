package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/txlog/txlog/launcher"
	"github.com/txlog/txlog/launcher/launchertest"
)

// The txlogd binary the process tests run, built once for the package.
var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// txlogdBinary builds txlogd (go build, as the launcher does) on its first
// call and returns its path.
func txlogdBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "txlogd-bin")
		if buildErr != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), launchertest.BuildTimeout)
		defer cancel()
		binPath, buildErr = launcher.BuildBinaries(ctx, binDir)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// listenNotify opens the unixgram socket a service manager would, at a path
// of the test's (short: a unix socket path holds at most 107 bytes).
func listenNotify(t *testing.T) (*net.UnixConn, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "sd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn, path
}

// readNotify returns the next datagram on conn, failing the test when none
// comes within d.
func readNotify(t *testing.T, conn *net.UnixConn, d time.Duration, what string) string {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 4096)
	n, _, err := conn.ReadFromUnix(buf)
	if err != nil {
		t.Fatalf("waiting for %s on the notify socket: %v", what, err)
	}
	return string(buf[:n])
}

// startNode starts a one-member txlogd on loopback ports chosen now, with
// extra environment variables, and returns it with its HTTP address.
func startNode(t *testing.T, env ...string) (*launcher.Process, string) {
	t.Helper()
	ports, err := launcher.FreePorts("127.0.0.1", 2)
	if err != nil {
		t.Fatal(err)
	}
	httpAddr := "127.0.0.1:" + strconv.Itoa(ports[0])
	raftAddr := "127.0.0.1:" + strconv.Itoa(ports[1])
	dataDir := filepath.Join(t.TempDir(), "n1")
	p := launchertest.StartProcess(t, launcher.ProcessConfig{
		ID:      "n1",
		Bin:     txlogdBinary(t),
		DataDir: dataDir,
		Env:     env,
		Args: []string{"--id", "n1", "--data-dir", dataDir, "--http-addr", httpAddr,
			"--raft-addr", raftAddr, "--cluster", "n1=" + raftAddr},
	})
	return p, httpAddr
}

// TestSDNotify: a real txlogd with NOTIFY_SOCKET set sends READY=1 on a
// real unixgram socket once it is open, when its client port answers
// /healthz at once, and STOPPING=1 on SIGTERM, then exits 0. Its
// --healthcheck mode passes against it and fails against a closed port.
func TestSDNotify(t *testing.T) {
	conn, path := listenNotify(t)
	p, httpAddr := startNode(t, "NOTIFY_SOCKET="+path)

	if got := readNotify(t, conn, 60*time.Second, "READY=1"); got != "READY=1" {
		t.Fatalf("first notification = %q, want READY=1", got)
	}
	resp, err := http.Get("http://" + httpAddr + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz right after READY=1: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /healthz right after READY=1 = %s, want 200", resp.Status)
	}

	hc := exec.Command(txlogdBinary(t), "--healthcheck", "http://"+httpAddr+"/healthz")
	if out, err := hc.CombinedOutput(); err != nil {
		t.Errorf("txlogd --healthcheck against the node: %v: %s", err, out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- p.Stop(ctx) }()
	if got := readNotify(t, conn, 30*time.Second, "STOPPING=1"); got != "STOPPING=1" {
		t.Errorf("notification after SIGTERM = %q, want STOPPING=1", got)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("stop: %v", err)
	}

	hc = exec.Command(txlogdBinary(t), "--healthcheck", "http://"+httpAddr+"/healthz")
	start := time.Now()
	out, err := hc.CombinedOutput()
	if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != 1 {
		t.Errorf("txlogd --healthcheck against a stopped node: %v (%s), want exit status 1", err, out)
	}
	if took := time.Since(start); took > healthcheckTimeout+2*time.Second {
		t.Errorf("txlogd --healthcheck against a stopped node took %v, want at most %v", took, healthcheckTimeout)
	}
}

// TestSDNotifyBrokenSocket: a NOTIFY_SOCKET that names no socket (or is not
// a path) is logged as a warning and the node serves all the same.
func TestSDNotifyBrokenSocket(t *testing.T) {
	for name, socket := range map[string]string{
		"missing":  filepath.Join(t.TempDir(), "no-such-socket"),
		"relative": "relative/notify",
	} {
		t.Run(name, func(t *testing.T) {
			p, httpAddr := startNode(t, "NOTIFY_SOCKET="+socket)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			launchertest.WaitFor(ctx, t, "the warning sd_notify failed", func() bool {
				_, ok := launchertest.Last(launchertest.ReadLog[launchertest.LogRecord](t, p), "sd_notify failed")
				return ok
			})
			resp, err := http.Get("http://" + httpAddr + "/healthz")
			if err != nil {
				t.Fatalf("GET /healthz: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET /healthz = %s, want 200", resp.Status)
			}
			if err := p.Stop(ctx); err != nil {
				t.Fatalf("stop: %v", err)
			}
		})
	}
}

// TestSDNotifyAbstract: sdNotify reaches a socket in Linux's abstract
// namespace (NOTIFY_SOCKET=@name), and sends nothing without a socket.
func TestSDNotifyAbstract(t *testing.T) {
	name := "@txlogd-test-" + strconv.Itoa(os.Getpid())
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := sdNotify("", "READY=1"); err != nil {
		t.Errorf(`sdNotify("") = %v, want nil`, err)
	}
	if err := sdNotify(name, "READY=1"); err != nil {
		t.Fatalf("sdNotify(%s) = %v", name, err)
	}
	if got := readNotify(t, conn, 5*time.Second, "READY=1"); got != "READY=1" {
		t.Errorf("received %q, want READY=1 (and nothing from the empty socket)", got)
	}
}

// TestHealthcheck: --healthcheck passes on 200 only, and refuses what is not
// an http(s) URL.
func TestHealthcheck(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			w.Write([]byte(`{"status":"ok"}`))
			return
		}
		http.Error(w, `{"error":{"code":"not_ready","message":"no leader"}}`, http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name, url string
		want      string // "" for nil, else a part of the error
	}{
		{"ok", srv.URL + "/healthz", ""},
		{"503", srv.URL + "/readyz", "503"},
		{"ftp", "ftp://127.0.0.1/healthz", "want an http:// or https:// URL"},
		{"no host", "http:///healthz", "want an http:// or https:// URL"},
		{"junk", "::", "want an http:// or https:// URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := healthcheck(context.Background(), tc.url)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("healthcheck(%q) = %v, want %q", tc.url, err, tc.want)
			}
		})
	}
}

// TestHealthcheckArgs: which arguments run the --healthcheck mode.
func TestHealthcheckArgs(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		url     string
		ok, err bool
	}{
		{[]string{"--healthcheck", "http://x/healthz"}, "http://x/healthz", true, false},
		{[]string{"-healthcheck=http://x/healthz"}, "http://x/healthz", true, false},
		{[]string{"--healthcheck"}, "", true, true},
		{[]string{"--healthcheck", "http://x/", "extra"}, "", true, true},
		{[]string{"--healthcheck", "http://x/", "--id", "n1"}, "", true, true},
		{[]string{"--id", "n1", "--healthcheck", "http://x/"}, "", false, false},
		{[]string{"healthcheck"}, "", false, false},
		{nil, "", false, false},
	} {
		u, ok, err := healthcheckURL(tc.args)
		if u != tc.url || ok != tc.ok || (err != nil) != tc.err {
			t.Errorf("healthcheckURL(%q) = %q, %v, %v; want %q, %v, error %v", tc.args, u, ok, err, tc.url, tc.ok, tc.err)
		}
	}
}

// TestHelpAndVersionExit: the built txlogd prints -h's grouped listing to
// stdout and exits 0, as it does --version; a flag it does not know exits 1
// with the listing on stderr.
func TestHelpAndVersionExit(t *testing.T) {
	bin := txlogdBinary(t)
	for _, tc := range []struct {
		args     []string
		code     int
		stdout   []string // each must appear
		stderr   string   // must appear; "" for an empty stderr
		noStdout bool
	}{
		{[]string{"-h"}, 0, []string{"usage: txlogd", "\ncluster:\n", "\nstorage:\n", "\nnetwork:\n", "\nsecurity:\n", "\ntuning:\n", "txlogd --version", "txlogd --healthcheck URL"}, "", false},
		{[]string{"--help"}, 0, []string{"\ncluster:\n  -cluster", "  -config string", "or as a key of\n--config FILE"}, "", false},
		{[]string{"-help-testing"}, 0, []string{"testing only", "-raft-dial"}, "", false},
		{[]string{"--version"}, 0, []string{"txlogd ", "revision "}, "", false},
		{[]string{"--id", "n1", "--version"}, 0, []string{"txlogd "}, "", false},
		{[]string{"--no-such-flag"}, 1, nil, "flag provided but not defined: -no-such-flag", true},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr strings.Builder
			cmd := exec.Command(bin, tc.args...)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := 0
			if ee, ok := errors.AsType[*exec.ExitError](err); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code {
				t.Errorf("exit status %d, want %d; stderr: %s", code, tc.code, stderr.String())
			}
			for _, want := range tc.stdout {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
				}
			}
			if tc.noStdout && stdout.Len() > 0 {
				t.Errorf("stdout = %q, want nothing", stdout.String())
			}
			if tc.stderr == "" && stderr.Len() > 0 || !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("stderr = %q, want %q", stderr.String(), tc.stderr)
			}
		})
	}
}
