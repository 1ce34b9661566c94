package chaos

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/launcher"
)

// fakeBin is the fakenode binary (launcher/testdata/fakenode, a stand-in for
// txlogd) that TestMain builds.
var fakeBin string

// contenderEnv makes the test binary a lease contender (ContenderMain), for
// the lease workload of the tests' runs (testChild).
const contenderEnv = "CHAOS_TEST_CONTENDER"

// consumerEnv makes the test binary a consumer process (ConsumerProcMain),
// for the consumer workload of the tests' runs (testChild).
const consumerEnv = "CHAOS_TEST_CONSUMER"

// testChild is the command of a chaos child process in these tests: the
// test binary itself, which TestMain turns into the child env names
// (contenderEnv or consumerEnv).
func testChild(t *testing.T, env string) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{"env", env + "=1", exe}
}

func TestMain(m *testing.M) {
	for env, main := range map[string]func(context.Context, []string, io.Writer) error{contenderEnv: ContenderMain, consumerEnv: ConsumerProcMain} {
		if os.Getenv(env) == "" {
			continue
		}
		if err := main(context.Background(), os.Args[1:], os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "chaos-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fakeBin = filepath.Join(dir, "fakenode")
	if out, err := exec.Command("go", "build", "-o", fakeBin, "github.com/txlog/txlog/launcher/testdata/fakenode").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build fakenode: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	realBinDir = filepath.Join(dir, "bin")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// testCtx returns a context that ends with the test or after d.
func testCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// startFakeCluster starts a cluster of fakenodes (or of cfg.Bin) in a
// temporary dir and closes it when the test ends.
func startFakeCluster(t *testing.T, ctx context.Context, cfg launcher.ClusterConfig) *launcher.Cluster {
	t.Helper()
	if cfg.Bin == "" {
		cfg.Bin = fakeBin
	}
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	c, err := launcher.StartCluster(ctx, cfg)
	if err != nil {
		t.Fatalf("launcher.StartCluster: %v", err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// failWithLogs reports err together with the tail of every node's log.
func failWithLogs(t *testing.T, c *launcher.Cluster, format string, args ...any) {
	t.Helper()
	var b strings.Builder
	for _, p := range c.Nodes() {
		b.WriteString("--- " + p.ID() + " ---\n" + p.LogTail(20) + "\n")
	}
	t.Fatalf(format+"\n%s", append(args, b.String())...)
}
