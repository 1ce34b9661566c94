package systemtest

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
)

// TestReplaceDeadMember runs the two procedures of docs/deploy.md,
// "Replacing a dead member", with the real txlog binary on a real
// three-node cluster under a writer. A follower is killed and its data dir
// wiped; `txlog member remove` takes it out and a txlogd with the same id,
// an empty data dir and a new Raft address joins with --join. Then the
// other follower is killed and wiped; `txlog member replace` re-points it
// at new addresses, where a txlogd with an empty data dir starts with
// --join. After each, `txlog member list` shows the member as a voter at its
// new address and `txlog endpoint health` passes on the three nodes; at the
// end every acknowledged write is once in the log of the leader and of
// both new members, and the logs are identical.
func TestReplaceDeadMember(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c := startCluster(t)
	txlog := filepath.Join(t.TempDir(), "txlog")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", txlog, "github.com/txlog/txlog/cmd/txlog").CombinedOutput(); err != nil {
		t.Fatalf("go build txlog: %v\n%s", err, out)
	}
	cli := func(targets []string, args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, txlog, append(args, "--targets", strings.Join(targets, ","))...).CombinedOutput()
		return string(out), err
	}
	mustCLI := func(targets []string, args ...string) string {
		t.Helper()
		out, err := cli(targets, args...)
		if err != nil {
			t.Fatalf("txlog %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}

	w := startPutLoad(ctx, t, c.HTTPAddrs(), 3)
	w.more("the start")

	leader := mustLeaderID(ctx, t, c)
	leaderURL := c.URL(leader)
	var followers []string
	for _, p := range c.Nodes() {
		if p.ID() != leader {
			followers = append(followers, p.ID())
		}
	}
	kill := func(id string) {
		t.Helper()
		if err := c.Kill(id); err != nil {
			t.Fatalf("kill %s: %v", id, err)
		}
		if err := os.RemoveAll(c.Node(id).DataDir()); err != nil {
			t.Fatal(err)
		}
	}
	// rejoined waits until the members as the leader lists them have id as a
	// voter at raftAddr, and txlog endpoint health passes on targets.
	rejoined := func(id, raftAddr string, targets []string) {
		t.Helper()
		waitUntil(ctx, t, id+" a voter at "+raftAddr+", and every node healthy", func() bool {
			out, err := cli([]string{leaderURL}, "member", "list", "-o", "json")
			var members []wire.Member
			if err != nil || json.Unmarshal([]byte(out), &members) != nil || len(members) != 3 {
				return false
			}
			for _, m := range members {
				if m.ID == id && (m.RaftAddr != raftAddr || m.Suffrage != "voter") {
					return false
				}
			}
			_, err = cli(targets, "endpoint", "health")
			return err == nil
		})
	}

	// Remove, then join with an empty data dir at a new Raft address.
	gone := followers[0]
	kill(gone)
	mustCLI([]string{leaderURL, c.URL(followers[1])}, "member", "remove", gone)
	raft1 := freeAddr(t)
	dir1 := filepath.Join(t.TempDir(), gone)
	url1 := startNode(ctx, t, ownProcess(t, gone, dir1, []string{"--id=" + gone, "--data-dir=" + dir1,
		"--http-addr=127.0.0.1:0", "--raft-addr=" + raft1, "--join=" + leaderURL, "--shutdown-timeout=3s"}))
	rejoined(gone, raft1, []string{leaderURL, c.URL(followers[1]), url1})
	w.more(gone + " rejoined")

	// Replace: re-point the member, then start it there.
	moved := followers[1]
	kill(moved)
	addrs := freeAddrs(t, 2)
	raft2, http2 := addrs[0], addrs[1]
	mustCLI([]string{leaderURL, url1}, "member", "replace", moved, raft2, "--http-addr", http2)
	dir2 := filepath.Join(t.TempDir(), moved)
	url2 := startNode(ctx, t, ownProcess(t, moved, dir2, []string{"--id=" + moved, "--data-dir=" + dir2,
		"--http-addr=" + http2, "--raft-addr=" + raft2, "--join=" + leaderURL, "--shutdown-timeout=3s"}))
	rejoined(moved, raft2, []string{leaderURL, url1, url2})
	w.more(moved + " replaced")
	results := w.stop()
	resolvePending(ctx, t, c, results)

	cl := client.NewClient(client.ClientConfig{Endpoints: []string{leaderURL}})
	st, err := cl.ClusterFrom(ctx, leaderURL)
	if err != nil {
		t.Fatal(err)
	}
	logs := map[string][]wire.LogEntry{}
	for id, u := range map[string]string{leader: leaderURL, gone: url1, moved: url2} {
		logs[id] = readLog(ctx, t, u, st.CommitIndex)
	}
	if err := checkCluster(results, logs); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s removed and joined again, %s replaced: %d writes acknowledged once in every log of %d entries", gone, moved, w.committed(), len(logs[leader]))
}
