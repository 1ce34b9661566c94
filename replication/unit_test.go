package replication

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/txlog/txlog/store"
)

func TestConfigValidate(t *testing.T) {
	valid := Config{ID: "a", Dir: "d", BindAddr: "127.0.0.1:0"}
	tests := []struct {
		name string
		edit func(*Config)
		want []string // substrings of the error; none means valid
	}{
		{"defaults", func(*Config) {}, nil},
		{"missing required", func(c *Config) { *c = Config{} }, []string{"ID is required", "Dir is required", "BindAddr is required"}},
		{"heartbeat too low", func(c *Config) { c.HeartbeatTimeout = time.Millisecond }, []string{"HeartbeatTimeout 1ms is below the minimum 5ms"}},
		{"election below heartbeat", func(c *Config) { c.HeartbeatTimeout = time.Second }, []string{"ElectionTimeout 500ms is below HeartbeatTimeout 1s"}},
		{"lease above heartbeat", func(c *Config) { c.LeaderLeaseTimeout = time.Second }, []string{"LeaderLeaseTimeout 1s is above HeartbeatTimeout 500ms"}},
		{"max append entries", func(c *Config) { c.MaxAppendEntries = 2000 }, []string{"MaxAppendEntries 2000 is outside [1, 1024]"}},
		{"bootstrap ok", func(c *Config) {
			c.Bootstrap = []Server{{"a", "h:1"}, {"b", "h:2"}}
		}, nil},
		{"bootstrap bad", func(c *Config) {
			c.Bootstrap = []Server{{"b", "h:1"}, {"b", "h:1"}, {"", "h:3"}}
		}, []string{"Bootstrap[1] repeats ID", "Bootstrap[1] repeats Addr", "Bootstrap[2] needs both", `does not include ID "a"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid
			tt.edit(&c)
			err := c.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %v, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestConfigDefaultsCopy(t *testing.T) {
	boot := []Server{{"a", "h:1"}}
	c := Config{ID: "a", Bootstrap: boot}
	d := c.withDefaults()
	if c.HeartbeatTimeout != 0 || c.Logger != nil {
		t.Errorf("withDefaults changed the caller's Config: %+v", c)
	}
	if d.HeartbeatTimeout != DefaultHeartbeatTimeout || d.MaxAppendEntries != DefaultMaxAppendEntries || d.Logger == nil || d.Fatal == nil {
		t.Errorf("withDefaults() = %+v, want defaults filled in", d)
	}
	d.Bootstrap[0].ID = "x"
	if boot[0].ID != "a" {
		t.Errorf("withDefaults shares the caller's Bootstrap slice")
	}
}

func cmd(index uint64, data string) *raft.Log {
	return &raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: []byte(data)}
}

func TestFSMApplyBatch(t *testing.T) {
	sm := &fakeMachine{}
	f := newFSM(sm, func(err error) { t.Fatalf("Fatal(%v)", err) })
	logs := []*raft.Log{
		cmd(1, "a"),
		{Index: 2, Term: 1, Type: raft.LogConfiguration},
		cmd(3, "b"),
	}
	resp := f.ApplyBatch(logs)
	if len(resp) != len(logs) {
		t.Fatalf("ApplyBatch returned %d responses for %d logs", len(resp), len(logs))
	}
	for i, want := range []uint64{1, 0, 3} {
		if want == 0 {
			if resp[i] != nil {
				t.Errorf("response %d = %v, want nil for a configuration entry", i, resp[i])
			}
			continue
		}
		r, ok := resp[i].(store.Result)
		if !ok || r.Outcome.Index != want {
			t.Errorf("response %d = %#v, want the Result for index %d", i, resp[i], want)
		}
	}
	if got := strings.Join(sm.data(), ","); got != "a,b" {
		t.Errorf("state machine got %q, want the commands only", got)
	}
	if maxBatch, _ := sm.stats(); maxBatch != 2 {
		t.Errorf("state machine saw a batch of %d, want one call for both commands", maxBatch)
	}

	// A batch of configuration entries only advances the applied index.
	_, changed := f.watch()
	f.ApplyBatch([]*raft.Log{{Index: 4, Term: 1, Type: raft.LogConfiguration}})
	select {
	case <-changed:
	default:
		t.Errorf("applied index change not signalled")
	}
	if applied, _ := f.watch(); applied != 4 {
		t.Errorf("applied = %d, want 4", applied)
	}
}

func TestFSMReplayDoesNotLowerApplied(t *testing.T) {
	// After a restart the state machine may be ahead of what raft replays.
	sm := &fakeMachine{applied: 10}
	f := newFSM(sm, nil)
	f.ApplyBatch([]*raft.Log{cmd(5, "old")})
	if applied, _ := f.watch(); applied != 10 {
		t.Errorf("applied = %d after replaying 5, want 10", applied)
	}
}

func TestFSMFailure(t *testing.T) {
	boom := errors.New("boom")
	sm := &fakeMachine{ApplyFunc: func([]store.Entry) error { return boom }}
	var fatal []error
	f := newFSM(sm, func(err error) { fatal = append(fatal, err) })
	resp := f.ApplyBatch([]*raft.Log{cmd(1, "a"), {Index: 2, Type: raft.LogConfiguration}})
	err, ok := resp[0].(error)
	if !ok || !errors.Is(err, ErrStateMachine) || !errors.Is(err, boom) {
		t.Errorf("response = %v, want an error wrapping ErrStateMachine and boom", resp[0])
	}
	if resp[1] != nil {
		t.Errorf("configuration response = %v, want nil", resp[1])
	}
	if len(fatal) != 1 || !errors.Is(fatal[0], boom) {
		t.Errorf("Fatal called with %v, want once with boom", fatal)
	}
	if applied, _ := f.watch(); applied != 0 {
		t.Errorf("applied = %d after a failure, want 0", applied)
	}

	sm.ApplyFunc = nil
	resp = f.ApplyBatch([]*raft.Log{cmd(3, "b")})
	if err, _ := resp[0].(error); !errors.Is(err, ErrStateMachine) {
		t.Errorf("response after the failure = %v, want ErrStateMachine", resp[0])
	}
	if len(sm.data()) != 0 {
		t.Errorf("state machine applied %q after the failure", sm.data())
	}
	if _, err := f.Snapshot(); !errors.Is(err, ErrStateMachine) {
		t.Errorf("Snapshot after the failure: err = %v, want ErrStateMachine", err)
	}
}

func TestFSMWrongResultCount(t *testing.T) {
	var fatal error
	f := newFSM(shortMachine{&fakeMachine{}}, func(err error) { fatal = err })
	f.ApplyBatch([]*raft.Log{cmd(1, "a"), cmd(2, "b")})
	if !errors.Is(fatal, ErrStateMachine) {
		t.Errorf("Fatal(%v), want ErrStateMachine for a short result slice", fatal)
	}
}

// shortMachine returns one result too few.
type shortMachine struct{ *fakeMachine }

func (m shortMachine) Apply(entries []store.Entry) ([]store.Result, error) {
	res, err := m.fakeMachine.Apply(entries)
	return res[:len(res)-1], err
}

func TestFSMSnapshotRestore(t *testing.T) {
	src := &fakeMachine{}
	f := newFSM(src, nil)
	f.ApplyBatch([]*raft.Log{cmd(1, "a"), cmd(2, "b")})
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	defer snap.Release()
	f.ApplyBatch([]*raft.Log{cmd(3, "after")}) // not in the snapshot
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatalf("Persist: %v", err)
	}
	if !sink.closed || sink.cancelled {
		t.Errorf("sink closed=%v cancelled=%v, want closed", sink.closed, sink.cancelled)
	}

	dst := &fakeMachine{applied: 7}
	g := newFSM(dst, nil)
	_, changed := g.watch()
	if err := g.Restore(sink.reader()); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if got := strings.Join(dst.data(), ","); got != "a,b" {
		t.Errorf("restored %q, want a,b", got)
	}
	// A restore may move the applied index down: the state is the snapshot's.
	if applied, _ := g.watch(); applied != 2 {
		t.Errorf("applied = %d after restore, want 2", applied)
	}
	select {
	case <-changed:
	default:
		t.Errorf("restore did not signal an applied index change")
	}
}

func TestFSMPersistError(t *testing.T) {
	snap := &fsmSnapshot{s: failingSnapshot{}}
	sink := &memSink{}
	if err := snap.Persist(sink); err == nil || !sink.cancelled {
		t.Errorf("Persist = %v, cancelled=%v; want an error and a cancelled sink", err, sink.cancelled)
	}
}

type failingSnapshot struct{}

func (failingSnapshot) WriteTo(w io.Writer) (int64, error) { return 0, errors.New("disk full") }
func (failingSnapshot) Release()                           {}

// memSink is a raft.SnapshotSink in memory.
type memSink struct {
	bytes.Buffer
	closed, cancelled bool
}

func (s *memSink) ID() string     { return "mem" }
func (s *memSink) Close() error   { s.closed = true; return nil }
func (s *memSink) Cancel() error  { s.cancelled = true; return nil }
func (s *memSink) reader() *nopRC { return &nopRC{bytes.NewReader(s.Bytes())} }

type nopRC struct{ *bytes.Reader }

func (nopRC) Close() error { return nil }

func TestFeedCoalesces(t *testing.T) {
	f := newFeed()
	f.publish(LeaderChange{LeaderID: "a", Term: 1})
	ch, cancel := f.subscribe()
	if c := <-ch; c.LeaderID != "a" {
		t.Fatalf("first value = %+v, want the current leader a", c)
	}
	for i := range 100 { // a slow subscriber never blocks the publisher
		f.publish(LeaderChange{LeaderID: fmt.Sprint("n", i), Term: uint64(i + 2)})
	}
	if c := <-ch; c.LeaderID != "n99" {
		t.Errorf("after 100 changes got %+v, want the latest, n99", c)
	}
	if f.publish(LeaderChange{LeaderID: "n99", Term: 101}) != false {
		t.Errorf("publishing the same change again reported it as new")
	}
	select {
	case c := <-ch:
		t.Errorf("unchanged state delivered %+v", c)
	default:
	}
	cancel()
	cancel()
	if _, ok := <-ch; ok {
		t.Errorf("channel open after cancel")
	}

	ch2, _ := f.subscribe()
	<-ch2
	f.close()
	if _, ok := <-ch2; ok {
		t.Errorf("channel open after close")
	}
	ch3, cancel3 := f.subscribe()
	cancel3()
	if _, ok := <-ch3; ok {
		t.Errorf("subscribe after close returned an open channel")
	}
}

func TestHCLogger(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewJSONHandler(&buf, nil)) // Info: raft logs Warn and above
	h := newHCLogger(l)
	h.Info("chatty")
	h.Named("net").With("peer", "b").Warn("failed", "error", errors.New("boom"), "detail", hclog.Fmt("%d tries", 3))
	out := buf.String()
	if strings.Contains(out, "chatty") {
		t.Errorf("Info logged at Warn level: %s", out)
	}
	for _, want := range []string{`"level":"WARN"`, `"msg":"failed"`, `"err":"boom"`, `"detail":"3 tries"`, `"peer":"b"`, `"module":"net"`, `"component":"raft"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log %s does not contain %s", out, want)
		}
	}
	if h.IsInfo() || !h.IsWarn() {
		t.Errorf("IsInfo() = %v, IsWarn() = %v at Warn", h.IsInfo(), h.IsWarn())
	}

	debug := newHCLogger(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if !debug.IsDebug() {
		t.Errorf("raft logger not at Debug under a Debug slog logger")
	}
}

func TestTranslate(t *testing.T) {
	tests := []struct {
		err     error
		want    error
		unknown bool
	}{
		{raft.ErrNotLeader, ErrNotLeader, false},
		{raft.ErrLeadershipTransferInProgress, ErrNotLeader, false},
		{raft.ErrLeadershipLost, ErrLeadershipLost, true},
		{raft.ErrRaftShutdown, ErrShutdown, true},
		{raft.ErrEnqueueTimeout, ErrTimeout, true},
		{fmt.Errorf("wrapped: %w", ErrUnknownServer), ErrUnknownServer, false},
	}
	for _, tt := range tests {
		t.Run(tt.err.Error(), func(t *testing.T) {
			got := translate("op", tt.err)
			if !errors.Is(got, tt.want) {
				t.Errorf("translate(%v) = %v, want %v", tt.err, got, tt.want)
			}
			if OutcomeUnknown(got) != tt.unknown {
				t.Errorf("OutcomeUnknown(%v) = %v, want %v", got, !tt.unknown, tt.unknown)
			}
		})
	}
	other := errors.New("other")
	if got := translate("op", other); !errors.Is(got, other) || !strings.HasPrefix(got.Error(), "op: ") {
		t.Errorf("translate(other) = %v, want it wrapped with the op", got)
	}
}

func TestRaftTimeout(t *testing.T) {
	if d, err := raftTimeout(context.Background()); d != 0 || err != nil {
		t.Errorf("raftTimeout(no deadline) = %v, %v; want 0, nil", d, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if d, err := raftTimeout(ctx); d <= 59*time.Minute || err != nil {
		t.Errorf("raftTimeout(1h) = %v, %v", d, err)
	}
	past, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	if _, err := raftTimeout(past); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("raftTimeout(past) err = %v, want DeadlineExceeded", err)
	}
}

// TestFeedLeaderLostAt: the feed records when a known leader went, and only
// then: elections that find no leader (none to none, a new term) leave it.
func TestFeedLeaderLostAt(t *testing.T) {
	f := newFeed()
	f.publish(LeaderChange{Term: 1})
	if !f.lostAt.IsZero() {
		t.Fatalf("lostAt = %v with no leader ever, want zero", f.lostAt)
	}
	f.publish(LeaderChange{LeaderID: "a", Term: 1})
	before := time.Now()
	f.publish(LeaderChange{Term: 1})
	lost := f.lostAt
	if lost.Before(before) {
		t.Fatalf("lostAt = %v, want at or after %v (the leader went then)", lost, before)
	}
	f.publish(LeaderChange{Term: 2}) // an election with no winner
	f.publish(LeaderChange{Term: 3})
	if f.lostAt != lost {
		t.Errorf("lostAt = %v after leaderless elections, want %v: the leader went once", f.lostAt, lost)
	}
	f.publish(LeaderChange{LeaderID: "b", Term: 3})
	if f.lostAt != lost {
		t.Errorf("lostAt = %v after a new leader, want %v", f.lostAt, lost)
	}
}
