package systemtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/launcher"
)

// TestAmnesiaLostRaftLog stops a follower of a cluster under load, deletes
// its Raft log (raft/wal, the default raft-wal store, with its term and vote)
// and keeps its store, and restarts it. The node must not start Raft: a node
// that comes back with a store at index N and an empty log would otherwise
// bootstrap again, vote in terms it may have voted in already and take
// entries at indexes its store skips. It answers /readyz and writes with 503
// raft_state_lost and the reason, logs the numbers at Error, and the other
// two go on committing, with every acknowledged write once in their logs.
func TestAmnesiaLostRaftLog(t *testing.T) {
	testAmnesia(t, "raft log", func(t *testing.T, raftDir string) {
		if err := os.RemoveAll(filepath.Join(raftDir, "wal")); err != nil {
			t.Fatal(err)
		}
	})
}

// TestAmnesiaLostStableStore does the same with only the stable store lost:
// the follower's log stays, but its saved term and vote (the stable bucket of
// raft-wal's wal-meta.db) are deleted. Started as it is, it would take term 0
// and could vote a second time in a term it voted in.
func TestAmnesiaLostStableStore(t *testing.T) {
	testAmnesia(t, "stable store", func(t *testing.T, raftDir string) {
		path := filepath.Join(raftDir, "wal", "wal-meta.db")
		db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		err = db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte("stable"))
			if b == nil {
				return errors.New("no stable bucket in wal-meta.db")
			}
			if b.Get([]byte("CurrentTerm")) == nil {
				return errors.New("no CurrentTerm in wal-meta.db")
			}
			for _, k := range []string{"CurrentTerm", "LastVoteTerm", "LastVoteCand"} {
				if err := b.Delete([]byte(k)); err != nil {
					return err
				}
			}
			return nil
		})
		if cerr := db.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatalf("delete the stable store in %s: %v", path, err)
		}
	})
}

func testAmnesia(t *testing.T, missing string, lose func(t *testing.T, raftDir string)) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := startCluster(t)
	leader := mustLeaderID(ctx, t, c)
	victim := aFollower(c, leader)
	var healthy []string
	for _, p := range c.Nodes() {
		if p.ID() != victim {
			healthy = append(healthy, p.ID())
		}
	}

	// A little load through every node, the victim included while it runs:
	// the clients move on to another node when it refuses.
	var (
		next, done atomic.Int64
		stop       = make(chan struct{})
		mu         sync.Mutex
		results    []ack
	)
	var wg sync.WaitGroup
	urls := c.HTTPAddrs()
	for w := range 4 {
		eps := append(append([]string(nil), urls[w%3:]...), urls[:w%3]...)
		cl := client.NewClient(client.ClientConfig{Endpoints: eps, Timeout: 10 * time.Second})
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				a := blindPut(ctx, cl, next.Add(1))
				mu.Lock()
				results = append(results, a)
				mu.Unlock()
				done.Add(1)
			}
		})
	}
	waitDone := func(n int64) {
		t.Helper()
		waitUntil(ctx, t, fmt.Sprintf("%d writes done", n), func() bool { return done.Load() >= n })
	}
	waitDone(200)

	if err := c.Stop(ctx, victim); err != nil {
		t.Fatalf("Stop(%s) = %v", victim, err)
	}
	raftDir := filepath.Join(c.Node(victim).DataDir(), "raft")
	lose(t, raftDir)
	before := done.Load()
	if err := c.Restart(ctx, victim); err != nil {
		t.Fatalf("Restart(%s) = %v", victim, err)
	}
	base := c.URL(victim)

	// It refuses: /readyz and a write answer 503 raft_state_lost, saying what
	// is missing and how to recover, and it keeps running.
	code, body := httpDo(ctx, t, http.MethodGet, base+"/readyz", "")
	wantRefusal(t, "GET /readyz", code, body, wire.CodeNotReady, missing)
	code, body = httpDo(ctx, t, http.MethodPost, base+"/v1/tx", `{"ops":[{"op":"put","key":"amnesia","value":1}]}`)
	wantRefusal(t, "POST /v1/tx", code, body, wire.CodeRaftStateLost, missing)
	code, body = httpDo(ctx, t, http.MethodPost, base+"/v1/tx/batch", `{"txs":[{"ops":[{"op":"put","key":"amnesia","value":1}]}]}`)
	wantRefusal(t, "POST /v1/tx/batch", code, body, wire.CodeRaftStateLost, missing)
	if !c.Node(victim).Running() {
		t.Fatalf("%s exited; want it to stay up and refuse", victim)
	}
	waitUntil(ctx, t, victim+" logs why at ERROR", func() bool {
		b, err := os.ReadFile(c.Node(victim).LogPath())
		return err == nil && strings.Contains(string(b), `"level":"ERROR","msg":"raft state lost`) &&
			strings.Contains(string(b), `"applied_index":`)
	})

	// The other two go on committing.
	waitDone(before + 300)
	close(stop)
	wg.Wait()
	code, body = httpDo(ctx, t, http.MethodGet, base+"/readyz", "")
	wantRefusal(t, "GET /readyz after the load", code, body, wire.CodeNotReady, missing)

	checkSettledOn(ctx, t, c, healthy, results)
	var acked int
	for _, r := range results {
		if r.err == nil {
			acked++
		}
	}
	t.Logf("%s refused (%s lost); %d writes, %d acknowledged, all in the logs of %v", victim, missing, len(results), acked, healthy)

	// The recovery the refusal names: remove the member, empty its data
	// directory (but for the intake WAL and the txid reservation, which
	// carry its unresolved writes and its txids), and start it with --join.
	cl := client.NewClient(client.ClientConfig{Endpoints: []string{c.URL(healthy[0]), c.URL(healthy[1])}})
	if err := cl.Remove(ctx, victim); err != nil {
		t.Fatalf("Remove(%s) = %v", victim, err)
	}
	old := c.Node(victim)
	if err := c.Stop(ctx, victim); err != nil {
		t.Fatalf("Stop(%s) = %v", victim, err)
	}
	for _, name := range []string{"raft", "state.db", "state.db.meta"} {
		if err := os.RemoveAll(filepath.Join(old.DataDir(), name)); err != nil {
			t.Fatal(err)
		}
	}
	p := startProcess(t, launcher.ProcessConfig{ID: victim, Args: rejoinArgs(old, c.URL(healthy[0])), DataDir: old.DataDir(), LogDir: t.TempDir()})
	if _, err := p.HTTPAddr(ctx); err != nil {
		t.Fatal(err)
	}
	waitUntil(ctx, t, victim+" rejoined as a voter", func() bool {
		st, err := cl.ClusterFrom(ctx, c.URL(healthy[0]))
		if err != nil {
			return false
		}
		for _, m := range st.Members {
			if m.ID == victim && m.Suffrage == "voter" {
				return true
			}
		}
		return false
	})
	checkSettledOn(ctx, t, c, append(healthy, victim), results)
	t.Logf("%s removed, emptied and rejoined: its log matches", victim)
}

// wantRefusal checks an answer of a node that refused to start Raft: 503
// with wantCode (/readyz answers not_ready, as always when not ready).
func wantRefusal(t *testing.T, what string, code int, body []byte, wantCode, missing string) {
	t.Helper()
	var e struct {
		Error wire.ErrorBody `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("%s: %d %s: not a JSON error: %v", what, code, body, err)
	}
	if code != http.StatusServiceUnavailable || e.Error.Code != wantCode {
		t.Fatalf("%s = %d %s, want 503 %s", what, code, body, wantCode)
	}
	for _, s := range []string{missing, "applied index", "DELETE /v1/cluster/nodes/", "--join instead of --cluster"} {
		if !strings.Contains(e.Error.Message, s) {
			t.Fatalf("%s: message %q does not say %q", what, e.Error.Message, s)
		}
	}
}

// httpDo sends one request and returns the status and body.
func httpDo(ctx context.Context, t *testing.T, method, url, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, url, err)
	}
	return resp.StatusCode, b
}

// checkSettledOn is checkSettled for the nodes ids only: it resolves the
// writes answered 202, waits until each node is ready, reads its log up to
// the highest commit index among them and checks the logs and results with
// checkCluster.
func checkSettledOn(ctx context.Context, t *testing.T, c *launcher.Cluster, ids []string, results []ack) {
	t.Helper()
	resolvePending(ctx, t, c, results)
	cl := client.NewClient(client.ClientConfig{Endpoints: c.HTTPAddrs()})
	var upTo uint64
	for _, id := range ids {
		waitUntil(ctx, t, id+" is ready", func() bool { return cl.Ready(ctx, c.URL(id)) == nil })
		st, err := cl.ClusterFrom(ctx, c.URL(id))
		if err != nil {
			t.Fatalf("ClusterFrom(%s) = %v", id, err)
		}
		upTo = max(upTo, st.CommitIndex)
	}
	logs := make(map[string][]wire.LogEntry)
	for _, id := range ids {
		logs[id] = readLog(ctx, t, c.URL(id), upTo)
	}
	if err := checkCluster(results, logs); err != nil {
		t.Fatal(err)
	}
}
