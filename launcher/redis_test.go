package launcher

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// redisCmd sends one inline command and returns the first line of the answer.
func redisCmd(t *testing.T, addr, cmd string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatalf("dial redis: %v", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte(cmd + "\r\n")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(line, "$") && line != "$-1\r\n" {
		if line, err = r.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	return strings.TrimSpace(line)
}

func TestRedis(t *testing.T) {
	bin := needRedis(t)
	ctx := testCtx(t, time.Minute)
	r, err := StartRedis(ctx, RedisConfig{Bin: bin, Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("StartRedis() = %v", err)
	}
	t.Cleanup(func() { r.Kill() })
	if got := redisCmd(t, r.Addr(), "SET parked yes"); got != "+OK" {
		t.Fatalf("SET = %q", got)
	}

	// Stop and Start keep what Redis acknowledged (AOF, fsync always), on the same address.
	addr := r.Addr()
	if err := r.Stop(ctx); err != nil {
		t.Fatalf("Stop() = %v", err)
	}
	if r.Running() {
		t.Fatal("Running() after Stop")
	}
	if err := r.Start(ctx); err != nil {
		t.Fatalf("Start() = %v", err)
	}
	if r.Addr() != addr {
		t.Fatalf("Addr() = %s after restart, want %s", r.Addr(), addr)
	}
	if got := redisCmd(t, r.Addr(), "GET parked"); got != "yes" {
		t.Fatalf("GET after restart = %q, want yes", got)
	}

	// So does a crash.
	if err := r.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx); err != nil {
		t.Fatalf("Start() after Kill = %v", err)
	}
	if got := redisCmd(t, r.Addr(), "GET parked"); got != "yes" {
		t.Fatalf("GET after a crash = %q, want yes", got)
	}

	// RestartEmpty comes back without data.
	if err := r.RestartEmpty(ctx); err != nil {
		t.Fatalf("RestartEmpty() = %v", err)
	}
	if got := redisCmd(t, r.Addr(), "GET parked"); got != "$-1" {
		t.Fatalf("GET after RestartEmpty = %q, want nil", got)
	}
	if err := r.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// needRedis returns the redis-server on PATH. Without one it skips the test,
// or fails it when the environment variable CI is set.
func needRedis(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath(DefaultRedisBin)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s not found in PATH, and CI is set: install it (Debian package redis-server)", DefaultRedisBin)
		}
		t.Skipf("%s not found in PATH; install it (Debian package redis-server) to run this test", DefaultRedisBin)
	}
	return p
}
