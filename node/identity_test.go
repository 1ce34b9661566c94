package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/dirsync"
	"github.com/txlog/txlog/dirsync/dirsynctest"
)

func cid(b byte) clusterID {
	var c clusterID
	for i := range c {
		c[i] = b
	}
	return c
}

// TestDecideBootstrap: the bootstrap decision of n1, candidate 0x01…, in a
// --cluster of n1, n2, n3, for each kind of answer its peers give.
func TestDecideBootstrap(t *testing.T) {
	cluster := []Peer{{ID: "n1", RaftAddr: "a1"}, {ID: "n2", RaftAddr: "a2"}, {ID: "n3", RaftAddr: "a3"}}
	own, c2, c3 := cid(1), cid(2), cid(3)
	round := roundID([]clusterID{own, c2, c3})
	other := roundID([]clusterID{cid(9), c2, c3}) // the ID of the bootstrap before n1's disk was lost
	empty := func(id string, c clusterID) probeAnswer { return probeAnswer{ID: id, Candidate: c.String()} }
	roundOf := func(cs ...clusterID) []string { return roundStrings(cs) }
	ours, before := roundOf(own, c2, c3), roundOf(cid(9), c2, c3)
	held := func(id string, c, cluster clusterID, round []string) probeAnswer {
		return probeAnswer{ID: id, HasState: true, ClusterID: cluster.String(), Candidate: c.String(), Round: round}
	}
	tests := []struct {
		name    string
		answers map[string]probeAnswer
		want    verdict
		waiting string // verdictWait: the peers named, joined by ","
		holder  string // verdictRefuse
	}{
		{"all empty", map[string]probeAnswer{"n2": empty("n2", c2), "n3": empty("n3", c3)}, verdictBootstrap, "", ""},
		{"none answered", nil, verdictWait, "n2,n3", ""},
		{"one answered", map[string]probeAnswer{"n3": empty("n3", c3)}, verdictWait, "n2", ""},
		{"one bootstrapped this round a moment ago", map[string]probeAnswer{"n2": empty("n2", c2), "n3": held("n3", c3, round, ours)}, verdictBootstrap, "", ""},
		{"one decided this round, no state yet", map[string]probeAnswer{"n2": {ID: "n2", ClusterID: round.String(), Candidate: c2.String(), Round: ours}, "n3": empty("n3", c3)}, verdictBootstrap, "", ""},
		{"both bootstrapped this round", map[string]probeAnswer{"n2": held("n2", c2, round, ours), "n3": held("n3", c3, round, ours)}, verdictBootstrap, "", ""},
		{"one bootstrapped this round, the other silent: take its id", map[string]probeAnswer{"n3": held("n3", c3, round, ours)}, verdictBootstrap, "", ""},
		{"one holds another cluster's state", map[string]probeAnswer{"n2": empty("n2", c2), "n3": held("n3", c3, other, before)}, verdictRefuse, "", "n3"},
		{"both hold the old cluster's state", map[string]probeAnswer{"n2": held("n2", c2, other, before), "n3": held("n3", c3, other, before)}, verdictRefuse, "", "n2"},
		{"holder of another round, the other peer silent: refuse at once", map[string]probeAnswer{"n3": held("n3", c3, other, before)}, verdictRefuse, "", "n3"},
		{"a round with own, under an id that is not that round's", map[string]probeAnswer{"n3": held("n3", c3, other, ours)}, verdictRefuse, "", "n3"},
		{"a round with own, a malformed candidate in it", map[string]probeAnswer{"n3": held("n3", c3, round, append(ours, "zz"))}, verdictRefuse, "", "n3"},
		{"state without a candidate (joined or derived): refuse at once", map[string]probeAnswer{"n3": {ID: "n3", HasState: true, ClusterID: other.String()}}, verdictRefuse, "", "n3"},
		{"state without an id or candidate", map[string]probeAnswer{"n2": empty("n2", c2), "n3": {ID: "n3", HasState: true}}, verdictRefuse, "", "n3"},
		{"state and candidate, no id", map[string]probeAnswer{"n2": empty("n2", c2), "n3": {ID: "n3", HasState: true, Candidate: c3.String()}}, verdictRefuse, "", "n3"},
		{"no state, another cluster's id (a joiner)", map[string]probeAnswer{"n2": empty("n2", c2), "n3": {ID: "n3", ClusterID: other.String(), Candidate: c3.String()}}, verdictRefuse, "", "n3"},
		{"answered as another node", map[string]probeAnswer{"n2": empty("x", c2), "n3": empty("n3", c3)}, verdictWait, `n2 (answered as "x")`, ""},
		{"empty, no candidate", map[string]probeAnswer{"n2": {ID: "n2"}, "n3": empty("n3", c3)}, verdictWait, "n2 (no candidate)", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := decideBootstrap("n1", own, cluster, tt.answers)
			if d.verdict != tt.want {
				t.Fatalf("decideBootstrap() = %+v, want verdict %d", d, tt.want)
			}
			switch d.verdict {
			case verdictBootstrap:
				if d.id != round || !slices.Equal(roundStrings(d.round), ours) {
					t.Fatalf("decideBootstrap() id = %s from %v, want the round's %s from %v", d.id, roundStrings(d.round), round, ours)
				}
			case verdictWait:
				if got := strings.Join(d.waiting, ","); got != tt.waiting {
					t.Fatalf("decideBootstrap() waiting = %q, want %q", got, tt.waiting)
				}
			case verdictRefuse:
				if d.holder != tt.holder {
					t.Fatalf("decideBootstrap() holder = %q, want %q", d.holder, tt.holder)
				}
			}
		})
	}
	t.Run("alone", func(t *testing.T) {
		d := decideBootstrap("n1", own, cluster[:1], nil)
		if d.verdict != verdictBootstrap || d.id != roundID([]clusterID{own}) {
			t.Fatalf("decideBootstrap(one member) = %+v, want bootstrap", d)
		}
	})
}

// TestRoundID: the ID depends on the set of candidates, not their order, and
// changes with any one of them; legacyID likewise with the servers.
func TestRoundID(t *testing.T) {
	a := roundID([]clusterID{cid(1), cid(2), cid(3)})
	if b := roundID([]clusterID{cid(3), cid(1), cid(2)}); a != b {
		t.Fatalf("roundID depends on order: %s != %s", a, b)
	}
	if b := roundID([]clusterID{cid(1), cid(2), cid(4)}); a == b {
		t.Fatalf("roundID ignores a candidate: %s", a)
	}
	s := []Peer{{ID: "n1", RaftAddr: "h:1"}, {ID: "n2", RaftAddr: "h:2"}}
	if legacyID(s) != legacyID([]Peer{s[1], s[0]}) {
		t.Fatal("legacyID depends on order")
	}
	if legacyID(s) == legacyID([]Peer{s[0], {ID: "n2", RaftAddr: "h:3"}}) {
		t.Fatal("legacyID ignores an address")
	}
	if a.isZero() || legacyID(s).isZero() {
		t.Fatal("a zero ID")
	}
}

// TestIDFile: a written ID reads back, the file's name is made durable in its
// directory, a missing file is the zero ID and a damaged one an error that
// names the file.
func TestIDFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, clusterIDFile)
	if id, err := readIDFile(path); err != nil || !id.isZero() {
		t.Fatalf("readIDFile(missing) = %s, %v; want zero, nil", id, err)
	}
	rec := &dirsynctest.Recorder{}
	want := cid(7)
	if err := writeIDFile(path, want, rec.Sync); err != nil {
		t.Fatal(err)
	}
	if !rec.Last(dir)[clusterIDFile] {
		t.Fatalf("the directory was not fsynced with %s in it", clusterIDFile)
	}
	if got, err := readIDFile(path); err != nil || got != want {
		t.Fatalf("readIDFile() = %s, %v; want %s", got, err, want)
	}
	for _, bad := range []string{"", "zz", strings.Repeat("0", 32), strings.Repeat("a", 31), strings.Repeat("g", 32)} {
		if err := os.WriteFile(path, []byte(bad+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := readIDFile(path); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("readIDFile(%q) = %v, want an error naming the file", bad, err)
		}
	}
}

// TestIdentitySet: an ID is set once; the same again is a no-op, another is
// refused, and a reopened identity has it.
func TestIdentitySet(t *testing.T) {
	dir := t.TempDir()
	i, err := openIdentity("n1", dir, slog.New(slog.DiscardHandler), dirsync.Sync)
	if err != nil {
		t.Fatal(err)
	}
	if i.clusterID() != [16]byte{} {
		t.Fatal("a new data dir has a cluster id")
	}
	if err := i.set(cid(5), "test"); err != nil {
		t.Fatal(err)
	}
	if err := i.set(cid(5), "test"); err != nil {
		t.Fatalf("set(same) = %v", err)
	}
	if err := i.set(cid(6), "test"); err == nil {
		t.Fatal("set(another) = nil, want an error")
	}
	j, err := openIdentity("n1", dir, slog.New(slog.DiscardHandler), dirsync.Sync)
	if err != nil || clusterID(j.clusterID()) != cid(5) {
		t.Fatalf("reopened: %s, %v; want %s", clusterID(j.clusterID()), err, cid(5))
	}
}

// fakeLink routes probes between identities in one process, by address; an
// address without an identity does not answer.
type fakeLink struct {
	mu    sync.Mutex
	nodes map[string]*identity
}

func (f *fakeLink) add(addr string, i *identity) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nodes[addr] = i
}

func (f *fakeLink) probe(ctx context.Context, addr string) ([]byte, error) {
	f.mu.Lock()
	i := f.nodes[addr]
	f.mu.Unlock()
	if i == nil {
		return nil, fmt.Errorf("dial %s: connection refused", addr)
	}
	return i.answerProbe("prober"), nil
}

func newTestIdentity(t *testing.T, id string) *identity {
	t.Helper()
	i, err := openIdentity(id, t.TempDir(), slog.New(slog.DiscardHandler), dirsync.Sync)
	if err != nil {
		t.Fatal(err)
	}
	if err := i.ensureCandidate(); err != nil {
		t.Fatal(err)
	}
	return i
}

// TestAwaitBootstrap runs the bootstrap wait of three identities over a
// fake link: started one after another, each answers probes before it has
// heard from its peers, and all three end with the same ID; a member whose
// data dir is lost afterwards is refused with the recovery; one whose peers
// never answer waits until its ctx ends.
func TestAwaitBootstrap(t *testing.T) {
	cluster := []Peer{{ID: "n1", RaftAddr: "a1"}, {ID: "n2", RaftAddr: "a2"}, {ID: "n3", RaftAddr: "a3"}}
	link := &fakeLink{nodes: map[string]*identity{}}
	ids := make([]*identity, 3)
	errs := make(chan error, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for k, p := range cluster {
		ids[k] = newTestIdentity(t, p.ID)
		link.add(p.RaftAddr, ids[k])
		go func() {
			err := ids[k].awaitBootstrap(ctx, cluster, link.probe)
			if err == nil {
				ids[k].hasState.Store(true) // as Raft's bootstrap does
			}
			errs <- err
		}()
		if k == 0 {
			// n1 alone waits: its peers do not answer yet.
			wctx, wcancel := context.WithTimeout(ctx, 3*probeInterval)
			err := newTestIdentity(t, "n1").awaitBootstrap(wctx, cluster, (&fakeLink{}).probe)
			wcancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("awaitBootstrap() with no peer answering = %v, want the deadline", err)
			}
		}
	}
	for range cluster {
		if err := <-errs; err != nil {
			t.Fatalf("awaitBootstrap() = %v", err)
		}
	}
	want := ids[0].clusterID()
	for _, i := range ids {
		if got := i.clusterID(); got != want || got == [16]byte{} {
			t.Fatalf("%s: cluster id %s, want %s", i.self, clusterID(got), clusterID(want))
		}
	}

	// n1's data dir is lost: a new candidate matches nothing n2 and n3 hold.
	wiped := newTestIdentity(t, "n1")
	link.add("a1", wiped)
	err := wiped.awaitBootstrap(ctx, cluster, link.probe)
	if !errors.Is(err, ErrClusterHeld) {
		t.Fatalf("awaitBootstrap() of a wiped member = %v, want ErrClusterHeld", err)
	}
	for _, s := range []string{"--join", "DELETE /v1/cluster/nodes/n1", "restore its data directory", clusterID(want).String()} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("refusal %q does not say %q", err, s)
		}
	}
	if wiped.clusterID() != [16]byte{} {
		t.Fatal("a refused node took a cluster id")
	}

	// n2's is lost too, and n1 has exited: n2 hears only n3, whose round
	// does not hold n2's new candidate, and refuses without waiting for n1.
	link.add("a1", nil)
	wiped2 := newTestIdentity(t, "n2")
	link.add("a2", wiped2)
	if err := wiped2.awaitBootstrap(ctx, cluster, link.probe); !errors.Is(err, ErrClusterHeld) {
		t.Fatalf("awaitBootstrap() of a second wiped member, the first gone = %v, want ErrClusterHeld", err)
	}
}

// FuzzDecodeProbeAnswer: a decoded answer encodes and decodes to itself; bad
// input is an error, never a panic.
func FuzzDecodeProbeAnswer(f *testing.F) {
	f.Add([]byte(`{"id":"n2","has_state":true,"cluster_id":"0102030405060708090a0b0c0d0e0f10","candidate":"ffeeddccbbaa99887766554433221100"}`))
	f.Add([]byte(`{"id":"n1","has_state":false,"cluster_id":"","candidate":""}`))
	f.Add([]byte(`{"id":"n3","has_state":true,"cluster_id":"0102030405060708090a0b0c0d0e0f10","candidate":"ffeeddccbbaa99887766554433221100","round":["ffeeddccbbaa99887766554433221100","00112233445566778899aabbccddeeff"]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := decodeProbeAnswer(b)
		if err != nil {
			return
		}
		again, err := decodeProbeAnswer(a.encode())
		if len(a.Round) == 0 {
			a.Round = nil // omitted when empty
		}
		if err != nil || !reflect.DeepEqual(again, a) {
			t.Fatalf("round trip of %q: %+v, %v; want %+v", b, again, err, a)
		}
	})
}

// TestDecodeProbeAnswerBad: each malformed answer is an error.
func TestDecodeProbeAnswerBad(t *testing.T) {
	for name, b := range map[string]string{
		"not json":         `hello`,
		"no id":            `{"has_state":true}`,
		"long id":          `{"id":"` + strings.Repeat("x", 65) + `"}`,
		"short cluster id": `{"id":"n1","cluster_id":"0102"}`,
		"bad candidate":    `{"id":"n1","candidate":"` + strings.Repeat("z", 32) + `"}`,
		"trailing data":    `{"id":"n1"}{}`,
		"too long":         `{"id":"n1","x":"` + strings.Repeat("a", maxProbeBytes) + `"}`,
		"wrong type":       `{"id":"n1","has_state":"yes"}`,
		"bad round":        `{"id":"n1","round":["0102"]}`,
		"zero in round":    `{"id":"n1","round":["` + strings.Repeat("0", 32) + `"]}`,
		"round too long":   `{"id":"n1","round":[` + strings.Repeat(`"`+strings.Repeat("a", 32)+`",`, maxRound) + `"` + strings.Repeat("b", 32) + `"]}`,
	} {
		if _, err := decodeProbeAnswer([]byte(b)); err == nil {
			t.Errorf("%s: decodeProbeAnswer(%.40q) = nil error", name, b)
		}
	}
}

// TestLegacyClusterID: a data dir with Raft state and no cluster.id (as a
// version without the file made it) derives its ID from the latest Raft
// configuration, persists it and keeps it across restarts.
func TestLegacyClusterID(t *testing.T) {
	addrs := freeAddrs(t, 1)
	cfg := Config{ID: "n1", DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", RaftAddr: addrs[0], Cluster: []Peer{{ID: "n1", RaftAddr: addrs[0]}}}
	open := func() clusterID {
		t.Helper()
		n, err := Open(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		id := clusterID(n.ident.clusterID())
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
		return id
	}
	open()
	if err := os.Remove(filepath.Join(cfg.DataDir, clusterIDFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	want := legacyID([]Peer{{ID: "n1", RaftAddr: addrs[0]}})
	if got := open(); got != want {
		t.Fatalf("cluster id of a data dir without cluster.id = %s, want %s (legacyID)", got, want)
	}
	if got, err := readIDFile(filepath.Join(cfg.DataDir, clusterIDFile)); err != nil || got != want {
		t.Fatalf("cluster.id = %s, %v; want %s", got, err, want)
	}
	if got := open(); got != want {
		t.Fatalf("after a restart: %s, want %s", got, want)
	}
}

// decidedDir returns a new data dir that holds a cluster ID and nothing else:
// a member of a static bootstrap that decided its ID with its peers and
// stopped before Raft started. Such a node bootstraps without asking its
// peers again, so a test can run one member of a --cluster alone.
func decidedDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := writeIDFile(filepath.Join(dir, clusterIDFile), cid(0x42), dirsync.Sync); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestJoinedClusterID: a join's answer whose cluster_id differs from the ID
// this node took before Raft started, or is malformed, stops the join; the
// same ID is taken as it is.
func TestJoinedClusterID(t *testing.T) {
	i := newTestIdentity(t, "n4")
	if err := i.set(cid(1), "test"); err != nil {
		t.Fatal(err)
	}
	m := &membership{cfg: Config{ID: "n4", Join: "http://member:1"}, ident: i}
	for _, tt := range []struct {
		id   string
		want string // in the error; "" for none
	}{
		{cid(2).String(), "belongs to cluster " + cid(1).String()},
		{"zz", "cluster id"},
	} {
		if err := m.joined(wire.JoinResult{NodeNumber: 4, ClusterID: tt.id}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("joined(cluster_id %q) = %v, want an error saying %q", tt.id, err, tt.want)
		}
	}
	if clusterID(i.clusterID()) != cid(1) {
		t.Fatalf("cluster id after refused answers = %s, want %s", clusterID(i.clusterID()), cid(1))
	}
}
