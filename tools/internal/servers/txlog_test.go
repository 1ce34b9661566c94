package servers

import (
	"bytes"
	"context"
	"errors"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

// buildTxlogd builds txlogd from the txlog module, this module's parent.
func buildTxlogd(ctx context.Context, t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "txlogd")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/txlogd")
	cmd.Dir = filepath.Join("..", "..", "..")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("build txlogd: %v\n%s", err, out.String())
	}
	return bin
}

func TestStartTxlog(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a txlogd cluster")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	if _, err := StartTxlog(ctx, filepath.Join(t.TempDir(), "missing"), t.TempDir()); err == nil {
		t.Fatalf("StartTxlog(a missing binary): no error")
	}
	cl, err := StartTxlog(ctx, buildTxlogd(ctx, t), t.TempDir())
	if err != nil {
		t.Fatalf("StartTxlog() = %v", err)
	}
	t.Cleanup(func() { cl.Close(context.Background()) })

	done, stop := context.WithCancel(ctx)
	stop()
	if _, err := WaitTxlog(done, cl); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitTxlog(an ended context) = %v, want context.Canceled", err)
	}
	leader, err := WaitTxlog(ctx, cl)
	if err != nil {
		t.Fatalf("WaitTxlog() = %v", err)
	}
	var ids, urls []string
	var ports []int
	for _, p := range cl.Nodes() {
		ids = append(ids, p.ID())
		u, err := url.Parse(cl.URL(p.ID()))
		if err != nil {
			t.Fatal(err)
		}
		port, _ := strconv.Atoi(u.Port())
		urls, ports = append(urls, cl.URL(p.ID())), append(ports, port)
	}
	if !slices.Contains(ids, leader) {
		t.Fatalf("WaitTxlog() = %q, want one of %v", leader, ids)
	}
	for i := range ports {
		if ports[i] != ports[0]+i {
			t.Fatalf("HTTP ports %v, want a range fixed at the start", ports)
		}
	}
	// A restarted node answers where it did.
	if err := cl.Kill(leader); err != nil {
		t.Fatal(err)
	}
	if err := cl.Restart(ctx, leader); err != nil {
		t.Fatal(err)
	}
	if _, err := WaitTxlog(ctx, cl); err != nil {
		t.Fatalf("WaitTxlog() after a restart = %v", err)
	}
	if got := cl.URL(leader); got != urls[slices.Index(ids, leader)] {
		t.Fatalf("after a restart %s is at %s, want %s", leader, got, urls[slices.Index(ids, leader)])
	}
}
