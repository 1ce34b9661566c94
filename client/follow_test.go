package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/api/wire"
)

// memLog is an api.Backend and api.LogFollower over a log in memory.
type memLog struct {
	fakeBackend
	mu      sync.Mutex
	entries []wire.LogEntry
	first   uint64
	changed chan struct{}
}

var _ api.LogFollower = (*memLog)(nil)

func newMemLog() *memLog {
	m := &memLog{first: 1, changed: make(chan struct{})}
	m.LogFunc = func(_ context.Context, from uint64, limit int) (wire.LogPage, error) {
		m.mu.Lock()
		defer m.mu.Unlock()
		page := wire.LogPage{Next: from}
		for _, e := range m.entries {
			if e.Index >= from && len(page.Entries) < limit {
				page.Entries = append(page.Entries, e)
				page.Next = e.Index + 1
			}
		}
		return page, nil
	}
	return m
}

func (m *memLog) append(index uint64, key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entries = append(m.entries, wire.LogEntry{Index: index, Status: wire.StatusCommitted, Ops: []wire.Op{{Op: "put", Key: key, Value: json.RawMessage("1")}}})
	close(m.changed)
	m.changed = make(chan struct{})
}

func (m *memLog) FirstIndex() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.first
}

func (m *memLog) Applied() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changed
}

var errStop = errors.New("stop")

func TestFollowFailsOver(t *testing.T) {
	m := newMemLog()
	for i := uint64(1); i <= 3; i++ {
		m.append(i, "acct/"+string(rune('a'+i)))
	}
	m.append(4, "other")
	a := httptest.NewServer(api.NewServer(api.Config{}, m))
	defer a.Close()
	b := httptest.NewServer(api.NewServer(api.Config{}, m))
	defer b.Close()
	c := NewClient(ClientConfig{Endpoints: []string{a.URL, b.URL}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []uint64
	err := c.Follow(ctx, 2, "acct/", func(e wire.LogEntry) error {
		got = append(got, e.Index)
		switch e.Index {
		case 3:
			// a dies: the stream breaks, and a takes no new connection,
			// so the next one goes to b.
			a.Listener.Close()
			a.CloseClientConnections()
			go func() {
				m.append(5, "acct/x")
				m.append(6, "nope")
				m.append(7, "acct/y")
			}()
		case 7:
			return errStop
		}
		return nil
	})
	if !errors.Is(err, errStop) {
		t.Fatalf("Follow = %v, want fn's error", err)
	}
	if want := []uint64{2, 3, 5, 7}; !slices.Equal(got, want) {
		t.Fatalf("Follow gave %v, want %v", got, want)
	}
}

func TestFollowCompacted(t *testing.T) {
	m := newMemLog()
	m.append(5, "k")
	m.first = 4
	srv := httptest.NewServer(api.NewServer(api.Config{}, m))
	defer srv.Close()
	c := NewClient(ClientConfig{Endpoints: []string{srv.URL}})
	err := c.Follow(context.Background(), 2, "", func(wire.LogEntry) error { return nil })
	ce, ok := errors.AsType[*wire.CompactedError](err)
	if !errors.Is(err, wire.ErrCompacted) || !ok || ce.FirstIndex != 4 {
		t.Fatalf("Follow from 2 = %v, want a CompactedError with first index 4", err)
	}
	if _, err := c.Log(context.Background(), 1, 0); !errors.Is(err, wire.ErrCompacted) {
		t.Fatalf("Log from 1 = %v, want ErrCompacted", err)
	}
	// A bad prefix is not retried.
	err = c.Follow(context.Background(), 4, strings.Repeat("p", 2000), func(wire.LogEntry) error { return nil })
	if we, ok := errors.AsType[*wire.Error](err); !ok || we.Code != wire.CodeInvalidParam {
		t.Fatalf("Follow with a long prefix = %v, want invalid_parameter", err)
	}
}

func TestLogWait(t *testing.T) {
	m := newMemLog()
	m.append(1, "a")
	srv := httptest.NewServer(api.NewServer(api.Config{}, m))
	defer srv.Close()
	c := NewClient(ClientConfig{Endpoints: []string{srv.URL}})
	go m.append(2, "acct/b")
	page, err := c.LogWait(context.Background(), 2, 10, "acct/", 30*time.Second)
	if err != nil || len(page.Entries) != 1 || page.Entries[0].Index != 2 || page.Next != 3 {
		t.Fatalf("LogWait = %+v, %v; want entry 2, next 3", page, err)
	}
	page, err = c.LogWait(context.Background(), 3, 10, "", 20*time.Millisecond)
	if err != nil || len(page.Entries) != 0 || page.Next != 3 {
		t.Fatalf("LogWait past the end = %+v, %v; want nothing, next 3", page, err)
	}
}

func TestReadEvents(t *testing.T) {
	in := ": hello\n\nid: 1\nevent: entry\ndata: {\"a\":\ndata: 1}\r\n\nretry: 5\nid: 2\n\n" + "data:x\n\nid: 9\ndata: cut"
	var got []string
	err := readEvents(strings.NewReader(in), func() {}, func(ev sseEvent) error {
		got = append(got, ev.id+"|"+ev.event+"|"+string(ev.data))
		return nil
	})
	want := []string{"1|entry|{\"a\":\n1}", "||x"}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("readEvents = %q, %v; want %q", got, err, want)
	}
}
