package chaos

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// fakeBin is the fakenode binary (testdata/fakenode) that TestMain builds.
var fakeBin string

// helperEnv makes the test binary act as a parent that starts a node and then
// blocks, for TestParentDeathKillsChild. Its value is the fakenode binary.
const helperEnv = "CHAOS_TEST_ORPHAN_HELPER"

// contenderEnv makes the test binary a lease contender (ContenderMain), for
// the lease workload of the tests' runs (testContender).
const contenderEnv = "CHAOS_TEST_CONTENDER"

func TestMain(m *testing.M) {
	if bin := os.Getenv(helperEnv); bin != "" {
		orphanHelper(bin)
		return
	}
	if os.Getenv(contenderEnv) != "" {
		if err := ContenderMain(context.Background(), os.Args[1:], os.Stderr); err != nil {
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
	if out, err := exec.Command("go", "build", "-o", fakeBin, "./testdata/fakenode").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build fakenode: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	realBinDir = filepath.Join(dir, "bin")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// orphanHelper starts a fakenode, prints its PID and waits to be killed.
func orphanHelper(bin string) {
	dir := os.Getenv("CHAOS_TEST_ORPHAN_DIR")
	p, err := NewProcess(ProcessConfig{
		ID: "orphan", Bin: bin, DataDir: filepath.Join(dir, "orphan"), LogDir: dir,
		Args: []string{"--id=orphan", "--data-dir=" + filepath.Join(dir, "orphan"), "--http-addr=127.0.0.1:0", "--raft-addr=127.0.0.1:0"},
	})
	if err == nil {
		err = p.Start()
	}
	if err == nil {
		_, err = p.HTTPAddr(context.Background())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(p.PID())
	p.Wait(context.Background())
	os.Exit(0)
}

// testCtx returns a context that ends with the test or after d.
func testCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}
