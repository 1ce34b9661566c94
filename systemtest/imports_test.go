package systemtest

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImports: the process-level tests depend on neither the server (api,
// api/fastpath) nor node, replication, store or wal (see the package doc): they
// see txlog only as processes. internal/layout checks the package's doc.go
// contract, but only for what the package compiles without its tests.
func TestImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-test", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps -test: %v\n%s", err, out)
	}
	const mod = "github.com/txlog/txlog/"
	// A pattern "p/..." stands for p and every package below it.
	banned := []string{"api", "api/fastpath", "node/...", "replication/...", "store/...", "wal/..."}
	for _, dep := range strings.Fields(string(out)) {
		if dep == mod+"node/parking/redistest" { // the test Redis: launcher.Redis
			continue
		}
		if dep == mod+"store" {
			// The backup tests read backup files (store.VerifyBackupFile,
			// as txlog backup --verify does): the one part of store they
			// use, until the backup format has a package of its own.
			continue
		}
		for _, b := range banned {
			p, sub := strings.CutSuffix(mod+b, "/...")
			if dep == p || sub && strings.HasPrefix(dep, p+"/") {
				t.Errorf("systemtest depends on %s", dep)
			}
		}
	}
}
