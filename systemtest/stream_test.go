package systemtest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/launcher"
)

// writeLoad submits puts through all nodes until stop is closed, errors and
// all: the test checks what the log holds, not what the writers heard.
func writeLoad(c *launcher.Cluster, writers int, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	urls := c.HTTPAddrs()
	for w := range writers {
		eps := append(append([]string(nil), urls[w%len(urls):]...), urls[:w%len(urls)]...)
		cl := client.NewClient(client.ClientConfig{Endpoints: eps, Timeout: 5 * time.Second, MaxBackoff: 200 * time.Millisecond})
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				tx := wire.TxRequest{IdempotencyKey: fmt.Sprintf("st-%d-%d", w, n), Ops: []wire.Op{{Op: "put", Key: fmt.Sprintf("s/%d", n%20), Value: json.RawMessage(strconv.Itoa(n))}}}
				ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
				cl.Submit(ctx, tx, wire.SubmitOptions{Timeout: time.Second})
				cancel()
			}
		})
	}
	return &wg
}

// follower returns a node that is not the leader.
func follower(ctx context.Context, t *testing.T, c *launcher.Cluster) string {
	t.Helper()
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatalf("Leader() = %v", err)
	}
	for _, p := range c.Nodes() {
		if p.ID() != leader {
			return p.ID()
		}
	}
	t.Fatal("no follower")
	return ""
}

// indexesOf lists the indexes of entries.
func indexesOf(entries []wire.LogEntry) []uint64 {
	out := make([]uint64, len(entries))
	for i, e := range entries {
		out[i] = e.Index
	}
	return out
}

// TestLogStreamThroughLeaderKills reads the log stream of a follower while
// writers run and the leader is killed (SIGKILL) and restarted twice: the
// stream gives every index of the follower's log exactly once, in order, as
// paging through GET /v1/log gives them at the end.
func TestLogStreamThroughLeaderKills(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	f := follower(ctx, t, c)
	var mu sync.Mutex
	var got []uint64
	fctx, fcancel := context.WithCancel(ctx)
	defer fcancel()
	followDone := make(chan error, 1)
	reader := client.NewClient(client.ClientConfig{Endpoints: []string{c.URL(f)}})
	go func() {
		followDone <- reader.Follow(fctx, 1, "", func(e wire.LogEntry) error {
			mu.Lock()
			got = append(got, e.Index)
			mu.Unlock()
			return nil
		})
	}()
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(got)
	}
	stop := make(chan struct{})
	writers := writeLoad(c, 4, stop)
	for round := range 2 {
		at := count() + 200
		waitUntil(ctx, t, fmt.Sprintf("%d entries on the stream", at), func() bool { return count() >= at })
		leader, err := c.Leader(ctx)
		if err != nil {
			t.Fatalf("Leader() = %v", err)
		}
		if leader == f {
			if _, err := client.NewClient(client.ClientConfig{Endpoints: []string{c.URL(f)}}).TransferLeadership(ctx, wire.TransferRequest{}); err != nil {
				t.Fatalf("TransferLeadership away from %s = %v", f, err)
			}
			if leader, err = c.Leader(ctx); err != nil || leader == f {
				t.Fatalf("Leader() after the transfer = %s, %v", leader, err)
			}
		}
		if err := c.Kill(leader); err != nil {
			t.Fatalf("Kill(%s) = %v", leader, err)
		}
		if _, err := c.Leader(ctx); err != nil {
			t.Fatalf("Leader() after killing %s = %v", leader, err)
		}
		at = count() + 200
		waitUntil(ctx, t, fmt.Sprintf("%d entries after kill %d", at, round+1), func() bool { return count() >= at })
		if err := c.Restart(ctx, leader); err != nil {
			t.Fatalf("Restart(%s) = %v", leader, err)
		}
	}
	close(stop)
	writers.Wait()
	want := indexesOf(readLog(ctx, t, c.URL(f), lastIndex(ctx, t, c)))
	waitUntil(ctx, t, fmt.Sprintf("the stream to reach index %d", want[len(want)-1]), func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) > 0 && got[len(got)-1] >= want[len(want)-1]
	})
	fcancel()
	if err := <-followDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("Follow = %v, want it to run until cancelled", err)
	}
	mu.Lock()
	defer mu.Unlock()
	// A write parked around a kill may commit after want was read: compare
	// what the log held then.
	got = slices.DeleteFunc(got, func(i uint64) bool { return i > want[len(want)-1] })
	if !slices.Equal(got, want) {
		t.Fatalf("the stream gave %d entries, the log of %s holds %d: they differ (first stream %v, log %v)", len(got), f, len(want), got[:min(5, len(got))], want[:min(5, len(want))])
	}
	t.Logf("the stream of %s gave all %d entries, up to index %d", f, len(got), got[len(got)-1])
}

// TestLogStreamResumesAfterRestart stops a follower while a stream reads from
// it, restarts it, and resumes with Last-Event-ID (which takes precedence
// over from): the next event is the entry after the last one read.
func TestLogStreamResumesAfterRestart(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := client.NewClient(client.ClientConfig{Endpoints: c.HTTPAddrs()})
	put := func(n int) {
		tx := wire.TxRequest{Ops: []wire.Op{{Op: "put", Key: fmt.Sprintf("r/%d", n), Value: json.RawMessage("1")}}}
		if _, err := cl.Submit(ctx, tx, wire.SubmitOptions{}); err != nil {
			t.Fatalf("Submit(%d) = %v", n, err)
		}
	}
	for n := range 20 {
		put(n)
	}
	f := follower(ctx, t, c)
	// A stream is open on f when it stops: the graceful stop ends it.
	var last uint64
	fctx, fcancel := context.WithCancel(ctx)
	defer fcancel()
	followDone := make(chan error, 1)
	tenth := make(chan struct{})
	go func() {
		followDone <- client.NewClient(client.ClientConfig{Endpoints: []string{c.URL(f)}}).Follow(fctx, 1, "", func(e wire.LogEntry) error {
			if last++; last == 10 {
				close(tenth)
				<-fctx.Done() // hold the stream open, at entry 10
				return fctx.Err()
			}
			return nil
		})
	}()
	select {
	case <-tenth:
	case <-ctx.Done():
		t.Fatal("no 10 entries on the stream")
	}
	log := indexesOf(readLog(ctx, t, c.URL(f), lastIndex(ctx, t, c)))
	lastID := log[9]
	start := time.Now()
	if err := c.Restart(ctx, f); err != nil {
		t.Fatalf("Restart(%s) = %v", f, err)
	}
	t.Logf("restarted %s in %s with a stream open", f, time.Since(start).Round(time.Millisecond))
	fcancel()
	<-followDone
	for n := 20; n < 30; n++ {
		put(n)
	}
	want := indexesOf(readLog(ctx, t, c.URL(f), lastIndex(ctx, t, c)))
	want = want[slices.Index(want, lastID)+1:]

	req, _ := http.NewRequestWithContext(ctx, "GET", c.URL(f)+wire.LogStreamPath+"?from=1", nil)
	req.Header.Set(wire.HeaderLastEventID, strconv.FormatUint(lastID, 10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET the stream after the restart: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET the stream after the restart = %d", resp.StatusCode)
	}
	var ids []uint64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for len(ids) < len(want) && sc.Scan() {
		if id, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
			v, err := strconv.ParseUint(id, 10, 64)
			if err != nil {
				t.Fatalf("event id %q", id)
			}
			ids = append(ids, v)
		}
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("after Last-Event-ID %d the stream gave %v, want %v", lastID, ids, want)
	}
}
