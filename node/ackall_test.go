package node

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/node/peer"
	"github.com/txlog/txlog/peerlink"
	"github.com/txlog/txlog/txid"
)

// fakeVoter serves GET /v1/tx/{txid}?wait= as a voter that has applied the
// entries up to applied: transaction i is at index i. It waits, up to wait,
// for an entry it has not applied, and then answers 404 not_found.
type fakeVoter struct {
	addr     string // its peer address
	srv      *http.Server
	applied  atomic.Uint64
	requests atomic.Int64
}

func newFakeVoter(t *testing.T) *fakeVoter {
	t.Helper()
	v := &fakeVoter{}
	v.addr, v.srv = servePeer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v.requests.Add(1)
		id, err := txid.Parse(strings.TrimPrefix(r.URL.Path, "/v1/tx/"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		wait, _ := time.ParseDuration(r.URL.Query().Get("wait"))
		index := uint64(id)
		for deadline := time.Now().Add(wait); v.applied.Load() < index && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		w.Header().Set("Content-Type", "application/json")
		if v.applied.Load() < index {
			w.WriteHeader(http.StatusNotFound)
			json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": wire.CodeNotFound, "message": "not found"}})
			return
		}
		json.NewEncoder(w).Encode(wire.TxResult{TxID: id, Status: wire.StatusCommitted, Index: index})
	}))
	return v
}

// testCluster is the cluster ID of the peer links of node's unit tests.
var testCluster = peerlink.ClusterID{7}

// newTestLink starts a peer link of testCluster on a loopback port, closed
// with the test.
func newTestLink(t *testing.T, id string) *peerlink.Link {
	t.Helper()
	l, err := peerlink.Listen("127.0.0.1:0", peerlink.Config{NodeID: id, ClusterID: func() peerlink.ClusterID { return testCluster }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// servePeer serves h on the KindHTTP connections of a new peer link and
// returns its address.
func servePeer(t *testing.T, h http.Handler) (string, *http.Server) {
	t.Helper()
	l := newTestLink(t, "voter")
	srv := &http.Server{Handler: h}
	go srv.Serve(l.Listener(peerlink.KindHTTP))
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String(), srv
}

// testPeers returns peers whose client uses a peer link of its own.
func testPeers(t *testing.T) *peers {
	return &peers{client: peer.NewClient(newTestLink(t, "n1"))}
}

// TestAppliedEverywhereCoalesces runs many concurrent ack=all checks against
// two voters that apply late: every check learns that both applied its
// transaction, and each voter gets a few requests, not one per check.
func TestAppliedEverywhereCoalesces(t *testing.T) {
	voters := []*fakeVoter{newFakeVoter(t), newFakeVoter(t)}
	a := &ackAll{peers: testPeers(t)}
	const checks = 60
	var wg sync.WaitGroup
	var yes atomic.Int64
	for i := 1; i <= checks; i++ {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if a.appliedEverywhere(ctx, []string{voters[0].addr, voters[1].addr}, uint64(i), txid.ID(i)) {
				yes.Add(1)
			}
		})
	}
	time.Sleep(50 * time.Millisecond)
	for _, v := range voters {
		v.applied.Store(checks)
	}
	wg.Wait()
	if yes.Load() != checks {
		t.Fatalf("%d of %d checks learnt that every voter applied their transaction", yes.Load(), checks)
	}
	for i, v := range voters {
		if r := v.requests.Load(); r < 1 || r > checks/4 {
			t.Errorf("voter %d got %d requests for %d checks, want a few rounds", i, r, checks)
		}
	}
}

// TestAppliedEverywhereLagging checks that a voter that has not applied a
// transaction by the deadline makes the check fail, that one that cannot be
// reached does too, and that a round's answer covers only what it asked:
// a voter that applied the lower index of two checks in one round does not
// pass the higher one.
func TestAppliedEverywhereLagging(t *testing.T) {
	a := &ackAll{peers: testPeers(t)}
	check := func(base string, index uint64, d time.Duration) bool {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		return a.appliedEverywhere(ctx, []string{base}, index, txid.ID(index))
	}
	v := newFakeVoter(t)
	v.applied.Store(10)
	if !check(v.addr, 10, time.Second) {
		t.Fatal("a voter that applied index 10 failed the check for 10")
	}
	start := time.Now()
	if check(v.addr, 11, 300*time.Millisecond) {
		t.Fatal("a voter at index 10 passed the check for 11")
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("a failing check took %v with a 300ms deadline", d)
	}
	// A check that holds a round until its deadline, so that the next two
	// arrive while it is out and share the next round.
	var wg sync.WaitGroup
	before := v.requests.Load()
	wg.Go(func() { check(v.addr, 12, 200*time.Millisecond) })
	for v.requests.Load() == before {
		time.Sleep(time.Millisecond)
	}
	results := make([]bool, 2)
	for i, index := range []uint64{5, 40} {
		wg.Go(func() { results[i] = check(v.addr, index, 600*time.Millisecond) })
	}
	wg.Wait()
	if results[1] {
		t.Fatal("a voter at index 10 passed the check for 40, asked in one round with 5")
	}
	gone := newTestLink(t, "gone")
	gone.Close()
	if check(gone.Addr().String(), 1, 300*time.Millisecond) {
		t.Fatal("a voter that cannot be reached passed the check")
	}
	if check(v.addr, 1, time.Millisecond) {
		t.Fatal("a check with no time left passed")
	}
}
