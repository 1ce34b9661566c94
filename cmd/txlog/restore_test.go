package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/launcher"
	"github.com/txlog/txlog/launcher/launchertest"
	"github.com/txlog/txlog/store"
)

// restoreNode starts a real txlogd with data dir dir/id, its HTTP port
// chosen by the node, and args; it is killed when the test ends.
func restoreNode(t *testing.T, bin, dir, id, raftAddr string, args ...string) string {
	t.Helper()
	dataDir := filepath.Join(dir, id)
	p, err := launcher.NewProcess(launcher.ProcessConfig{
		ID: id, Bin: bin, DataDir: dataDir, LogDir: dir,
		Args: append([]string{"--id=" + id, "--data-dir=" + dataDir, "--http-addr=127.0.0.1:0", "--raft-addr=" + raftAddr, "--shutdown-timeout=3s"}, args...),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- %s log tail:\n%s", id, p.LogTail(40))
		}
		p.Kill()
	})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	addr, err := p.HTTPAddr(ctx)
	if err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	return "http://" + addr
}

// logUpTo returns the log entries of the node at base with an index of at
// most upTo, once it has applied upTo.
func logUpTo(ctx context.Context, t *testing.T, base string, upTo uint64) []wire.LogEntry {
	t.Helper()
	cl := client.NewClient(client.ClientConfig{Endpoints: []string{base}})
	launchertest.WaitFor(ctx, t, base+" to apply the backup's index", func() bool {
		st, err := cl.ClusterFrom(ctx, base)
		return err == nil && st.AppliedIndex >= upTo
	})
	var all []wire.LogEntry
	for from := uint64(1); from <= upTo; {
		page, err := cl.Log(ctx, from, 1000)
		if err != nil {
			t.Fatalf("Log(%s, %d) = %v", base, from, err)
		}
		for _, e := range page.Entries {
			if e.Index <= upTo {
				all = append(all, e)
			}
		}
		if len(page.Entries) == 0 || page.Next <= from {
			break
		}
		from = page.Next
	}
	return all
}

// TestRestoreCommand backs up a real three-node cluster holding data with
// txlog backup, seeds a fresh data dir with txlog restore, starts a real
// txlogd on it (no --restore) and two more that join it, and checks that
// every node has the source's log up to the backup's index, its values
// and versions, and issues txids past the backup's. Bad command lines exit
// 2; a corrupted backup and a non-empty data dir exit 1 and write nothing.
func TestRestoreCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("starts txlogd clusters")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	bin, err := launcher.BuildBinaries(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	src := launchertest.StartCluster(t, launcher.ClusterConfig{Bin: bin})
	targets := strings.Join(src.HTTPAddrs(), ",")
	cl := client.NewClient(client.ClientConfig{Endpoints: src.HTTPAddrs(), Timeout: 10 * time.Second})
	const keys = 20
	var last wire.TxResult
	for round := range 3 { // three versions of each key
		for i := range keys {
			last, err = cl.Submit(ctx, wire.TxRequest{Ops: []wire.Op{{Op: "put", Key: "r/" + strconv.Itoa(i), Value: json.RawMessage(strconv.Itoa(round*100 + i))}}}, wire.SubmitOptions{})
			if err != nil || last.Status != wire.StatusCommitted {
				t.Fatalf("Submit = %+v, %v", last, err)
			}
		}
	}
	for i := 0; i < keys; i += 4 { // and some deleted
		if res, err := cl.Submit(ctx, wire.TxRequest{Ops: []wire.Op{{Op: "delete", Key: "r/" + strconv.Itoa(i)}}}, wire.SubmitOptions{}); err != nil || res.Status != wire.StatusCommitted {
			t.Fatalf("delete = %+v, %v", res, err)
		}
	}
	last, err = cl.Submit(ctx, wire.TxRequest{Ops: []wire.Op{{Op: "put", Key: "r/last", Value: json.RawMessage(`"x"`)}}}, wire.SubmitOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// txlog backup, from a follower: until it holds the last write (a
	// follower's store commits up to --store-commit-interval behind).
	dir := t.TempDir()
	file := filepath.Join(dir, "txlog.backup")
	var h store.BackupHeader
	launchertest.WaitFor(ctx, t, "a backup holding the last write", func() bool {
		if r := runCLI(t, ctx, nil, "backup", "--targets", targets, file); r.code != exitOK {
			t.Fatalf("txlog backup: %+v", r)
		}
		if h, err = store.VerifyBackupFile(file, dir); err != nil {
			t.Fatal(err)
		}
		return h.Index >= last.Index
	})
	srcURL := src.URL(h.NodeID)
	srcLog := logUpTo(ctx, t, srcURL, h.Index)
	if len(srcLog) < 3*keys {
		t.Fatalf("the source's log up to %d has %d entries, want at least %d", h.Index, len(srcLog), 3*keys)
	}
	srcKV := map[string]wire.KV{}
	for i := range keys + 1 {
		k := "r/" + strconv.Itoa(i)
		if i == keys {
			k = "r/last"
		}
		kv, err := cl.GetFrom(ctx, srcURL, k, wire.ReadOptions{Consistency: wire.ConsistencyStale})
		if err != nil && i%4 != 0 {
			t.Fatalf("Get(%s) = %v", k, err)
		}
		srcKV[k] = kv
	}

	// Refused: bad command lines (2), a corrupted backup and a non-empty
	// data dir (1), each leaving no state behind.
	rdir := t.TempDir()
	r1Dir := filepath.Join(rdir, "r1")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no file", []string{"restore", "--data-dir", r1Dir, "--id", "r1"}, exitUsage, "one FILE"},
		{"no data dir", []string{"restore", file, "--id", "r1"}, exitUsage, "--data-dir and --id are required"},
		{"no id", []string{"restore", file, "--data-dir", r1Dir}, exitUsage, "--data-dir and --id are required"},
		{"two files", []string{"restore", file, file, "--data-dir", r1Dir, "--id", "r1"}, exitUsage, "one FILE"},
		{"a bad flag", []string{"restore", file, "--data-dir", r1Dir, "--id", "r1", "--cluster", "x"}, exitUsage, "not defined"},
		{"a missing file", []string{"restore", filepath.Join(dir, "none"), "--data-dir", r1Dir, "--id", "r1"}, exitFailed, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, ctx, nil, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("txlog %s = %+v, want exit %d and %q", strings.Join(tc.args, " "), r, tc.code, tc.want)
			}
			if entries, _ := os.ReadDir(r1Dir); len(entries) > 0 {
				t.Fatalf("a refused restore left %d entries in %s", len(entries), r1Dir)
			}
		})
	}
	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []int{len(good) / 2, len(good) - 3} {
		bad := append([]byte(nil), good...)
		bad[at] ^= 0x04
		badFile := filepath.Join(dir, fmt.Sprintf("bad-%d.backup", at))
		if err := os.WriteFile(badFile, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		r := runCLI(t, ctx, nil, "restore", badFile, "--data-dir", r1Dir, "--id", "r1")
		if r.code != exitFailed || !strings.Contains(r.stderr, badFile) {
			t.Fatalf("restore of a backup with byte %d flipped = %+v, want exit 1 naming the file", at, r)
		}
		if entries, _ := os.ReadDir(r1Dir); len(entries) > 0 {
			t.Fatalf("byte %d flipped: the refused restore left %d entries in %s", at, len(entries), r1Dir)
		}
	}
	full := filepath.Join(rdir, "full")
	if err := os.MkdirAll(full, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(full, "keep"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, ctx, nil, "restore", file, "--data-dir", full, "--id", "r1"); r.code != exitFailed || !strings.Contains(r.stderr, "not empty") {
		t.Fatalf("restore into a non-empty dir = %+v, want exit 1, not empty", r)
	}
	if entries, _ := os.ReadDir(full); len(entries) != 1 {
		t.Fatalf("a refused restore changed the non-empty dir: %d entries", len(entries))
	}

	// txlog restore, then txlogd on the seeded dir without --restore.
	r1Raft := freeAddr(t)
	r := runCLI(t, ctx, nil, "restore", file, "--data-dir", r1Dir, "--id", "r1", "--raft-addr", r1Raft)
	var out struct {
		Index      uint64 `json:"index"`
		ClusterID  string `json:"cluster_id"`
		NodeNumber int    `json:"node_number"`
	}
	if r.code != exitOK || json.Unmarshal([]byte(r.stdout), &out) != nil || out.Index != h.Index || out.ClusterID == "" || out.ClusterID == h.ClusterID || out.NodeNumber == 0 {
		t.Fatalf("txlog restore = %+v, want exit 0 and the backup's index %d under a new cluster id", r, h.Index)
	}
	if r := runCLI(t, ctx, nil, "restore", file, "--data-dir", r1Dir, "--id", "r1", "--raft-addr", r1Raft); r.code != exitFailed || !strings.Contains(r.stderr, "not empty") {
		t.Fatalf("a second restore into the seeded dir = %+v, want exit 1", r)
	}
	r1URL := restoreNode(t, bin, rdir, "r1", r1Raft)
	rcl := client.NewClient(client.ClientConfig{Endpoints: []string{r1URL}, Timeout: 10 * time.Second})
	launchertest.WaitFor(ctx, t, "r1 to lead the restored cluster", func() bool {
		st, err := rcl.ClusterFrom(ctx, r1URL)
		return err == nil && st.State == "leader" && st.AppliedIndex >= h.Index
	})
	urls := []string{r1URL}
	for _, id := range []string{"r2", "r3"} {
		urls = append(urls, restoreNode(t, bin, rdir, id, freeAddr(t), "--join="+r1URL))
	}
	launchertest.WaitFor(ctx, t, "three voters", func() bool {
		st, err := rcl.ClusterFrom(ctx, r1URL)
		voters := 0
		for _, m := range st.Members {
			if m.Suffrage == "voter" {
				voters++
			}
		}
		return err == nil && voters == 3
	})
	rcl = client.NewClient(client.ClientConfig{Endpoints: urls, Timeout: 10 * time.Second})
	for _, u := range urls {
		if got := logUpTo(ctx, t, u, h.Index); !reflect.DeepEqual(got, srcLog) {
			t.Fatalf("%s: the log up to %d has %d entries, the source's %d; they differ", u, h.Index, len(got), len(srcLog))
		}
		for k, want := range srcKV {
			kv, err := rcl.GetFrom(ctx, u, k, wire.ReadOptions{Consistency: wire.ConsistencyStale})
			if want.Version == 0 {
				if err == nil {
					t.Fatalf("%s: Get(%s) = %+v; deleted in the source", u, k, kv)
				}
				continue
			}
			if err != nil || kv.Version != want.Version || kv.Index != want.Index || string(kv.Value) != string(want.Value) {
				t.Fatalf("%s: Get(%s) = %+v, %v; the source had %+v", u, k, kv, err, want)
			}
		}
	}
	res, err := rcl.Submit(ctx, wire.TxRequest{Ops: []wire.Op{{Op: "put", Key: "after", Value: json.RawMessage("1")}}}, wire.SubmitOptions{})
	if err != nil || res.Status != wire.StatusCommitted || uint64(res.TxID) <= h.MaxTxID || res.Index <= h.Index {
		t.Fatalf("Submit after the restore = %+v, %v; want a txid above %d and an index above %d", res, err, h.MaxTxID, h.Index)
	}
}
