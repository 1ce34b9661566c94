package chaos

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/txid"
)

// memStore is a correct, in-memory, single-copy txlog behind three API
// servers, for testing the verifier end to end in seconds. Its bug knobs make
// it break the promises the checkers check.
type memStore struct {
	// loseWrite, when not 0, makes the loseWrite-th committed put answer 200
	// without being applied or logged.
	loseWrite int
	// staleReads makes every read of a key answer what the previous write of it
	// left, once the key has two versions.
	staleReads bool

	mu      sync.Mutex
	log     []wire.LogEntry
	kv      map[string]memValue
	prev    map[string]memValue
	byKey   map[string]int // idempotency key → position in log
	byID    map[txid.ID]int
	commits int
}

type memValue struct {
	value   []byte
	version uint64
	index   uint64
}

func newMemStore() *memStore {
	return &memStore{kv: map[string]memValue{}, prev: map[string]memValue{}, byKey: map[string]int{}, byID: map[txid.ID]int{}}
}

func (s *memStore) result(i int, dup bool) wire.TxResult {
	e := s.log[i]
	return wire.TxResult{TxID: e.TxID, Status: e.Status, IdempotencyKey: e.IdempotencyKey, Index: e.Index,
		Versions: e.Versions, Conflict: e.Conflict, Duplicate: dup, Durability: wire.AckQuorum}
}

func (s *memStore) submit(tx wire.TxRequest, opts wire.SubmitOptions) wire.TxResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i, ok := s.byKey[tx.IdempotencyKey]; ok && tx.IdempotencyKey != "" {
		return s.result(i, true)
	}
	id := txid.ID(len(s.log) + 1000)
	e := wire.LogEntry{Index: uint64(len(s.log) + 1), TxID: id, IdempotencyKey: tx.IdempotencyKey, Ops: tx.Ops, Status: wire.StatusCommitted}
	for _, op := range tx.Ops {
		if op.IfVersion != nil && s.kv[op.Key].version != *op.IfVersion {
			e.Status = wire.StatusRejected
			e.Conflict = &wire.Conflict{Key: op.Key, Expected: *op.IfVersion, Actual: s.kv[op.Key].version}
			break
		}
	}
	if e.Status == wire.StatusCommitted {
		s.commits++
		e.Versions = map[string]uint64{}
		for _, op := range tx.Ops {
			e.Versions[op.Key] = s.kv[op.Key].version + 1
		}
		if s.commits == s.loseWrite {
			return wire.TxResult{TxID: id, Status: wire.StatusCommitted, Index: e.Index, Versions: e.Versions}
		}
		for _, op := range tx.Ops {
			s.prev[op.Key] = s.kv[op.Key]
			s.kv[op.Key] = memValue{value: op.Value, version: e.Versions[op.Key], index: e.Index}
		}
	}
	s.log = append(s.log, e)
	s.byKey[tx.IdempotencyKey] = len(s.log) - 1
	s.byID[id] = len(s.log) - 1
	res := s.result(len(s.log)-1, false)
	if opts.Ack == wire.AckAccepted {
		return wire.TxResult{TxID: id, Status: wire.StatusPending, IdempotencyKey: tx.IdempotencyKey, Durability: wire.AckAccepted}
	}
	return res
}

// memNode is one node of the in-memory cluster. The first node that is not
// listed in the file down leads; the fault commands of memRun edit that file.
type memNode struct {
	id   string
	s    *memStore
	down string
}

func (n *memNode) leader() string {
	b, _ := os.ReadFile(n.down)
	gone := strings.Fields(string(b))
	for i := range 3 {
		if id := "n" + strconv.Itoa(i+1); !slices.Contains(gone, id) {
			return id
		}
	}
	return ""
}

var _ api.Backend = (*memNode)(nil)

var errMemUnsupported = errors.New("memcluster: not supported")

func (n *memNode) Submit(_ context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error) {
	return n.s.submit(tx, opts), nil
}

func (n *memNode) SubmitBatch(context.Context, []wire.TxRequest, wire.SubmitOptions) ([]wire.TxResult, error) {
	return nil, errMemUnsupported
}

func (n *memNode) Propose(context.Context, [][]byte, wire.SubmitOptions) ([]wire.TxResult, error) {
	return nil, errMemUnsupported
}

func (n *memNode) Tx(_ context.Context, id txid.ID, _ time.Duration, _ wire.ReadOptions) (wire.TxResult, error) {
	n.s.mu.Lock()
	defer n.s.mu.Unlock()
	if i, ok := n.s.byID[id]; ok {
		return n.s.result(i, false), nil
	}
	return wire.TxResult{}, wire.ErrNotFound
}

func (n *memNode) TxByIdempotencyKey(_ context.Context, key string, _ time.Duration, _ wire.ReadOptions) (wire.TxResult, error) {
	n.s.mu.Lock()
	defer n.s.mu.Unlock()
	if i, ok := n.s.byKey[key]; ok {
		return n.s.result(i, false), nil
	}
	return wire.TxResult{}, wire.ErrNotFound
}

func (n *memNode) Get(_ context.Context, key string, _ wire.ReadOptions) (wire.KV, error) {
	n.s.mu.Lock()
	defer n.s.mu.Unlock()
	v, ok := n.s.kv[key]
	if n.s.staleReads && v.version >= 2 {
		v = n.s.prev[key]
	}
	if !ok {
		return wire.KV{}, wire.ErrNotFound
	}
	return wire.KV{Key: key, Value: v.value, Version: v.version, Index: v.index}, nil
}

func (n *memNode) Log(_ context.Context, from uint64, limit int) (wire.LogPage, error) {
	n.s.mu.Lock()
	defer n.s.mu.Unlock()
	page := wire.LogPage{Next: from}
	for i := int(from) - 1; i >= 0 && i < len(n.s.log) && len(page.Entries) < limit; i++ {
		page.Entries = append(page.Entries, n.s.log[i])
		page.Next = n.s.log[i].Index + 1
	}
	return page, nil
}

func (n *memNode) Range(context.Context, wire.RangeRequest, wire.ReadOptions) (wire.KVPage, error) {
	return wire.KVPage{}, wire.ErrNotFound
}

func (n *memNode) Cluster(context.Context, wire.ReadOptions) (wire.ClusterStatus, error) {
	n.s.mu.Lock()
	defer n.s.mu.Unlock()
	leader := n.leader()
	state := "follower"
	if n.id == leader {
		state = "leader"
	}
	idx := uint64(len(n.s.log))
	return wire.ClusterStatus{ID: n.id, State: state, LeaderID: leader, Term: 1, CommitIndex: idx, AppliedIndex: idx,
		Extra: map[string]string{"intake_unresolved": "0"}}, nil
}

func (n *memNode) Join(context.Context, wire.JoinRequest) (wire.JoinResult, error) {
	return wire.JoinResult{}, errMemUnsupported
}
func (n *memNode) Remove(context.Context, string) error { return errMemUnsupported }
func (n *memNode) TransferLeadership(context.Context, wire.TransferRequest) (wire.TransferResult, error) {
	return wire.TransferResult{}, errMemUnsupported
}
func (n *memNode) Ready(context.Context) error { return nil }

// startMemCluster serves s as three nodes and returns their URLs.
func startMemCluster(t *testing.T, s *memStore, down string) []string {
	t.Helper()
	var urls []string
	for i := range 3 {
		srv := httptest.NewServer(api.NewServer(api.Config{}, &memNode{id: "n" + strconv.Itoa(i+1), s: s, down: down}))
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
	}
	return urls
}

// memRun runs the verifier in targets mode against s, with fault commands that
// only write what they were asked into a file, whose lines it returns too.
func memRun(t *testing.T, s *memStore, mods ...func(*Config)) (*Report, []string) {
	t.Helper()
	dir := t.TempDir()
	faults, down := filepath.Join(dir, "faults.txt"), filepath.Join(dir, "down")
	if err := os.WriteFile(down, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// Each command logs itself; the ones that take a node away list it in down,
	// the ones that bring it back delete it from there.
	cmd := func(what string) string { return "echo " + what + " >> " + faults }
	away := func(what string) string { return cmd(what) + " && echo {id} >> " + down }
	back := func(what string) string { return cmd(what) + " && sed -i '/^{id}$/d' " + down }
	w := mustFaults(t, "kill-leader,pause-leader,partition-oneway,quorum-loss,term-leader")
	cfg := Config{
		Targets: startMemCluster(t, s, down),
		Commands: Commands{
			Kill: away("kill {id}"), Start: back("start {id}"), Stop: away("stop {id}"),
			Pause: away("pause {id}"), Resume: back("resume {id}"),
			Partition: away("partition {id} {mode}"), Heal: back("heal {id}"),
		},
		Dir:            dir,
		Workload:       WorkloadConfig{Clients: 4, Rate: 200, Keys: 8, HotKeys: 2},
		Nemesis:        NemesisConfig{Faults: w, Interval: 50 * time.Millisecond, Hold: 50 * time.Millisecond, MaxFaults: 5, RecoverTimeout: 10 * time.Second},
		Duration:       20 * time.Second,
		Seed:           3,
		ResolveTimeout: 10 * time.Second,
	}
	for _, m := range mods {
		m(&cfg)
	}
	rep, err := Run(testCtx(t, time.Minute), cfg)
	if err != nil {
		t.Fatalf("Run() = %v", err)
	}
	b, err := os.ReadFile(faults)
	if err != nil {
		t.Fatalf("no fault command ran: %v", err)
	}
	return rep, strings.Split(strings.TrimSpace(string(b)), "\n")
}

func checkByName(t *testing.T, rep *Report, name string) CheckResult {
	t.Helper()
	for _, c := range rep.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no checker %q in the report", name)
	return CheckResult{}
}

func summary(rep *Report) string {
	var b strings.Builder
	rep.WriteSummary(&b)
	return b.String()
}

func TestRunTargetsPasses(t *testing.T) {
	rep, cmds := memRun(t, newMemStore())
	if rep.Failed() {
		t.Fatalf("a correct cluster failed:\n%s", summary(rep))
	}
	if rep.Mode != "targets" || len(rep.Faults) != 6 || !rep.Faults[5].Idle || rep.Counts.Writes == 0 || rep.Counts.Reads == 0 || rep.Counts.Accepted == 0 {
		t.Fatalf("report:\n%s", summary(rep))
	}
	joined := strings.Join(cmds, "\n")
	for _, want := range []string{"kill n1", "start n1", "pause n1", "resume n1", "partition n1 inbound", "heal n1", "stop n1"} {
		if !strings.Contains(joined, want) {
			t.Errorf("fault commands %q lack %q", cmds, want)
		}
	}
	if rep.LeaderKills != 3 {
		t.Errorf("LeaderKills = %d, want 3 (kill-leader, quorum-loss and the idle kill-leader)", rep.LeaderKills)
	}
	dir := t.TempDir()
	if err := rep.WriteJSON(filepath.Join(dir, "r.json")); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteHTML(filepath.Join(dir, "r.html")); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "r.html"))
	for _, want := range []string{"<svg", "PASS", string(FaultPauseLeader), NameLinearizable} {
		if !strings.Contains(string(b), want) {
			t.Errorf("HTML report lacks %q", want)
		}
	}
}

func TestRunTargetsFindsLostWrite(t *testing.T) {
	s := newMemStore()
	s.loseWrite = 20
	rep, _ := memRun(t, s)
	if !rep.Failed() {
		t.Fatalf("a cluster that lost a write passed:\n%s", summary(rep))
	}
	if c := checkByName(t, rep, NameLost); c.Pass || !strings.Contains(fmt.Sprint(c.Evidence), "missing from the log") {
		t.Fatalf("%s = %+v, want the lost write", NameLost, c)
	}
}

func TestRunTargetsFindsStaleReads(t *testing.T) {
	s := newMemStore()
	s.staleReads = true
	rep, _ := memRun(t, s)
	c := checkByName(t, rep, NameLinearizable)
	if c.Pass || len(c.Files) != 1 {
		t.Fatalf("%s = %+v, want a failure with its visualization", NameLinearizable, c)
	}
	for _, other := range []string{NameLost, NameResolved, NameDuplicates, NameIdentical} {
		if c := checkByName(t, rep, other); !c.Pass {
			t.Errorf("%s failed on stale reads alone: %+v", other, c)
		}
	}
}
