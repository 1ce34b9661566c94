package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/launcher"
	"github.com/txlog/txlog/launcher/launchertest"
)

// TestCommandsAgainstCluster runs the operator's commands against a real
// three-node cluster and checks their exit statuses: a commit 0, a failed
// --if-version 3, an accepted write 4; member list, add, remove and a
// member that exists (3); leader transfer; lease acquire, renew and
// release with the default holder; exclusive with its command's status;
// then, with two nodes stopped, status exits 1 naming them and no leader,
// a stale read from the one left comes back within the timeout, and member
// list, lease get/list and consumers answer at once (stale) or say "no
// leader" (linearizable).
func TestCommandsAgainstCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a txlogd cluster")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	bin, err := launcher.BuildBinaries(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cl := launchertest.StartCluster(t, launcher.ClusterConfig{Bin: bin})
	env := map[string]string{targetsEnv: strings.Join(cl.HTTPAddrs(), ","), "USER": "ops", "XDG_CACHE_HOME": t.TempDir()}
	run := func(want int, args ...string) result {
		t.Helper()
		r := runCLI(t, ctx, env, args...)
		if r.code != want {
			t.Fatalf("txlog %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, want, r.stdout, r.stderr)
		}
		return r
	}

	// Writes: committed, rejected, pending. 30 s: a slow fsync on a loaded
	// machine must not park a write that must commit or be rejected (202).
	run(exitOK, "submit", "--timeout", "30s", "greeting", "hello")
	if r := run(exitOK, "get", "--print-value-only", "greeting"); r.stdout != "\"hello\"\n" {
		t.Fatalf("get --print-value-only printed %q", r.stdout)
	}
	r := run(exitRejected, "submit", "--timeout", "30s", "--if-version", "7", "greeting", "again")
	if !strings.Contains(r.stderr, `key "greeting": expected 7, found 1`) {
		t.Fatalf("rejected submit: stderr %q", r.stderr)
	}
	run(exitPending, "submit", "--ack", "accepted", "later", "1")

	// watch prints the changes of a key as they commit, from now on.
	wctx, wcancel := context.WithCancel(ctx)
	var wout syncBuffer
	wc := &cli{stdout: &wout, stderr: &syncBuffer{}, lookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}
	wdone := make(chan error, 1)
	go func() { wdone <- wc.run(wctx, []string{"watch", "--print-value-only", "watched"}) }()
	if err := launcher.Poll(ctx, 50*time.Millisecond, func(ctx context.Context) error {
		run(exitOK, "submit", "--timeout", "30s", "watched/not", "0") // under the key as a prefix: not printed
		run(exitOK, "submit", "--timeout", "30s", "watched", "1")
		if !strings.Contains(wout.String(), "1\n") {
			return fmt.Errorf("watch printed %q", wout.String())
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	wcancel()
	if err := <-wdone; err != nil || strings.Contains(wout.String(), "0") {
		t.Fatalf("watch = %v, printed %q; want only the values of key watched", err, wout.String())
	}

	// Status, members, health.
	run(exitOK, "status")
	run(exitOK, "endpoint", "health")
	var members []wire.Member
	r = run(exitOK, "member", "list", "-o", "json")
	if err := json.Unmarshal([]byte(r.stdout), &members); err != nil || len(members) != 3 {
		t.Fatalf("member list -o json = %s (%v), want 3 members", r.stdout, err)
	}
	if r = run(exitOK, "member", "list"); !strings.HasPrefix(r.stdout, "ID ") || strings.Count(r.stdout, "\n") != 4 {
		t.Fatalf("member list printed:\n%s", r.stdout)
	}
	spare := freeAddr(t)
	run(exitOK, "member", "add", "n4", spare, "--nonvoter")
	if r = run(exitOK, "member", "list"); !strings.Contains(r.stdout, "n4") {
		t.Fatalf("member list after add:\n%s", r.stdout)
	}
	r = run(exitRejected, "member", "add", "n1", freeAddr(t))
	if !strings.Contains(r.stderr, wire.CodeMemberExists) {
		t.Fatalf("add of an existing member: stderr %q", r.stderr)
	}
	run(exitOK, "member", "remove", "n4")
	if r = run(exitOK, "member", "list"); strings.Contains(r.stdout, "n4") {
		t.Fatalf("member list after remove:\n%s", r.stdout)
	}

	// Leadership moves where it is sent.
	old, err := cl.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	to := "n1"
	if old == "n1" {
		to = "n2"
	}
	var tr wire.TransferResult
	r = run(exitOK, "leader", "transfer", to)
	if err := json.Unmarshal([]byte(r.stdout), &tr); err != nil || tr.LeaderID != to {
		t.Fatalf("leader transfer %s printed %s (%v)", to, r.stdout, err)
	}
	if err := launcher.Poll(ctx, 50*time.Millisecond, func(ctx context.Context) error {
		if id, err := cl.Leader(ctx); err != nil || id != to {
			return fmt.Errorf("leader %q (%v), want %s", id, err, to)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	// Leases with the default holder, the same on every call.
	var lr wire.LeaseResult
	r = run(exitOK, "lease", "acquire", "jobs/nightly")
	if err := json.Unmarshal([]byte(r.stdout), &lr); err != nil || !strings.HasPrefix(lr.Holder, "ops@") {
		t.Fatalf("lease acquire printed %s (%v), want the holder ops@HOST", r.stdout, err)
	}
	tok := fmt.Sprint(lr.Token)
	run(exitOK, "lease", "renew", "--token", tok, "jobs/nightly")
	r = run(exitRejected, "lease", "renew", "--holder", "someone-else", "--token", tok, "jobs/nightly")
	if !strings.Contains(r.stderr, "the holder does not match") {
		t.Fatalf("renew by another holder: stderr %q", r.stderr)
	}
	run(exitOK, "lease", "release", "--token", tok, "jobs/nightly")
	if r = run(exitOK, "lease", "list", "-o", "table"); !strings.HasPrefix(r.stdout, "NAME") {
		t.Fatalf("lease list -o table printed:\n%s", r.stdout)
	}

	// exclusive exits with its command's status.
	run(7, "exclusive", "--lease", "jobs/x", "--", "sh", "-c", "exit 7")
	run(exitOK, "exclusive", "--lease", "jobs/x", "--", "true")
	run(exitNotFound, "exclusive", "--lease", "jobs/x", "--", "no-such-command-txlog")

	// Two nodes stopped: no leader.
	var stopped []string
	for _, id := range []string{"n1", "n2", "n3"} {
		if id != "n3" {
			if err := cl.Stop(ctx, id); err != nil {
				t.Fatal(err)
			}
			stopped = append(stopped, cl.URL(id))
		}
	}
	if err := launcher.Poll(ctx, 100*time.Millisecond, func(ctx context.Context) error {
		r = runCLI(t, ctx, env, "status", "--timeout", "1s")
		if r.code != exitFailed || !strings.Contains(r.stderr, "no leader known") {
			return fmt.Errorf("status: exit %d, stderr %q", r.code, r.stderr)
		}
		return nil
	}); err != nil {
		t.Fatalf("status never said no leader: %v", err)
	}
	for _, u := range stopped {
		if !strings.Contains(r.stderr, u) {
			t.Errorf("status stderr %q does not name the stopped node %s", r.stderr, u)
		}
	}
	// Each bound is the --timeout and 3 s of slack for a loaded machine: a
	// command that ignored its timeout would hang (the client retries until
	// its deadline).
	start := time.Now()
	r = run(exitOK, "get", "--consistency", "stale", "--timeout", "2s", "greeting")
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("stale read with two nodes stopped took %v", took)
	}
	start = time.Now()
	r = runCLI(t, ctx, env, "submit", "--timeout", "2s", "nobody", "home")
	took := time.Since(start)
	if r.code == exitOK || r.code == exitUsage || took > 5*time.Second {
		t.Fatalf("submit with no leader: exit %d after %v, want a failure within 5s; stderr %q", r.code, took, r.stderr)
	}
	t.Logf("submit with no leader: exit %d after %v: %s", r.code, took.Round(time.Millisecond), strings.TrimSpace(r.stderr))
	run(exitFailed, "endpoint", "health", "--timeout", "1s")

	// Without a leader the read commands answer at once: member list
	// prints the members as the node left sees them and exits 1 saying
	// so, and the stale reads of leases and consumer groups answer from
	// that node; a linearizable one says "no leader", never a bare 503.
	// --timeout 20s: each must answer well before it.
	quick := func(want int, args ...string) result {
		t.Helper()
		start := time.Now()
		r := runCLI(t, ctx, env, append(args, "--timeout", "20s")...)
		if took := time.Since(start); r.code != want || took > 10*time.Second {
			t.Fatalf("txlog %s with no leader: exit %d after %v, want %d well within --timeout 20s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, took, want, r.stdout, r.stderr)
		}
		if strings.Contains(r.stderr, "503") {
			t.Errorf("txlog %s: stderr names a status, not the cause: %q", strings.Join(args, " "), r.stderr)
		}
		return r
	}
	r = quick(exitFailed, "member", "list", "-o", "json")
	if err := json.Unmarshal([]byte(r.stdout), &members); err != nil || len(members) != 3 || !strings.Contains(r.stderr, "no leader") {
		t.Fatalf("member list with no leader printed %s (%v), stderr %q; want the 3 members and \"no leader\"", r.stdout, err, r.stderr)
	}
	if r = quick(exitFailed, "lease", "get", "--consistency", "stale", "jobs/nightly"); !strings.Contains(r.stderr, `lease "jobs/nightly" not found`) {
		t.Fatalf("stale lease get of a released lease: stderr %q, want it not found", r.stderr)
	}
	quick(exitOK, "lease", "list", "--consistency", "stale")
	quick(exitOK, "consumers", "--consistency", "stale")
	if r = runCLI(t, ctx, env, "lease", "list", "--timeout", "2s"); r.code != exitFailed || !strings.Contains(r.stderr, "no leader") || !strings.Contains(r.stderr, "--consistency stale") {
		t.Fatalf("linearizable lease list with no leader: exit %d, stderr %q; want 1, \"no leader\" and how to read anyway", r.code, r.stderr)
	}
	if r = runCLI(t, ctx, env, "consumers", "--consistency", "sometimes"); r.code != exitUsage {
		t.Fatalf("consumers --consistency sometimes: exit %d, want %d", r.code, exitUsage)
	}
}

// freeAddr returns a loopback address with a port nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
