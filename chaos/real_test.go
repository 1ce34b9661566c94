package chaos

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/txlog/txlog/launcher"
)

// realTxlogd builds cmd/txlogd once for the tests that need the real node.
var realTxlogd = sync.OnceValues(func() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return launcher.BuildBinaries(ctx, realBinDir)
})

// realBinDir is where realTxlogd puts the binary; TestMain removes it.
var realBinDir string

// needTxlogd returns the real txlogd (realTxlogd), or fails the test.
func needTxlogd(t *testing.T) string {
	t.Helper()
	bin, err := realTxlogd()
	if err != nil {
		t.Fatalf("build txlogd: %v", err)
	}
	return bin
}

// mustFaults returns the fault weights s names (ParseFaults), or fails the
// test.
func mustFaults(t *testing.T, s string) []FaultWeight {
	t.Helper()
	w, err := ParseFaults(s)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// runLocal runs the verifier with cfg, a local cluster of the real txlogd
// (cfg.Bin, needTxlogd) in cfg.Dir, for at most limit, logs how long it took
// with the report's summary, and returns the report and that time. A Run
// error fails the test with the tail of each node's log.
func runLocal(t *testing.T, limit time.Duration, cfg Config) (*Report, time.Duration) {
	t.Helper()
	start := time.Now()
	rep, err := Run(testCtx(t, limit), cfg)
	if err != nil {
		t.Fatalf("Run() = %v\n%s", err, nodeLogTails(cfg.Dir, 15))
	}
	took := time.Since(start)
	t.Logf("run took %v\n%s", took.Round(time.Second), summary(rep))
	return rep, took
}

// nodeLogs are the nodes' logs of a local run, under its dir.
var nodeLogs = []string{"cluster/n1.log", "cluster/n2.log", "cluster/n3.log"}

// nodeLogTails returns the last n lines of each node's log of a local run
// in dir.
func nodeLogTails(dir string, n int) string { return logTails(dir, n, nodeLogs...) }

// logTails returns the last n lines of each of logs, files under dir, each
// under a line that names it.
func logTails(dir string, n int, logs ...string) string {
	var b strings.Builder
	for _, log := range logs {
		b.WriteString("--- " + log + " ---\n" + tailOrErr(filepath.Join(dir, log), n) + "\n")
	}
	return b.String()
}

// fatalWithTails returns a t.Fatalf that first logs logTails(dir, n, logs...).
func fatalWithTails(t *testing.T, dir string, n int, logs ...string) func(format string, args ...any) {
	return func(format string, args ...any) {
		t.Helper()
		t.Log(logTails(dir, n, logs...))
		t.Fatalf(format, args...)
	}
}

// tailOrErr returns the last n lines of the file at path, or why it cannot.
func tailOrErr(path string, n int) string {
	s, err := launcher.TailFile(path, n)
	if err != nil {
		return err.Error()
	}
	return strings.TrimSpace(s)
}
