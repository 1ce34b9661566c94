package launcher

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// TxlogdPackage is the import path of the node daemon that BuildBinaries builds.
const TxlogdPackage = "github.com/txlog/txlog/cmd/txlogd"

// BuildBinaries builds txlogd into outDir with the go command found on PATH and
// returns the binary's path. It must run inside the txlog module (a test's working
// directory is; so is `go run ./cmd/txlog` from the source tree). go's build cache
// makes a second call cheap.
func BuildBinaries(ctx context.Context, outDir string) (txlogdPath string, err error) {
	outDir, err = filepath.Abs(outDir)
	if err != nil {
		return "", fmt.Errorf("build txlogd: %w", err)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", fmt.Errorf("build txlogd: %w", err)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("build txlogd: %w", err)
	}
	out := filepath.Join(outDir, "txlogd")
	cmd := exec.CommandContext(ctx, goBin, "build", "-o", out, TxlogdPackage)
	var stderr bytes.Buffer
	cmd.Stdout = &stderr
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build txlogd: go build %s: %w: %s", TxlogdPackage, err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
