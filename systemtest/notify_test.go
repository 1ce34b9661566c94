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
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/launcher"
	"github.com/txlog/txlog/notify"
)

const webhookSecret = "test-secret"

// cbReceiver is a callback receiver in the test process: it checks each
// request's signature and records the deliveries it answered 2xx, by
// X-Txlog-Delivery, and the attempts, while fail says to answer 500.
type cbReceiver struct {
	t    *testing.T
	fail atomic.Bool
	mu   sync.Mutex
	ok   map[string]wire.Callback // delivery id → body, answered 200
	hits map[string]int           // delivery id → attempts
	seen map[string]time.Time     // delivery id → first attempt
	okAt map[string]time.Time     // delivery id → first 200
	srv  *httptest.Server
}

func newCBReceiver(t *testing.T) *cbReceiver {
	r := &cbReceiver{t: t, ok: map[string]wire.Callback{}, hits: map[string]int{}, seen: map[string]time.Time{}, okAt: map[string]time.Time{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve)) // on 127.0.0.1
	t.Cleanup(r.srv.Close)
	return r
}

func (r *cbReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return
	}
	id := req.Header.Get(notify.HeaderDelivery)
	sig := req.Header.Get(notify.HeaderSignature)
	if !notify.Verify([]byte(webhookSecret), body, sig) {
		r.t.Errorf("delivery %s: signature %q does not verify", id, sig)
	}
	if notify.Verify([]byte("wrong-secret"), body, sig) {
		r.t.Errorf("delivery %s: signature verifies with a wrong secret", id)
	}
	var cb wire.Callback
	if err := json.Unmarshal(body, &cb); err != nil || id == "" {
		r.t.Errorf("delivery %q: body %q: %v", id, body, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hits[id]++
	if _, ok := r.seen[id]; !ok {
		r.seen[id] = time.Now()
	}
	if r.fail.Load() {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	if prev, ok := r.ok[id]; ok && (prev.TxID != cb.TxID || prev.Index != cb.Index || prev.Status != cb.Status) {
		r.t.Errorf("delivery %s: body %+v, before %+v", id, cb, prev)
	}
	r.ok[id] = cb
	if _, ok := r.okAt[id]; !ok {
		r.okAt[id] = time.Now()
	}
}

// waitDelivered polls until every ack's callback was answered 200, and checks
// its body against the ack.
func (r *cbReceiver) waitDelivered(ctx context.Context, t *testing.T, acks []wireAnswer) {
	t.Helper()
	err := launcher.Poll(ctx, 100*time.Millisecond, func(context.Context) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, a := range acks {
			if _, ok := r.ok[wire.CallbackDeliveryID(a.res.Index, a.res.TxID)]; !ok {
				return fmt.Errorf("txid %s (index %d) not delivered; delivered %d of %d", a.res.TxID, a.res.Index, len(r.ok), len(acks))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range acks {
		cb := r.ok[wire.CallbackDeliveryID(a.res.Index, a.res.TxID)]
		if cb.TxID != a.res.TxID || cb.Status != a.res.Status || cb.Index != a.res.Index || cb.IdempotencyKey != a.res.IdempotencyKey ||
			(cb.Status == wire.StatusRejected) != (cb.Conflict != nil) {
			t.Errorf("callback %+v does not match the answer %+v", cb, a.res)
		}
	}
	if len(r.ok) != len(acks) {
		t.Errorf("%d deliveries for %d transactions: %v", len(r.ok), len(acks), r.ok)
	}
}

// decided reports whether a is a committed (200) or rejected (409) answer.
func decided(a wireAnswer) bool {
	return a.status == http.StatusOK && a.res.Status == wire.StatusCommitted ||
		a.status == http.StatusConflict && a.res.Status == wire.StatusRejected
}

// notifyTx is a put of key with a callback to url; with reject set, a delete
// whose if_version cannot hold, so it is rejected.
func notifyTx(key, url string, reject bool) wire.TxRequest {
	tx := wire.TxRequest{IdempotencyKey: key, Notify: &wire.Notify{URL: url}, Ops: []wire.Op{{Op: wire.OpPut, Key: "cb/" + key, Value: json.RawMessage(`1`)}}}
	if reject {
		v := uint64(99)
		tx.Ops = []wire.Op{{Op: wire.OpDelete, Key: "cb/missing", IfVersion: &v}}
	}
	return tx
}

// TestCallbacksSurviveLeaderKill: transactions with notify, committed and
// rejected, are acked by the leader, which is killed with SIGKILL right
// after the acks while the receiver still refuses; the new leader delivers
// every one, each under its delivery id, and a resubmission adds none. A url
// outside --webhook-allow is refused with 400 notify_not_allowed.
func TestCallbacksSurviveLeaderKill(t *testing.T) {
	rcv := newCBReceiver(t)
	rcv.fail.Store(true) // nothing is finished before the kill
	c := startClusterWith(t, "--webhook-allow="+rcv.srv.Listener.Addr().String(), "--webhook-secret="+webhookSecret,
		"--webhook-min-backoff=50ms", "--webhook-max-backoff=500ms")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	base := c.URL(leader)

	if a := postTx(ctx, t, base, notifyTx("refused", "http://localhost:1/x", false), 5*time.Second); a.status != http.StatusBadRequest || a.err == nil || a.err.Code != wire.CodeNotifyNotAllowed {
		t.Fatalf("notify to a host outside the list: %d %+v; want 400 notify_not_allowed", a.status, a.err)
	}

	var acks []wireAnswer
	for i := range 12 {
		a := postTx(ctx, t, base, notifyTx(fmt.Sprintf("k%d", i), rcv.srv.URL+"/hook", i%4 == 3), 5*time.Second)
		if !decided(a) {
			t.Fatalf("tx %d: %d %+v %+v", i, a.status, a.res, a.err)
		}
		acks = append(acks, a)
	}
	// A resubmission is a duplicate and queues no second delivery.
	if a := postTx(ctx, t, base, notifyTx("k0", rcv.srv.URL+"/hook", false), 5*time.Second); !a.res.Duplicate || a.res.TxID != acks[0].res.TxID {
		t.Fatalf("resubmission: %d %+v; want a duplicate of %s", a.status, a.res, acks[0].res.TxID)
	}
	if err := c.Kill(leader); err != nil {
		t.Fatal(err)
	}
	rcv.fail.Store(false)
	next, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if next == leader {
		t.Fatalf("leader %s after its kill", next)
	}
	rcv.waitDelivered(ctx, t, acks)
}

// TestCallbacksOutlastFailingReceiver: a receiver that answers 500 for a
// minute still gets every callback. The minute is the contract's and is not
// shortened; only the backoff cap is (--webhook-max-backoff, a testing
// flag), so that the first attempt after the minute comes within seconds
// rather than the production cap of 5 minutes.
func TestCallbacksOutlastFailingReceiver(t *testing.T) {
	const outage = time.Minute
	rcv := newCBReceiver(t)
	rcv.fail.Store(true)
	c := startClusterWith(t, "--webhook-allow="+rcv.srv.Listener.Addr().String(), "--webhook-secret="+webhookSecret,
		"--webhook-min-backoff=200ms", "--webhook-max-backoff=3s")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Through a follower, so the forward path carries notify too.
	follower := aFollower(c, leader)
	start := time.Now()
	var acks []wireAnswer
	for i := range 5 {
		a := postTx(ctx, t, c.URL(follower), notifyTx(fmt.Sprintf("f%d", i), rcv.srv.URL+"/hook", i == 4), 5*time.Second)
		if !decided(a) {
			t.Fatalf("tx %d: %d %+v %+v", i, a.status, a.res, a.err)
		}
		acks = append(acks, a)
	}
	// The outage ends a minute after the first submit; nothing waits on a
	// sleep: the cbReceiver switches when the timer fires.
	timer := time.AfterFunc(time.Until(start.Add(outage)), func() { rcv.fail.Store(false) })
	defer timer.Stop()
	rcv.waitDelivered(ctx, t, acks)
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	for id, at := range rcv.okAt {
		if at.Sub(start) < outage {
			t.Errorf("delivery %s answered 200 %s after start, inside the outage", id, at.Sub(start))
		}
		if rcv.hits[id] < 3 {
			t.Errorf("delivery %s: %d attempts; want retries through the outage", id, rcv.hits[id])
		}
	}
}

// silentReceiver listens on loopback, accepts every connection and never
// answers: a callback to it times out. It returns its address and the
// number of connections accepted so far.
func silentReceiver(t *testing.T) (string, func() int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String(), func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(conns)
	}
}

// TestCallbacksFairAcrossDestinations: 1,000 committed transactions whose
// callbacks go to a receiver that never answers (each attempt times out
// after 10s), then one whose callback goes to a good receiver: the good one
// is delivered within 6s of its answer (not behind a 10 s attempt timeout),
// with the node's default backoff and bounds. Before the deliverer was fair it read only the 1,000 oldest
// pending deliveries, and the good one waited for as long as they stayed.
func TestCallbacksFairAcrossDestinations(t *testing.T) {
	rcv := newCBReceiver(t)
	silent, accepted := silentReceiver(t)
	c := startClusterWith(t, "--webhook-allow="+silent+","+rcv.srv.Listener.Addr().String(), "--webhook-secret="+webhookSecret)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	base := c.URL(leader)
	txs := make([]wire.TxRequest, 1000)
	for i := range txs {
		txs[i] = notifyTx(fmt.Sprintf("silent%d", i), "http://"+silent+"/cb", false)
	}
	cl := client.NewClient(client.ClientConfig{Endpoints: []string{base}, Timeout: time.Minute})
	// 30 s: a slow fsync on a loaded machine must not park the writes (202).
	res, err := cl.SubmitBatch(ctx, txs, wire.SubmitOptions{Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Status != wire.StatusCommitted {
			t.Fatalf("tx %d: %+v; want committed", i, r)
		}
	}
	// The deliverer is at work on the silent receiver before the good one comes.
	if err := launcher.Poll(ctx, 10*time.Millisecond, func(context.Context) error {
		if accepted() == 0 {
			return errors.New("no attempt at the silent receiver yet")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	a := postTx(ctx, t, base, notifyTx("good", rcv.srv.URL+"/hook", false), 5*time.Second)
	acked := time.Now()
	if !decided(a) {
		t.Fatalf("good tx: %d %+v %+v", a.status, a.res, a.err)
	}
	rcv.waitDelivered(ctx, t, []wireAnswer{a})
	rcv.mu.Lock()
	took := rcv.okAt[wire.CallbackDeliveryID(a.res.Index, a.res.TxID)].Sub(acked)
	rcv.mu.Unlock()
	t.Logf("the good callback arrived %s after its answer; the silent receiver accepted %d connections", took, accepted())
	// Behind the silent receiver's deliveries it would wait out at least one
	// 10 s attempt timeout: 6 s tells the two apart on a loaded machine.
	if took > 6*time.Second {
		t.Fatalf("the good callback arrived %s after its answer, behind 1,000 to a silent receiver; want at most 6s", took)
	}
}

// TestCallbacksConnectCheck: with --webhook-allow naming a receiver by its
// IP and port and another by "localhost" and its port, a notify url for
// another port of the first receiver's IP (named or the default), or for
// localhost on another port, is refused 400 at submit; one for
// "localhost" is accepted (the name matches), but the leader refuses the
// connection, since localhost resolves to loopback and no pattern names the
// IP with that port: the second receiver is never called, and the leader
// logs the refusal.
func TestCallbacksConnectCheck(t *testing.T) {
	rcv := newCBReceiver(t)
	other := newCBReceiver(t)
	_, otherPort, err := net.SplitHostPort(other.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := startClusterWith(t, "--webhook-allow="+rcv.srv.Listener.Addr().String()+",localhost:"+otherPort, "--webhook-secret="+webhookSecret,
		"--webhook-min-backoff=50ms", "--webhook-max-backoff=200ms")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	base := c.URL(leader)
	for _, u := range []string{"http://127.0.0.1:" + otherPort + "/x", "http://localhost:1/x", "https://127.0.0.1/x"} {
		if a := postTx(ctx, t, base, notifyTx("refused", u, false), 5*time.Second); a.status != http.StatusBadRequest || a.err == nil || a.err.Code != wire.CodeNotifyNotAllowed {
			t.Fatalf("notify to %s: %d %+v; want 400 notify_not_allowed", u, a.status, a.err)
		}
	}
	a := postTx(ctx, t, base, notifyTx("by-name", "http://localhost:"+otherPort+"/x", false), 5*time.Second)
	if !decided(a) {
		t.Fatalf("notify to localhost: %d %+v %+v; want committed", a.status, a.res, a.err)
	}
	if err := launcher.Poll(ctx, 50*time.Millisecond, func(context.Context) error {
		b, err := os.ReadFile(c.Node(leader).LogPath())
		if err != nil {
			return err
		}
		if !bytes.Contains(b, []byte("notify: connection refused by --webhook-allow")) {
			return errors.New("the leader has not logged a refused connection")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	other.mu.Lock()
	defer other.mu.Unlock()
	if len(other.hits) != 0 {
		t.Fatalf("the receiver behind localhost was called: %v", other.hits)
	}
}
