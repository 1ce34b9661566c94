package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/txid"
)

// kvFake is a single-copy key/value log behind fakeBackends: enough of txlog
// for a chaos run whose writes all ask for ack=quorum semantics (it never
// answers 202 to a quorum write). With lose set it answers every tenth put
// committed but forgets it.
type kvFake struct {
	lose bool

	mu   sync.Mutex
	acks map[string]int // writes by the ack level they asked for
	log  []wire.LogEntry
	kv   map[string]wire.KV
	keys map[string]int
}

func (f *kvFake) submit(_ context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.acks[opts.Ack]++
	if i, ok := f.keys[tx.IdempotencyKey]; ok {
		e := f.log[i]
		return wire.TxResult{TxID: e.TxID, Status: e.Status, Index: e.Index, Versions: e.Versions, Conflict: e.Conflict, Duplicate: true}, nil
	}
	op := tx.Ops[0]
	cur := f.kv[op.Key]
	e := wire.LogEntry{Index: uint64(len(f.log) + 1), TxID: txid.ID(len(f.log) + 100), IdempotencyKey: tx.IdempotencyKey, Ops: tx.Ops, Status: wire.StatusCommitted}
	if op.IfVersion != nil && *op.IfVersion != cur.Version {
		e.Status, e.Conflict = wire.StatusRejected, &wire.Conflict{Key: op.Key, Expected: *op.IfVersion, Actual: cur.Version}
	} else {
		e.Versions = map[string]uint64{op.Key: cur.Version + 1}
		if f.lose && len(f.log)%10 == 9 {
			return wire.TxResult{TxID: e.TxID, Status: e.Status, Index: e.Index, Versions: e.Versions}, nil
		}
		f.kv[op.Key] = wire.KV{Key: op.Key, Value: op.Value, Version: cur.Version + 1, Index: e.Index}
	}
	f.log = append(f.log, e)
	f.keys[tx.IdempotencyKey] = len(f.log) - 1
	res := wire.TxResult{TxID: e.TxID, Status: e.Status, Index: e.Index, Versions: e.Versions, Conflict: e.Conflict}
	if opts.Ack == wire.AckAccepted {
		res.Durability = wire.AckAccepted // committed at once, so no 202
	}
	return res, nil
}

func (f *kvFake) backend(id string) *fakeBackend {
	return &fakeBackend{
		SubmitFunc: f.submit,
		GetFunc: func(_ context.Context, key string, _ wire.ReadOptions) (wire.KV, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			kv, ok := f.kv[key]
			if !ok {
				return wire.KV{}, wire.ErrNotFound
			}
			return kv, nil
		},
		LogFunc: func(_ context.Context, from uint64, limit int) (wire.LogPage, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			page := wire.LogPage{Next: from}
			for i := int(from) - 1; i < len(f.log) && len(page.Entries) < limit; i++ {
				page.Entries = append(page.Entries, f.log[i])
				page.Next = f.log[i].Index + 1
			}
			return page, nil
		},
		ClusterFunc: func(context.Context) (wire.ClusterStatus, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			state := "follower"
			if id == "n1" {
				state = "leader"
			}
			n := uint64(len(f.log))
			return wire.ClusterStatus{ID: id, State: state, LeaderID: "n1", Term: 1, CommitIndex: n, AppliedIndex: n}, nil
		},
	}
}

// chaosAgainstFake runs txlog chaos --targets against three nodes of f, with
// follower kills whose command only logs the node's ID, and the flags extra.
func chaosAgainstFake(t *testing.T, f *kvFake, extra ...string) (result, string) {
	t.Helper()
	return chaosAgainst(t, f, func(b api.Backend) string { return serve(t, b) }, extra...)
}

// chaosAgainst is chaosAgainstFake with the nodes served by serve.
func chaosAgainst(t *testing.T, f *kvFake, serve func(api.Backend) string, extra ...string) (result, string) {
	t.Helper()
	f.kv, f.keys, f.acks = map[string]wire.KV{}, map[string]int{}, map[string]int{}
	var urls []string
	for _, id := range []string{"n1", "n2", "n3"} {
		urls = append(urls, serve(f.backend(id)))
	}
	dir := t.TempDir()
	killed := filepath.Join(dir, "killed")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	args := append([]string{"chaos", "--targets", strings.Join(urls, ","), "--dir", dir,
		"--faults", "kill-follower", "--kill-cmd", "echo {id} >> " + killed, "--start-cmd", "true",
		"--max-faults", "2", "--fault-interval", "50ms", "--fault-hold", "50ms",
		"--duration", "10s", "--rate", "200", "--clients", "4", "--seed", "9", "--leases", "0", "--consumers=false",
		"--report-json", filepath.Join(dir, "r.json"), "--report-html", filepath.Join(dir, "r.html")}, extra...)
	r := runCLI(t, ctx, nil, args...)
	return r, dir
}

func TestChaosAgainstTargets(t *testing.T) {
	r, dir := chaosAgainstFake(t, &kvFake{})
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if got := strings.Count(r.stdout, "PASS"); got != 7 {
		t.Fatalf("stdout has %d PASS, want 7:\n%s", got, r.stdout)
	}
	if !strings.Contains(r.stderr, "seed 9") {
		t.Errorf("stderr lacks the seed:\n%s", r.stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, "killed"))
	if err != nil || len(strings.Fields(string(b))) != 2 || strings.Contains(string(b), "n1") {
		t.Fatalf("killed nodes %q (%v), want two followers", b, err)
	}
	var rep struct {
		Seed   uint64            `json:"seed"`
		Checks []json.RawMessage `json:"checks"`
	}
	if b, err := os.ReadFile(filepath.Join(dir, "r.json")); err != nil || json.Unmarshal(b, &rep) != nil || rep.Seed != 9 || len(rep.Checks) != 7 {
		t.Fatalf("report JSON: %v, %+v", err, rep)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "r.html")); err != nil || !strings.Contains(string(b), "<svg") {
		t.Fatalf("report HTML: %v", err)
	}
}

// TestChaosAgainstSecuredTargets runs txlog chaos against nodes that want
// mutual TLS and a token: with the credentials every check passes, with a
// wrong token the run stops at once, naming the refusal.
func TestChaosAgainstSecuredTargets(t *testing.T) {
	f := newTLSFiles(t)
	var mu sync.Mutex
	tokens := map[string]int{}
	serveTLS := func(b api.Backend) string {
		inner := api.NewServer(api.Config{}, b)
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			tokens[r.Header.Get("Authorization")]++
			mu.Unlock()
			if r.Header.Get("Authorization") != "Bearer good" {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				w.Write([]byte(`{"error":{"code":"unauthenticated","message":"no valid credential"}}`))
				return
			}
			inner.ServeHTTP(w, r)
		}))
		srv.TLS = f.server
		srv.StartTLS()
		t.Cleanup(srv.Close)
		return srv.URL
	}
	creds := []string{"--cacert", f.ca, "--cert", f.cert, "--key", f.key}
	r, _ := chaosAgainst(t, &kvFake{}, serveTLS, append(creds, "--token", "good")...)
	if r.code != 0 || strings.Count(r.stdout, "PASS") != 7 {
		t.Fatalf("exit %d, want 0 and 7 PASS\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	mu.Lock()
	if len(tokens) != 1 || tokens["Bearer good"] == 0 {
		t.Errorf("Authorization headers seen %v, want only the token", tokens)
	}
	mu.Unlock()
	r, _ = chaosAgainst(t, &kvFake{}, serveTLS, append(creds, "--token", "bad")...)
	if r.code != 1 || !strings.Contains(r.stderr, "unauthenticated") {
		t.Fatalf("with a wrong token: exit %d, want 1 naming unauthenticated\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

func TestChaosAcks(t *testing.T) {
	f := &kvFake{}
	r, _ := chaosAgainstFake(t, f, "--acks", "quorum*3,all")
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "ack mix of the writes: all*1,quorum*3") {
		t.Errorf("summary lacks the ack mix:\n%s", r.stdout)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.acks[wire.AckAccepted] != 0 || f.acks[wire.AckQuorum] < 2*f.acks[wire.AckAll] || f.acks[wire.AckAll] == 0 {
		t.Fatalf("writes by ack %v, want quorum and all about 3:1 and no accepted", f.acks)
	}
}

func TestChaosFailsOnLostWrites(t *testing.T) {
	r, _ := chaosAgainstFake(t, &kvFake{lose: true})
	if r.code != 1 || !strings.Contains(r.stderr, "checkers failed") || !strings.Contains(r.stdout, "FAIL  no acknowledged write lost") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

func TestChaosUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"help", []string{"chaos", "-h"}, 0, "-kill-cmd"},
		{"unknown fault", []string{"chaos", "--faults", "kill-everyone"}, 2, `unknown fault "kill-everyone"`},
		{"argument", []string{"chaos", "now"}, 2, "takes no arguments"},
		{"bad target", []string{"chaos", "--targets", "ftp://x"}, 2, "Targets[0]"},
		{"help powerloss", []string{"chaos", "-h"}, 0, "-powerloss-dirs"},
		{"bad dirs", []string{"chaos", "--powerloss-dirs", "ext2"}, 2, `directory rule "ext2": want posix or journal`},
		{"help acks", []string{"chaos", "-h"}, 0, "-acks"},
		{"unknown ack", []string{"chaos", "--acks", "quorum,majority"}, 2, `--acks: unknown ack "majority" (known: all, accepted, quorum)`},
		{"bad ack weight", []string{"chaos", "--acks", "quorum*0,all"}, 2, `--acks: ack "quorum*0": weight "0", want 1..1000`},
		{"ack twice", []string{"chaos", "--acks", "all,quorum,all*2"}, 2, `--acks: ack "all" given twice`},
		{"no acks", []string{"chaos", "--acks", " , "}, 2, "--acks: no ack levels given"},
		{"help leases", []string{"chaos", "-h"}, 0, "-lease-ttl"},
		{"help consumers", []string{"chaos", "-h"}, 0, "-consumers"},
		{"negative leases", []string{"chaos", "--leases", "-1"}, 2, "--leases -1: want 0 or more"},
		{"too few contenders", []string{"chaos", "--contenders", "3"}, 2, "3 contenders for 2 leases"},
		{"contender without flags", []string{"chaos-contender"}, 1, "--targets, --lease, --id, --key and --history are required"},
		{"consumer without flags", []string{"chaos-consumer"}, 1, "--targets, --group, --id, --source, --projection and --history are required"},
		{"powerloss needs local", []string{"chaos", "--targets", "http://127.0.0.1:1", "--faults", "powerloss"}, 1, "leave powerloss out of --faults"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, t.Context(), nil, tt.args...)
			if r.code != tt.code || !strings.Contains(r.stdout+r.stderr, tt.want) {
				t.Fatalf("exit %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", r.code, tt.code, tt.want, r.stdout, r.stderr)
			}
		})
	}
}

// TestChaosRequireAllFaults: a fault kind the targets cannot inject
// (pause-leader without --pause-cmd) is named as never injected; with
// --require-all-faults the run fails by the checker that says so.
func TestChaosRequireAllFaults(t *testing.T) {
	faults := []string{"--faults", "kill-follower,pause-leader"}
	r, _ := chaosAgainstFake(t, &kvFake{}, faults...)
	if r.code != 0 || !strings.Contains(r.stdout, "fault kinds never injected: 1 of 2 configured: pause-leader") {
		t.Fatalf("exit %d, want 0 and the never-injected line\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	r, dir := chaosAgainstFake(t, &kvFake{}, append(faults, "--require-all-faults")...)
	if r.code != 1 || !strings.Contains(r.stdout, "8. FAIL  every configured fault kind injected") || !strings.Contains(r.stdout, "pause-leader: never injected") {
		t.Fatalf("exit %d, want 1 and the failed checker\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	var rep struct {
		Never  []string `json:"faults_never_injected"`
		Checks []struct {
			Number int  `json:"number"`
			Pass   bool `json:"pass"`
		} `json:"checks"`
	}
	if b, err := os.ReadFile(filepath.Join(dir, "r.json")); err != nil || json.Unmarshal(b, &rep) != nil || len(rep.Never) != 1 || len(rep.Checks) != 8 || rep.Checks[7].Number != 8 || rep.Checks[7].Pass {
		t.Fatalf("report JSON: %v, %+v", err, rep)
	}
}
