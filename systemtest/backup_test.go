package systemtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/launcher"
	"github.com/txlog/txlog/store"
)

// fetchBackup saves GET base/v1/backup to path.
func fetchBackup(ctx context.Context, t *testing.T, base, path string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/backup", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /v1/backup: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET /v1/backup: %s %s", resp.Status, b)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		t.Fatalf("read /v1/backup: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// startExtraNode starts a txlogd outside any launcher.Cluster, with its own
// loopback ports, data dir dir/id and args (a --restore or a --join); it is
// killed when the test ends.
func startExtraNode(t *testing.T, dir, id string, args ...string) *launcher.Process {
	t.Helper()
	ports, err := launcher.FreePorts("127.0.0.1", 1)
	if err != nil {
		t.Fatal(err)
	}
	raftAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	dataDir := filepath.Join(dir, id)
	return startProcess(t, launcher.ProcessConfig{
		ID: id, DataDir: dataDir, LogDir: dir,
		Args: append([]string{"--id=" + id, "--data-dir=" + dataDir, "--http-addr=127.0.0.1:0", "--raft-addr=" + raftAddr, "--shutdown-timeout=3s"}, args...),
	})
}

// TestBackupRestore takes a backup from a follower while clients write,
// restores it into a new three-node cluster (one node restored, two joined)
// and checks that the new cluster has the same log up to the backup's index,
// the same values and versions, the dedup tables (a resubmitted
// idempotency key is a duplicate), the leases (a new token is above the old
// ones), the consumer offsets, and txids past the backup's.
func TestBackupRestore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := startCluster(t)
	cl := client.NewClient(client.ClientConfig{Endpoints: c.HTTPAddrs()})
	put := func(key, value, idem string) wire.TxResult {
		t.Helper()
		// 30 s: a slow fsync on a loaded machine must not park the write (202).
		res, err := cl.Submit(ctx, wire.TxRequest{IdempotencyKey: idem, Ops: []wire.Op{{Op: "put", Key: key, Value: json.RawMessage(value)}}}, wire.SubmitOptions{Timeout: 30 * time.Second})
		if err != nil || res.Status != "committed" {
			t.Fatalf("Submit(%s) = %+v, %v", key, res, err)
		}
		return res
	}
	const keys = 50
	firsts := map[string]wire.TxResult{}
	for round := range 3 {
		for i := range keys {
			k := "b/" + strconv.Itoa(i)
			idem := fmt.Sprintf("idem-%d-%d", round, i)
			firsts[idem] = put(k, strconv.Itoa(round*100+i), idem)
		}
	}
	lease, err := cl.AcquireLease(ctx, "backup-lease", "holder-1", time.Minute)
	if err != nil || !lease.Acquired {
		t.Fatalf("AcquireLease() = %+v, %v", lease, err)
	}
	offset, err := cl.CommitOffset(ctx, "backup-group", 42, nil)
	if err != nil || offset.Status != "committed" {
		t.Fatalf("CommitOffset() = %+v, %v", offset, err)
	}

	// A write load through every node while the backup is taken.
	var stop atomic.Bool
	var loadN atomic.Int64
	var loadErr atomic.Pointer[error]
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for n := 0; !stop.Load(); n++ {
				_, err := cl.Submit(ctx, wire.TxRequest{Ops: []wire.Op{{Op: "put", Key: fmt.Sprintf("load/%d/%d", w, n), Value: json.RawMessage(`1`)}}}, wire.SubmitOptions{})
				if err != nil {
					loadErr.Store(&err)
					return
				}
				loadN.Add(1)
			}
		})
	}
	waitUntil(ctx, t, "the load to run", func() bool { return loadN.Load() > 20 })
	leader := mustLeaderID(ctx, t, c)
	follower := aFollower(c, leader)
	dir := t.TempDir()
	file := filepath.Join(dir, "txlog.backup")
	// A follower's backup is its last bbolt commit, up to
	// --store-commit-interval behind what it applied: take one until it
	// holds everything written before the load.
	var h store.BackupHeader
	var during int64
	waitUntil(ctx, t, "a backup that holds the writes before the load", func() bool {
		before := loadN.Load()
		fetchBackup(ctx, t, c.URL(follower), file)
		during = loadN.Load() - before
		if h, err = store.VerifyBackupFile(file, dir); err != nil {
			t.Fatalf("VerifyBackupFile() = %v", err)
		}
		return h.Index >= offset.Index
	})
	stop.Store(true)
	wg.Wait()
	if p := loadErr.Load(); p != nil {
		t.Fatalf("a write of the load failed: %v", *p)
	}
	t.Logf("%d writes committed while the backup was taken", during)
	if h.NodeID != follower || h.Index == 0 || h.MaxTxID == 0 || len(h.Nodes) != 3 {
		t.Fatalf("backup header = %+v, want from %s, an index, a max txid and 3 nodes", h, follower)
	}
	srcLog := readLog(ctx, t, c.URL(follower), h.Index)
	srcKV := map[string]wire.KV{}
	for i := range keys {
		k := "b/" + strconv.Itoa(i)
		kv, err := cl.GetFrom(ctx, c.URL(follower), k, wire.ReadOptions{Consistency: wire.ConsistencyStale})
		if err != nil {
			t.Fatalf("Get(%s) = %v", k, err)
		}
		srcKV[k] = kv
	}

	// Restore into a new cluster: r1 from the file, r2 and r3 join it.
	rdir := t.TempDir()
	r1 := startExtraNode(t, rdir, "r1", "--restore="+file)
	addr, err := r1.HTTPAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r1URL := "http://" + addr
	rcl := client.NewClient(client.ClientConfig{Endpoints: []string{r1URL}, Timeout: 10 * time.Second})
	waitUntil(ctx, t, "r1 leads the restored cluster", func() bool {
		st, err := rcl.ClusterFrom(ctx, r1URL)
		return err == nil && st.State == "leader" && st.AppliedIndex >= h.Index
	})
	urls := []string{r1URL}
	for _, id := range []string{"r2", "r3"} {
		p := startExtraNode(t, rdir, id, "--join="+r1URL)
		a, err := p.HTTPAddr(ctx)
		if err != nil {
			t.Fatal(err)
		}
		urls = append(urls, "http://"+a)
	}
	waitUntil(ctx, t, "three voters", func() bool {
		st, err := rcl.ClusterFrom(ctx, r1URL)
		if err != nil {
			return false
		}
		voters := 0
		for _, m := range st.Members {
			if m.Suffrage == "voter" {
				voters++
			}
		}
		return voters == 3
	})
	rcl = client.NewClient(client.ClientConfig{Endpoints: urls, Timeout: 10 * time.Second})

	// Every new node holds the same log up to the backup's index, and the
	// same values and versions.
	for _, u := range urls {
		got := readLog(ctx, t, u, h.Index)
		var upTo []wire.LogEntry
		for _, e := range got {
			if e.Index <= h.Index {
				upTo = append(upTo, e)
			}
		}
		var want []wire.LogEntry
		for _, e := range srcLog {
			if e.Index <= h.Index {
				want = append(want, e)
			}
		}
		if !reflect.DeepEqual(upTo, want) {
			t.Fatalf("%s: log up to %d has %d entries, the source %d; they differ", u, h.Index, len(upTo), len(want))
		}
		for k, want := range srcKV {
			kv, err := rcl.GetFrom(ctx, u, k, wire.ReadOptions{Consistency: wire.ConsistencyStale})
			if err != nil || kv.Version != want.Version || kv.Index != want.Index || string(kv.Value) != string(want.Value) {
				t.Fatalf("%s: Get(%s) = %+v, %v; the source had %+v", u, k, kv, err, want)
			}
		}
	}

	// Dedup: a resubmitted idempotency key is a duplicate with the first txid.
	res, err := rcl.Submit(ctx, wire.TxRequest{IdempotencyKey: "idem-2-7", Ops: []wire.Op{{Op: "put", Key: "b/7", Value: json.RawMessage("207")}}}, wire.SubmitOptions{})
	if err != nil || !res.Duplicate || res.TxID != firsts["idem-2-7"].TxID || res.Index != firsts["idem-2-7"].Index {
		t.Fatalf("resubmit idem-2-7 = %+v, %v; want a duplicate of %+v", res, err, firsts["idem-2-7"])
	}
	// Leases: the lease is there with its token, and a new one gets a larger one.
	l, err := rcl.Lease(ctx, "backup-lease", 0, 0)
	if err != nil || l.Token != lease.Token || l.Holder != "holder-1" {
		t.Fatalf("Lease() = %+v, %v; want token %d of holder-1", l, err, lease.Token)
	}
	l2, err := rcl.AcquireLease(ctx, "backup-lease-2", "holder-2", time.Minute)
	if err != nil || !l2.Acquired || l2.Token <= h.Index || l2.Token <= lease.Token {
		t.Fatalf("AcquireLease(new) = %+v, %v; want a token above %d", l2, err, h.Index)
	}
	// Consumer offsets.
	g, err := rcl.Consumer(ctx, "backup-group")
	if err != nil || g.Offset != 42 {
		t.Fatalf("Consumer() = %+v, %v; want offset 42", g, err)
	}
	// New txids come after every txid in the backup, and new indexes after its index.
	// 30 s, as in put above.
	nres, err := rcl.Submit(ctx, wire.TxRequest{Ops: []wire.Op{{Op: "put", Key: "after", Value: json.RawMessage("1")}}}, wire.SubmitOptions{Timeout: 30 * time.Second})
	if err != nil || nres.Status != "committed" || uint64(nres.TxID) <= h.MaxTxID || nres.Index <= h.Index {
		t.Fatalf("Submit() after restore = %+v, %v; want a txid above %d and an index above %d", nres, err, h.MaxTxID, h.Index)
	}
	// The restored cluster has a cluster ID of its own.
	st, err := rcl.ClusterFrom(ctx, r1URL)
	if err != nil || st.ClusterID == "" || st.ClusterID == h.ClusterID {
		t.Fatalf("restored cluster id %q, %v; the backup's %q", st.ClusterID, err, h.ClusterID)
	}
}

// TestBackupRestoreRefused checks that a restore into a data directory that
// holds anything is refused, and that a backup with one byte flipped is
// refused by the check and by a restore, which leaves the data dir empty.
func TestBackupRestoreRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := startCluster(t)
	cl := client.NewClient(client.ClientConfig{Endpoints: c.HTTPAddrs()})
	for i := range 20 {
		if _, err := cl.Submit(ctx, wire.TxRequest{Ops: []wire.Op{{Op: "put", Key: "r/" + strconv.Itoa(i), Value: json.RawMessage(`"x"`)}}}, wire.SubmitOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "good.backup")
	fetchBackup(ctx, t, c.URL(c.Nodes()[0].ID()), file)
	if _, err := store.VerifyBackupFile(file, dir); err != nil {
		t.Fatalf("VerifyBackupFile(good) = %v", err)
	}

	expectRefused := func(name, dataDir, backup, want string) {
		t.Helper()
		p := startExtraNode(t, filepath.Dir(dataDir), filepath.Base(dataDir), "--restore="+backup)
		wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
		defer wcancel()
		err := p.Wait(wctx)
		var ee interface{ ExitCode() int }
		if !errors.As(err, &ee) || ee.ExitCode() == 0 {
			t.Fatalf("%s: txlogd --restore ended with %v, want a non-zero exit", name, err)
		}
		if tail := p.LogTail(20); !strings.Contains(tail, want) {
			t.Fatalf("%s: the log does not say %q:\n%s", name, want, tail)
		}
	}

	// A data dir that holds anything.
	full := filepath.Join(t.TempDir(), "full")
	if err := os.MkdirAll(full, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(full, "something"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	expectRefused("non-empty dir", full, file, "not empty")

	// One flipped byte, in the header, the body and the checksum.
	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []int{20, len(good) / 2, len(good) - 1} {
		bad := append([]byte(nil), good...)
		bad[at] ^= 0x40
		path := filepath.Join(dir, fmt.Sprintf("bad-%d.backup", at))
		if err := os.WriteFile(path, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := store.VerifyBackupFile(path, dir); !errors.Is(err, store.ErrBadBackup) {
			t.Fatalf("VerifyBackupFile(byte %d flipped) = %v, want ErrBadBackup", at, err)
		}
		dataDir := filepath.Join(t.TempDir(), fmt.Sprintf("bad%d", at))
		expectRefused(fmt.Sprintf("byte %d flipped", at), dataDir, path, "bad backup")
		entries, _ := os.ReadDir(dataDir)
		if len(entries) != 0 {
			t.Fatalf("byte %d flipped: the refused restore left %d entries in the data dir", at, len(entries))
		}
	}
}

// TestScheduledBackups runs every node with --backup-dir under a write
// load: each keeps its newest two backups (three for the moment between a
// new one's rename and the oldest's removal), every file with a backup's name
// verifies, the oldest rotate out, and after a SIGKILL (mid-write or not)
// the files left verify and the node's leftover temporary file goes at its
// next round.
func TestScheduledBackups(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bdir := t.TempDir()
	c := startClusterWith(t, "--backup-dir="+bdir, "--backup-interval=200ms", "--backup-keep=2")
	cl := client.NewClient(client.ClientConfig{Endpoints: c.HTTPAddrs()})
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for n := 0; !stop.Load() && ctx.Err() == nil; n++ {
			cl.Submit(ctx, wire.TxRequest{Ops: []wire.Op{{Op: "put", Key: fmt.Sprintf("s/%d", n), Value: json.RawMessage(`"0123456789"`)}}}, wire.SubmitOptions{})
		}
	})
	defer func() { stop.Store(true); wg.Wait() }()

	backups := func(id string) []string {
		names, _ := filepath.Glob(filepath.Join(bdir, "txlog-"+id+"-*.backup"))
		return names
	}
	verifyAll := func() {
		t.Helper()
		names, _ := filepath.Glob(filepath.Join(bdir, "txlog-*.backup"))
		for _, name := range names {
			if _, err := store.VerifyBackupFile(name, t.TempDir()); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("%s: %v", filepath.Base(name), err)
			}
		}
	}
	var first string
	waitUntil(ctx, t, "two backups of every node", func() bool {
		for _, p := range c.Nodes() {
			if len(backups(p.ID())) < 2 {
				return false
			}
		}
		first = backups("n1")[0]
		return true
	})
	// A new backup is renamed into place before the oldest is removed, so
	// for a moment a node has keep+1; never more, and it settles at keep.
	waitUntil(ctx, t, "n1's oldest backup rotated out and n1 back at 2", func() bool {
		names := backups("n1")
		if len(names) > 3 {
			t.Fatalf("n1 keeps %d backups, want at most 2 (3 between a rename and its prune)", len(names))
		}
		return len(names) == 2 && names[0] != first
	})
	verifyAll()

	// SIGKILL n1 a few times while it writes backups.
	for range 3 {
		if err := c.Kill("n1"); err != nil {
			t.Fatal(err)
		}
		verifyAll()
		if err := c.Restart(ctx, "n1"); err != nil {
			t.Fatal(err)
		}
		before := backups("n1")
		waitUntil(ctx, t, "n1 writes a backup again", func() bool {
			names := backups("n1")
			return len(names) > 0 && (len(before) == 0 || names[len(names)-1] != before[len(before)-1])
		})
	}
	waitUntil(ctx, t, "no temporary file of n1 left", func() bool {
		names, _ := filepath.Glob(filepath.Join(bdir, ".tmp-n1-*"))
		return len(names) == 0 || len(names) == 1 // at most the one being written
	})
	verifyAll()
}

// TestBackupMeasure measures, when TXLOG_BACKUP_MEASURE_N is set (it is a
// measurement, not a check): the time and size of a backup of a store of N
// transactions, the time a restore takes until the node leads with the
// state, and the write throughput while backups are taken back to back
// from a follower against the same run without.
func TestBackupMeasure(t *testing.T) {
	total, _ := strconv.Atoi(os.Getenv("TXLOG_BACKUP_MEASURE_N"))
	if total <= 0 {
		t.Skip("set TXLOG_BACKUP_MEASURE_N to measure")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	c := startCluster(t)
	cl := client.NewClient(client.ClientConfig{Endpoints: c.HTTPAddrs(), Timeout: time.Minute})
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range 8 {
		wg.Go(func() {
			for {
				from := next.Add(100) - 100
				if from >= int64(total) {
					return
				}
				var txs []wire.TxRequest
				for i := from; i < min(from+100, int64(total)); i++ {
					txs = append(txs, wire.TxRequest{Ops: []wire.Op{{Op: "put", Key: "m/" + strconv.FormatInt(i, 10), Value: json.RawMessage(`"value-0123456789"`)}}})
				}
				if _, err := cl.SubmitBatch(ctx, txs, wire.SubmitOptions{}); err != nil {
					t.Errorf("SubmitBatch: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	t.Logf("loaded %d transactions in %v", total, time.Since(start))

	load := func(d time.Duration, during func(stop *atomic.Bool)) float64 {
		var n atomic.Int64
		var stop atomic.Bool
		var lw sync.WaitGroup
		for range 8 {
			lw.Go(func() {
				for !stop.Load() {
					if _, err := cl.Submit(ctx, wire.TxRequest{Ops: []wire.Op{{Op: "put", Key: "w/" + strconv.FormatInt(n.Add(1), 10), Value: json.RawMessage(`1`)}}}, wire.SubmitOptions{}); err != nil {
						t.Errorf("Submit: %v", err)
						return
					}
				}
			})
		}
		var bw sync.WaitGroup
		if during != nil {
			bw.Go(func() { during(&stop) })
		}
		time.Sleep(d) // the measurement's length, not a wait for a condition
		stop.Store(true)
		lw.Wait()
		bw.Wait()
		return float64(n.Load()) / d.Seconds()
	}
	leader := mustLeaderID(ctx, t, c)
	follower := c.URL(aFollower(c, leader))
	dir := t.TempDir()
	file := filepath.Join(dir, "m.backup")
	bstart := time.Now()
	fetchBackup(ctx, t, follower, file)
	took := time.Since(bstart)
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	vstart := time.Now()
	h, err := store.VerifyBackupFile(file, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("backup of %d transactions (index %d): %d bytes in %v; verify %v", total, h.Index, fi.Size(), took, time.Since(vstart))

	const d = 10 * time.Second
	without := load(d, nil)
	backups := 0
	with := load(d, func(stop *atomic.Bool) {
		for !stop.Load() {
			fetchBackup(ctx, t, follower, filepath.Join(dir, "during.backup"))
			backups++
		}
	})
	t.Logf("write throughput: %.0f tx/s without a backup, %.0f tx/s with %d back-to-back backups from a follower (%.0f%%)", without, with, backups, 100*with/without)

	rstart := time.Now()
	r1 := startExtraNode(t, t.TempDir(), "r1", "--restore="+file)
	addr, err := r1.HTTPAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rcl := client.NewClient(client.ClientConfig{Endpoints: []string{"http://" + addr}})
	waitUntil(ctx, t, "r1 leads the restored cluster", func() bool {
		st, err := rcl.ClusterFrom(ctx, "http://"+addr)
		return err == nil && st.State == "leader" && st.AppliedIndex >= h.Index
	})
	t.Logf("restore of %d transactions: leader with the state %v after the start", total, time.Since(rstart))
}

// TestBackupSecured: on a cluster with TLS and an auth file, GET /v1/backup
// is the admin's alone: a reader, a writer and a scoped reader get 403, a
// certificate without a credential 401, and the admin a whole backup.
func TestBackupSecured(t *testing.T) {
	sc := startSecureCluster(t, 3)
	leader := sc.leader(t)
	follower := (leader + 1) % 3
	for _, tc := range []struct {
		name   string
		c      cred
		status int
	}{
		{"reader", sc.tok(credReader), http.StatusForbidden},
		{"writer", sc.tok(credWriter), http.StatusForbidden},
		{"scoped reader", sc.tok(credAReader), http.StatusForbidden},
		{"no credential", cred{}, http.StatusUnauthorized},
	} {
		if a := sc.do(t, follower, tc.c, req{method: http.MethodGet, path: "/v1/backup"}); a.status != tc.status || bytes.HasPrefix(a.body, []byte("TXLOGBAK")) {
			t.Fatalf("GET /v1/backup as %s = %s, want %d", tc.name, a, tc.status)
		}
	}
	a := sc.do(t, follower, sc.tok(credAdmin), req{method: http.MethodGet, path: "/v1/backup"})
	if a.status != http.StatusOK {
		t.Fatalf("GET /v1/backup as admin = %s", a)
	}
	h, err := store.ReadBackup(bytes.NewReader(a.body), io.Discard)
	if err != nil || h.Index == 0 || h.ClusterID == "" {
		t.Fatalf("the admin's backup: %+v, %v", h, err)
	}
}
