package systemtest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/launcher"
)

// TestRecoverLostMajority: a three-node cluster takes acknowledged writes;
// all three stop, and two lose their data directories. The survivor (the
// leader, whose log is the most complete) is started with --recover: it
// rewrites its Raft configuration to itself alone, under a new cluster ID,
// elects itself and commits. Two fresh nodes join it with --join, one under
// a new ID and one under the other lost member's ID. Then the
// hostile case: one of the lost members comes back with its old data
// directory (saved before the wipe) and its old flags. It still holds the old
// cluster ID and the old configuration, in which the survivor is one voter of
// three: the survivor's peer link refuses it ("peer of another cluster", both
// IDs), its term and members do not change, and the old member finds no
// leader. Every acknowledged write, before and after the recovery, is once
// in the logs of the survivor and the two new members.
//
// On the way, --recover is refused on a data directory without Raft state,
// and a second --recover on the survivor is refused, naming the marker.
func TestRecoverLostMajority(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c := startCluster(t)
	if err := c.WaitReady(ctx); err != nil {
		t.Fatalf("WaitReady() = %v", err)
	}
	cl := client.NewClient(client.ClientConfig{Endpoints: c.HTTPAddrs(), Timeout: 10 * time.Second})
	var results []ack
	for i := range 150 {
		results = append(results, blindPut(ctx, cl, int64(i)))
	}
	resolvePending(ctx, t, c, results)
	for _, r := range results {
		if r.err != nil || r.res.Status != wire.StatusCommitted {
			t.Fatalf("write %s = %+v, %v; want committed", r.key, r.res, r.err)
		}
	}
	before, err := cl.ClusterFrom(ctx, c.URL("n1"))
	if err != nil || before.ClusterID == "" {
		t.Fatalf("ClusterFrom(n1) = %+v, %v; want a cluster id", before, err)
	}

	// Stop the followers first, then the leader: it holds every
	// acknowledged write and cannot commit anything after the others left.
	survivor := mustLeaderID(ctx, t, c)
	var lost []string
	for _, p := range c.Nodes() {
		if p.ID() != survivor {
			lost = append(lost, p.ID())
		}
	}
	for _, id := range append(append([]string(nil), lost...), survivor) {
		if err := c.Stop(ctx, id); err != nil {
			t.Fatalf("Stop(%s) = %v", id, err)
		}
	}
	// The hostile case needs lost[0]'s old data: keep a copy, then wipe both.
	saved := filepath.Join(t.TempDir(), "saved")
	if err := os.CopyFS(saved, os.DirFS(c.Node(lost[0]).DataDir())); err != nil {
		t.Fatal(err)
	}
	for _, id := range lost {
		if err := os.RemoveAll(c.Node(id).DataDir()); err != nil {
			t.Fatal(err)
		}
	}

	// --recover on a data directory without Raft state is refused.
	dir := t.TempDir()
	empty := newNode(t, dir, "e1", "--raft-addr="+freeAddr(t), "--recover")
	wantExit(ctx, t, empty, "nothing to recover")

	// The survivor, with its old flags and --recover.
	old := c.Node(survivor)
	recoverArgs := append(old.Args(), "--recover")
	s := ownProcess(t, survivor, old.DataDir(), recoverArgs)
	base := startNode(ctx, t, s)
	cl1 := client.NewClient(client.ClientConfig{Endpoints: []string{base}, Timeout: 10 * time.Second})
	var after wire.ClusterStatus
	waitUntil(ctx, t, survivor+" leads a cluster of one", func() bool {
		after, err = cl1.ClusterFrom(ctx, base)
		return err == nil && after.LeaderID == survivor && len(after.Members) == 1 && after.Members[0].ID == survivor
	})
	if after.ClusterID == "" || after.ClusterID == before.ClusterID {
		t.Fatalf("cluster id after the recovery %q (before %q): want a new one", after.ClusterID, before.ClusterID)
	}
	waitUntil(ctx, t, survivor+" logs the recovery at WARN", func() bool {
		b, err := os.ReadFile(s.LogPath())
		return err == nil && strings.Contains(string(b), `"msg":"raft configuration rewritten to this server alone`) &&
			strings.Contains(string(b), `"msg":"cluster recovered`)
	})
	waitReady(ctx, t, base)
	for i := range 50 {
		results = append(results, blindPut(ctx, cl1, int64(1000+i)))
	}

	// --recover a second time is refused; without it the node starts as it was.
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	again := ownProcess(t, survivor, old.DataDir(), recoverArgs)
	wantExit(ctx, t, again, "recovered the cluster already")
	s = ownProcess(t, survivor, old.DataDir(), old.Args())
	base = startNode(ctx, t, s)
	waitUntil(ctx, t, survivor+" leads again after a plain restart", func() bool {
		st, err := cl1.ClusterFrom(ctx, base)
		return err == nil && st.LeaderID == survivor && len(st.Members) == 1 && st.ClusterID == after.ClusterID
	})
	waitReady(ctx, t, base)

	// Two fresh nodes join it: one under a new ID, one under the ID of the
	// lost member that is not coming back.
	joined := []string{"n4", lost[1]}
	bases := []string{base}
	for _, id := range joined {
		p := newNode(t, dir, id, "--raft-addr="+freeAddr(t), "--join="+base)
		b := startNode(ctx, t, p)
		waitUntil(ctx, t, id+" is a voter", func() bool {
			st, err := cl1.ClusterFrom(ctx, base)
			if err != nil {
				return false
			}
			for _, m := range st.Members {
				if m.ID == id && m.Suffrage == "voter" {
					return true
				}
			}
			return false
		})
		waitReady(ctx, t, b)
		bases = append(bases, b)
	}
	cl3 := client.NewClient(client.ClientConfig{Endpoints: bases, Timeout: 10 * time.Second})
	for i := range 50 {
		results = append(results, blindPut(ctx, cl3, int64(2000+i)))
	}

	// The hostile case: lost[0] comes back with its old data and flags.
	settled, err := cl1.ClusterFrom(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(c.Node(lost[0]).DataDir(), os.DirFS(saved)); err != nil {
		t.Fatal(err)
	}
	ghost := ownProcess(t, lost[0], c.Node(lost[0]).DataDir(), c.Node(lost[0]).Args())
	ghostBase := startNode(ctx, t, ghost)
	waitUntil(ctx, t, survivor+` refuses the old member: "peer of another cluster" with both ids`, func() bool {
		b, _ := os.ReadFile(s.LogPath())
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, `"msg":"peer of another cluster"`) && strings.Contains(line, `"peer":"`+lost[0]+`"`) &&
				strings.Contains(line, before.ClusterID) && strings.Contains(line, after.ClusterID) {
				return true
			}
		}
		return false
	})
	gst, err := cl1.ClusterFrom(ctx, ghostBase)
	if err != nil {
		t.Fatalf("ClusterFrom(old %s) = %v", lost[0], err)
	}
	if gst.LeaderID != "" || gst.ClusterID != before.ClusterID {
		t.Fatalf("old %s: leader %q, cluster id %q; want no leader, the old id %s", lost[0], gst.LeaderID, gst.ClusterID, before.ClusterID)
	}
	for i := range 20 {
		results = append(results, blindPut(ctx, cl3, int64(3000+i)))
	}
	now, err := cl1.ClusterFrom(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	if now.LeaderID != survivor || now.Term != settled.Term || len(now.Members) != 3 {
		t.Fatalf("%s after the old member came back: leader %q, term %d (was %d), %d members; want itself, the same term, 3",
			survivor, now.LeaderID, now.Term, settled.Term, len(now.Members))
	}
	if err := ghost.Stop(ctx); err != nil {
		t.Fatal(err)
	}

	upTo := now.CommitIndex
	logs := map[string][]wire.LogEntry{}
	for i, b := range bases {
		logs[append([]string{survivor}, joined...)[i]] = readLog(ctx, t, b, upTo)
	}
	if err := checkCluster(results, logs); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s recovered alone (cluster %s, was %s); %v joined; old %s refused; %d writes once in every log",
		survivor, after.ClusterID, before.ClusterID, joined, lost[0], len(results))
}

// ownProcess makes a txlogd process with id, dataDir and args, logging into
// a directory of its own, and kills it when the test ends (printing its log
// tail if the test failed). It does not start it.
func ownProcess(t *testing.T, id, dataDir string, args []string) *launcher.Process {
	t.Helper()
	return newProcess(t, launcher.ProcessConfig{ID: id, Args: args, DataDir: dataDir, LogDir: t.TempDir()})
}

// wantExit starts p and checks that it exits non-zero with want in its log.
func wantExit(ctx context.Context, t *testing.T, p *launcher.Process, want string) {
	t.Helper()
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := p.Wait(wctx); err == nil || wctx.Err() != nil {
		t.Fatalf("%s with %v: exit %v; want it to refuse (exit non-zero)", p.ID(), p.Args(), err)
	}
	b, err := os.ReadFile(p.LogPath())
	if err != nil || !strings.Contains(string(b), want) {
		t.Fatalf("%s refused, but its log does not say %q:\n%s", p.ID(), want, p.LogTail(20))
	}
}
