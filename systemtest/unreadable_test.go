package systemtest

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
)

// TestUnreadableRecordOnDisk stops a follower, writes bytes that do not
// decode over one committed record of its store file (state.db, the log
// bucket, with bbolt, as a bad disk would), and starts it again: GET /v1/log,
// its long poll and the SSE stream on that node answer 200 and go on past the
// record, which comes marked unreadable; GET /v1/kv of the key it wrote
// answers unreadable; the node counts it in txlog_unreadable_records_total.
func TestUnreadableRecordOnDisk(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := startCluster(t)
	cl := client.NewClient(client.ClientConfig{Endpoints: c.HTTPAddrs()})
	var index []uint64
	for i := range 5 {
		// 30 s: a slow fsync on a loaded machine must not park the write (202).
		res, err := cl.Submit(ctx, wire.TxRequest{Ops: []wire.Op{{Op: "put", Key: fmt.Sprintf("ur/%d", i), Value: json.RawMessage(fmt.Sprint(i))}}}, wire.SubmitOptions{Timeout: 30 * time.Second})
		if err != nil || res.Status != wire.StatusCommitted {
			t.Fatalf("Submit(%d) = %+v, %v", i, res, err)
		}
		index = append(index, res.Index)
	}
	victim := aFollower(c, mustLeaderID(ctx, t, c))
	waitUntil(ctx, t, "the victim applying every write", func() bool {
		st, err := cl.ClusterFrom(ctx, c.URL(victim))
		return err == nil && st.AppliedIndex >= index[4]
	})
	if err := c.Stop(ctx, victim); err != nil {
		t.Fatal(err)
	}
	bad := index[2]
	path := filepath.Join(c.Node(victim).DataDir(), "state.db")
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		log := tx.Bucket([]byte("log"))
		key := binary.BigEndian.AppendUint64(nil, bad)
		if log == nil || log.Get(key) == nil {
			return fmt.Errorf("no log record at index %d in the victim's store", bad)
		}
		return log.Put(key, []byte{0xff, 0x00, 'x'})
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	// The store opens its file at the last commit its side file names
	// (store/durable.go), which is not this one: without the side file it
	// opens the file as it is.
	if err := os.Remove(path + ".meta"); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(ctx, victim); err != nil {
		t.Fatal(err)
	}
	base := c.URL(victim)
	get := func(path string) []byte {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s = %d %s, want 200", path, resp.StatusCode, body)
		}
		return body
	}
	check := func(what string, e wire.LogEntry) {
		t.Helper()
		if e.Index == bad {
			if !e.Unreadable || e.Status != wire.StatusUnreadable || len(e.Record) != 3 {
				t.Fatalf("%s: entry %d = %+v, want it unreadable with its 3 stored bytes", what, bad, e)
			}
			return
		}
		if e.Unreadable || e.Status != wire.StatusCommitted || len(e.Ops) != 1 {
			t.Fatalf("%s: entry %d = %+v, want a committed put", what, e.Index, e)
		}
	}

	// The restarted node's applied log, read where it is (GET /v1/log reads
	// the node's own state).
	waitUntil(ctx, t, "the restarted victim answering the log", func() bool {
		resp, err := http.Get(base + "/v1/log?from=1&limit=1000")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	var page wire.LogPage
	if err := json.Unmarshal(get("/v1/log?from=1&limit=1000"), &page); err != nil {
		t.Fatal(err)
	}
	seen := map[uint64]bool{}
	for _, e := range page.Entries {
		if e.Index >= index[0] {
			check("GET /v1/log", e)
			seen[e.Index] = true
		}
	}
	for _, i := range index {
		if !seen[i] {
			t.Fatalf("GET /v1/log has no entry %d: %+v", i, page.Entries)
		}
	}
	for _, q := range []string{"", "&wait=5s"} {
		var p wire.LogPage
		if err := json.Unmarshal(get(fmt.Sprintf("/v1/log?from=%d&limit=1%s", bad, q)), &p); err != nil {
			t.Fatal(err)
		}
		if len(p.Entries) != 1 || p.Next != bad+1 {
			t.Fatalf("GET /v1/log?from=%d&limit=1%s = %+v, want the entry and next %d", bad, q, p, bad+1)
		}
		check("paged"+q, p.Entries[0])
	}

	sctx, scancel := context.WithTimeout(ctx, 20*time.Second)
	defer scancel()
	req, _ := http.NewRequestWithContext(sctx, http.MethodGet, fmt.Sprintf("%s%s?from=%d", base, wire.LogStreamPath, bad), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d, want 200", wire.LogStreamPath, resp.StatusCode)
	}
	var streamed []wire.LogEntry
	sc := bufio.NewScanner(resp.Body)
	for len(streamed) < 3 && sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var e wire.LogEntry
			if err := json.Unmarshal([]byte(data), &e); err != nil {
				t.Fatalf("stream event %q: %v", data, err)
			}
			check("stream", e)
			streamed = append(streamed, e)
		}
	}
	if len(streamed) != 3 || streamed[0].Index != bad || streamed[2].Index != index[4] {
		t.Fatalf("stream from %d: %+v (%v), want the bad entry and the two after it", bad, streamed, sc.Err())
	}
	scancel()

	var kv wire.KV
	if err := json.Unmarshal(get("/v1/kv/ur/2?consistency=stale"), &kv); err != nil {
		t.Fatal(err)
	}
	if !kv.Unreadable || string(kv.Value) != "null" || kv.Index != bad {
		t.Fatalf("GET /v1/kv/ur/2 = %+v, want unreadable at index %d", kv, bad)
	}
	var ok wire.KV
	if err := json.Unmarshal(get("/v1/kv/ur/3?consistency=stale"), &ok); err != nil || ok.Unreadable || string(ok.Value) != "3" {
		t.Fatalf("GET /v1/kv/ur/3 = %+v, %v; want its value", ok, err)
	}
	metrics := string(get("/metrics"))
	if !strings.Contains(metrics, "txlog_unreadable_records_total ") || strings.Contains(metrics, "txlog_unreadable_records_total 0\n") {
		t.Fatalf("/metrics: txlog_unreadable_records_total missing or 0")
	}
	for _, name := range []string{"txlog_txid_conflicts_total 0\n", "txlog_txid_reissued_total 0\n"} {
		if !strings.Contains(metrics, name) {
			t.Fatalf("/metrics has no %q", name)
		}
	}
	if !strings.Contains(c.Node(victim).LogTail(200), "unreadable stored record") {
		t.Fatalf("the victim's log has no error record of the unreadable record")
	}
}
