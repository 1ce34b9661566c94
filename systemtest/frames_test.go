package systemtest

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/peerlink"
	"github.com/txlog/txlog/txid"
)

// The frames below are built by hand from the byte diagrams of
// store/codec.go (systemtest does not import store): what a hostile process
// that read the docs would send.

// hostileOp is one op of a hand-made transaction: a put when value is not
// nil, else a delete.
type hostileOp struct {
	key   string
	value []byte
}

// txBytes encodes a transaction of version 1: ver | txid (8) | idemLen (uv) |
// idem | nOps (uv) | ops (kind, flags 0, keyLen (uv), key, [valLen (uv), value]).
func txBytes(id txid.ID, idem string, ops ...hostileOp) []byte {
	b := []byte{1}
	b = binary.BigEndian.AppendUint64(b, uint64(id))
	b = binary.AppendUvarint(b, uint64(len(idem)))
	b = append(b, idem...)
	b = binary.AppendUvarint(b, uint64(len(ops)))
	for _, op := range ops {
		kind := byte(2)
		if op.value != nil {
			kind = 1
		}
		b = append(b, kind, 0)
		b = binary.AppendUvarint(b, uint64(len(op.key)))
		b = append(b, op.key...)
		if op.value != nil {
			b = binary.AppendUvarint(b, uint64(len(op.value)))
			b = append(b, op.value...)
		}
	}
	return b
}

// nodeBytes encodes a node registration: ver | idLen (uv) | id | httpLen
// (uv) | http | raftLen (uv) | raft | txid node (2).
func nodeBytes(id, httpAddr, raftAddr string, number uint16) []byte {
	b := []byte{1}
	for _, s := range []string{id, httpAddr, raftAddr} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return binary.BigEndian.AppendUint16(b, number)
}

// command wraps a payload as a forwarded command: ver | kind | time (8,
// zero: the leader stamps it) | dedup window (varint, 0).
func command(kind byte, payload []byte) []byte {
	b := append([]byte{1, kind}, make([]byte, 8)...)
	b = binary.AppendVarint(b, 0)
	return append(b, payload...)
}

// makeID returns a txid of node number node at t, with sequence seq.
func makeID(t time.Time, node, seq uint16) txid.ID {
	ms := uint64(t.Sub(txid.Epoch).Milliseconds())
	return txid.ID(ms<<(txid.NodeBits+txid.SeqBits) | uint64(node)<<txid.SeqBits | uint64(seq))
}

// sendFrames sends frames to the node whose peer address is raftAddr as node
// from of the cluster with ID cluster ("": a header naming no node) would
// forward them, and returns the
// node's results, one per frame, or the error answer of the whole request.
// It is the one place that knows the route: POST /v1/internal/propose on the
// peer link's internal router.
func sendFrames(ctx context.Context, t *testing.T, raftAddr, cluster, from string, frames ...[]byte) ([]wire.TxResult, *wire.ErrorBody) {
	t.Helper()
	q := url.Values{"fresh": {"true"}, "timeout": {"5s"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+raftAddr+"/v1/internal/propose?"+q.Encode(), bytes.NewReader(wire.EncodeFrames(frames)))
	if err != nil {
		t.Fatal(err)
	}
	// The internal router on the peer link (kind H), as node from: the
	// header names the sender.
	hc := &http.Client{Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return peerDial(ctx, t, raftAddr, cluster, from, peerlink.KindHTTP)
		},
	}}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("propose to %s: %v", raftAddr, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error wire.ErrorBody `json:"error"`
		}
		if err := json.Unmarshal(body, &e); err != nil {
			t.Fatalf("propose to %s: %d %s", raftAddr, resp.StatusCode, body)
		}
		return nil, &e.Error
	}
	var br wire.BatchResponse
	if err := json.Unmarshal(body, &br); err != nil || len(br.Results) != len(frames) {
		t.Fatalf("propose to %s: %s (%v); want %d results", raftAddr, body, err, len(frames))
	}
	return br.Results, nil
}

// TestHostileFrames sends the leader, through the internal propose route,
// each frame a hostile process could forge — a value that is not JSON,
// limits broken, a zero txid, a txid of another member or of no member, one
// far in the future, a sender that is not a member or names none, a
// registration of another node or with another member's number — and checks
// each refused with its code,
// none in any log, the logs of the three nodes identical and every write
// acknowledged before, between and after them present.
func TestHostileFrames(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := startCluster(t)
	leader := mustLeaderID(ctx, t, c)
	leaderURL := c.URL(leader)
	from := aFollower(c, leader)
	cl := client.NewClient(client.ClientConfig{Endpoints: c.HTTPAddrs()})
	var results []ack
	// 30 s: a slow fsync on a loaded machine must not park the write (202).
	long := wire.SubmitOptions{Timeout: 30 * time.Second}
	writeSome := func(round string) {
		for i := range 20 {
			results = append(results, blindPutOpts(ctx, cl, int64(len(results)+i), long))
		}
		for _, a := range results {
			if a.err != nil || a.res.Status != wire.StatusCommitted {
				t.Fatalf("%s: write %s = %+v, %v; want committed", round, a.key, a.res, a.err)
			}
		}
	}
	writeSome("before")
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	// Every member's number, once each has registered it (a member of the
	// bootstrap list takes writes before).
	numbers := map[string]uint16{}
	var clusterID string
	waitUntil(ctx, t, "every member registered", func() bool {
		st, err := cl.ClusterFrom(ctx, leaderURL)
		if err != nil {
			return false
		}
		clusterID = st.ClusterID
		for _, m := range st.Members {
			if m.NodeNumber == 0 {
				return false
			}
			numbers[m.ID] = uint16(m.NodeNumber)
		}
		return len(numbers) == len(st.Members)
	})
	other := aFollower(c, from) // the leader or the third node: another member
	if other == leader {
		for _, p := range c.Nodes() {
			if p.ID() != leader && p.ID() != from {
				other = p.ID()
			}
		}
	}
	past := time.Now().Add(-time.Second)
	seq := uint16(txid.MaxSeq) // far above what a node issues in one millisecond
	own := func() txid.ID { seq--; return makeID(past, numbers[from], seq) }
	put := func(key, value string) hostileOp { return hostileOp{key: key, value: []byte(value)} }
	manyOps := make([]hostileOp, 1001)
	for i := range manyOps {
		manyOps[i] = put(fmt.Sprintf("hostile/many/%d", i), "1")
	}

	cases := []struct {
		name  string
		from  string
		frame []byte
		code  string
	}{
		{"value not JSON", from, command(1, txBytes(own(), "", put("hostile/a", `{not json`))), wire.CodeInvalidJSON},
		{"value with white space", from, command(1, txBytes(own(), "", put("hostile/b", `{ "a": 1 }`))), wire.CodeInvalidJSON},
		{"value not UTF-8", from, command(1, txBytes(own(), "", put("hostile/c", "\"\xff\""))), wire.CodeInvalidUTF8},
		{"value over the body limit", from, command(1, txBytes(own(), "", put("hostile/d", `"`+strings.Repeat("v", 1<<20)+`"`))), wire.CodeInvalidTx},
		{"1001 ops", from, command(1, txBytes(own(), "", manyOps...)), wire.CodeInvalidTx},
		{"key over 1024 bytes", from, command(1, txBytes(own(), "", put(strings.Repeat("k", 1025), "1"))), wire.CodeInvalidTx},
		{"key with U+FFFD", from, command(1, txBytes(own(), "", put("hostile/\uFFFD", "1"))), wire.CodeInvalidUTF8},
		{"idempotency key over 128 bytes", from, command(1, txBytes(own(), strings.Repeat("i", 129), put("hostile/e", "1"))), wire.CodeInvalidTx},
		{"zero txid", from, command(1, txBytes(0, "", put("hostile/f", "1"))), wire.CodeInvalidTx},
		{"txid of another member", from, command(1, txBytes(makeID(past, numbers[other], 4000), "", put("hostile/g", "1"))), wire.CodeInvalidTx},
		{"txid of no member", from, command(1, txBytes(makeID(past, 999, 4000), "", put("hostile/h", "1"))), wire.CodeInvalidTx},
		{"txid an hour ahead", from, command(1, txBytes(makeID(time.Now().Add(time.Hour), numbers[from], 1), "", put("hostile/i", "1"))), wire.CodeNotReady},
		{"sender not a member", "x9", command(1, txBytes(makeID(past, 999, 4000), "", put("hostile/j", "1"))), wire.CodeRemoved},
		{"registration of another node", from, command(2, nodeBytes(other, "127.0.0.1:1", "127.0.0.1:2", numbers[other])), wire.CodeInvalidTx},
		{"registration with another member's number", from, command(2, nodeBytes(from, "127.0.0.1:1", "127.0.0.1:2", numbers[other])), wire.CodeInvalidTx},
		{"not a transaction", from, command(1, []byte{1, 2, 3}), wire.CodeInvalidTx},
		{"lease command", from, command(3, []byte{1}), wire.CodeInvalidTx},
	}
	// Without a sender the whole request is refused (a node of the version
	// before from keeps such writes, parked, instead of dropping them).
	if res, errBody := sendFrames(ctx, t, c.RaftAddr(leader), clusterID, "", command(1, txBytes(own(), "", put("hostile/k", "1")))); errBody == nil || errBody.Code != wire.CodeInvalidParam {
		t.Errorf("no sender: %+v, %+v; want the request refused with invalid_parameter", res, errBody)
	}
	var refused []txid.ID
	for _, tc := range cases {
		res, errBody := sendFrames(ctx, t, c.RaftAddr(leader), clusterID, tc.from, tc.frame)
		if errBody != nil {
			t.Errorf("%s: the whole request refused with %+v, want the frame refused with %s", tc.name, errBody, tc.code)
			continue
		}
		if e := res[0].Error; e == nil || e.Code != tc.code {
			t.Errorf("%s: %+v (error %+v), want refused with %s", tc.name, res[0], e, tc.code)
			continue
		}
		t.Logf("%s: %s: %s", tc.name, res[0].Error.Code, res[0].Error.Message)
		if res[0].TxID != 0 {
			refused = append(refused, res[0].TxID)
		}
	}
	// Each refusal is counted by its code.
	if a := call(ctx, t, http.MethodGet, leaderURL+"/metrics", ""); a.status != http.StatusOK ||
		!strings.Contains(a.body, `txlog_forwarded_refused_total{code="invalid_json"} 2`) ||
		!strings.Contains(a.body, `txlog_forwarded_refused_total{code="removed"} 1`) {
		t.Errorf("the leader's metrics do not count the refusals: %d, %s", a.status, grepLines(a.body, "txlog_forwarded_refused_total"))
	}
	// The node registry is as it was: no registration of another node.
	if st2, err := cl.ClusterFrom(ctx, leaderURL); err != nil {
		t.Fatal(err)
	} else {
		for _, m := range st2.Members {
			if m.HTTPAddr == "127.0.0.1:1" {
				t.Errorf("member %s registered at the hostile address: %+v", m.ID, m)
			}
		}
	}
	writeSome("after")
	logs := checkSettled(ctx, t, c, results)
	for id, log := range logs {
		for _, e := range log {
			for _, op := range e.Ops {
				if strings.HasPrefix(op.Key, "hostile/") || strings.HasPrefix(op.Key, "kkk") {
					t.Errorf("%s's log holds a hostile frame's op at index %d: %+v", id, e.Index, e)
				}
			}
		}
	}
	for _, id := range refused {
		if _, err := cl.Tx(ctx, id, 0); err == nil {
			t.Errorf("refused txid %s is known to the cluster", id)
		}
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestSquattedTxIDs: a process on the peer link that names itself as a
// follower pre-commits, under that follower's txid node number, the txids
// it is about to issue (sequence 0 of every millisecond of the next 3 s).
// Every write sent through that follower meanwhile is still answered 200
// committed with its own versions, and is in every log under the txid it was
// answered with: the follower proposed it again under a fresh txid
// (txlog_txid_reissued_total counts it), never answered it with the
// squatter's entry. The logs of the three nodes stay identical.
func TestSquattedTxIDs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := startCluster(t)
	leader := mustLeaderID(ctx, t, c)
	victim := aFollower(c, leader)
	cl := client.NewClient(client.ClientConfig{Endpoints: c.HTTPAddrs()})
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	var number uint16
	var clusterID string
	waitUntil(ctx, t, victim+" registered", func() bool {
		st, err := cl.ClusterFrom(ctx, c.URL(leader))
		if err != nil {
			return false
		}
		clusterID = st.ClusterID
		for _, m := range st.Members {
			if m.ID == victim {
				number = uint16(m.NodeNumber)
			}
		}
		return number != 0
	})

	// The squat: sequence 0 of each millisecond from start to start+window,
	// all within the leader's clock bound (8 s ahead), in one request; tried
	// again while the leader answers not_ready (it has not yet seen the
	// victim's registration). It starts 4 s ahead: committing its 3,000
	// entries takes seconds on a loaded machine.
	const window = 3 * time.Second
	var start time.Time
	waitUntil(ctx, t, "the squat committed", func() bool {
		start = time.Now().Add(4 * time.Second).Truncate(time.Millisecond)
		var frames [][]byte
		for at := start; at.Before(start.Add(window)); at = at.Add(time.Millisecond) {
			key := fmt.Sprintf("squat/%d", at.UnixMilli())
			frames = append(frames, command(1, txBytes(makeID(at, number, 0), "", hostileOp{key: key, value: []byte("1")})))
		}
		res, errBody := sendFrames(ctx, t, c.RaftAddr(leader), clusterID, victim, frames...)
		if errBody != nil {
			t.Fatalf("the squat was refused whole: %+v", errBody)
		}
		for i, r := range res {
			if r.Error != nil && r.Error.Code == wire.CodeNotReady && i == 0 {
				return false
			}
			if r.Error != nil || r.Status != wire.StatusCommitted {
				t.Fatalf("squat frame %d = %+v (error %+v), want committed", i, r, r.Error)
			}
		}
		return true
	})
	if time.Now().After(start) {
		t.Fatalf("the squat took until %v, past the window's start %v", time.Now(), start)
	}

	// Writes through the victim during the window, one at a time, each in
	// a millisecond of its own: over HTTP, since a client stream would
	// learn the leader and take them there, where the victim's txids are
	// not issued.
	vc := client.NewClient(client.ClientConfig{Endpoints: []string{c.URL(victim)}, HTTPWrites: true})
	var results []ack
	for n := int64(0); time.Now().Before(start.Add(window)); n++ {
		// 30 s, as in TestHostileFrames' writeSome.
		a := blindPutOpts(ctx, vc, n, wire.SubmitOptions{Timeout: 30 * time.Second})
		if a.err != nil || a.res.Status != wire.StatusCommitted {
			t.Fatalf("write %s through %s = %+v, %v; want committed", a.key, victim, a.res, a.err)
		}
		key := fmt.Sprintf("k/%d", n)
		if v := a.res.Versions; len(v) != 1 || v[key] != 1 {
			t.Fatalf("write %s = versions %v, want %s: 1 (its own, not the squatter's)", a.key, v, key)
		}
		results = append(results, a)
	}
	var squatted int
	for _, a := range results {
		if a.res.TxID.Node() == number && a.res.TxID.Time().After(start.Add(-time.Millisecond)) && a.res.TxID.Time().Before(start.Add(window)) && a.res.TxID.Seq() == 0 {
			t.Errorf("write %s answered under the squatted txid %s", a.key, a.res.TxID)
		}
	}
	m := scrapeMetrics(ctx, t, c.URL(victim)+"/metrics")
	if v, ok := m.value("txlog_txid_reissued_total"); !ok || v == 0 {
		t.Errorf("txlog_txid_reissued_total on %s = %v (%v), want > 0: no write met a squatted txid", victim, v, ok)
	} else {
		squatted = int(v)
	}
	t.Logf("%d writes through %s in the squatted window, %d proposed again under a fresh txid", len(results), victim, squatted)
	checkSettled(ctx, t, c, results)
}
