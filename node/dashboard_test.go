package node

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/replication"
	"github.com/txlog/txlog/ui"
)

func TestDashboardLeaderEvents(t *testing.T) {
	d := newDashboard(nil, nil, slog.New(slog.DiscardHandler))
	at := time.Unix(100, 0)
	for _, c := range []replication.LeaderChange{
		{LeaderID: "n1", Term: 2},
		{LeaderID: "n1", Term: 2, Self: true}, // the same leader: no event
		{Term: 2},                             // no leader
		{Term: 3},                             // still none: no event
		{LeaderID: "n2", Term: 3},
		{LeaderID: "n2", Term: 4}, // re-elected in a new term
	} {
		d.leaderChanged(c, at)
	}
	var got []string
	for _, e := range d.events.List() {
		if e.Kind != ui.EventLeaderChange {
			t.Fatalf("event %+v, want kind %s", e, ui.EventLeaderChange)
		}
		got = append(got, e.Message)
	}
	want := []string{"n1 is the leader in term 2", "no leader", "n2 is the leader in term 3", "n2 is the leader in term 4"}
	if !slices.Equal(got, want) {
		t.Fatalf("events = %q, want %q", got, want)
	}
}

func TestDashboardMemberEvents(t *testing.T) {
	d := newDashboard(nil, nil, slog.New(slog.DiscardHandler))
	reads := [][]string{
		{"n1", "n2", "n3"},
		nil, // a failed read
		{"n1", "n2", "n3", "n4"},
		{"n1", "n3", "n4"},
		{"n1", "n3", "n4"},
	}
	i := 0
	d.members = func(context.Context) ([]replication.Member, error) {
		ids := reads[i]
		i++
		if ids == nil {
			return nil, errors.New("no leader")
		}
		var ms []replication.Member
		for _, id := range ids {
			ms = append(ms, replication.Member{ID: id, Addr: id + ":7000"})
		}
		return ms, nil
	}
	for range reads {
		d.readMembers(context.Background(), time.Unix(100, 0))
	}
	var got []string
	for _, e := range d.events.List() {
		got = append(got, string(e.Kind)+" "+e.Node)
	}
	want := []string{"join n4", "remove n2"}
	if !slices.Equal(got, want) {
		t.Fatalf("events = %q, want %q", got, want)
	}
}

// TestDashboardMemberStats serves GET /v1/stats/members with real peer links:
// n2 answers its stats, n3 accepts the request and never answers, n4's
// address refuses connections and n5 has no peer address. The answer has n1's
// (this node's) and n2's stats and says, for each of the others, why not,
// after ui.DefaultPeerTimeout rather than never.
func TestDashboardMemberStats(t *testing.T) {
	n2 := ui.NewHandler(ui.Config{ID: "n2", Stats: ui.NewStats(time.Now()), Events: &ui.Events{},
		Status: func() ui.NodeStatus { return ui.NodeStatus{State: "follower", AppliedIndex: 7} }})
	n2Addr, _ := servePeer(t, n2)
	release := make(chan struct{})
	n3Addr, _ := servePeer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release // until the test ends, whatever the asker does
	}))
	t.Cleanup(func() { close(release) }) // before servePeer's Close: cleanups run last first
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n4Addr := ln.Addr().String()
	ln.Close()

	p := testPeers(t)
	p.addrs = map[string]string{"n2": n2Addr, "n3": n3Addr, "n4": n4Addr}
	p.addrsAt = time.Now().Add(time.Hour) // fresh for the test: no Raft to read them from
	d := newDashboard(nil, p, slog.New(slog.DiscardHandler))
	d.members = func(context.Context) ([]replication.Member, error) {
		var ms []replication.Member
		for _, id := range []string{"n1", "n2", "n3", "n4", "n5"} {
			ms = append(ms, replication.Member{ID: id, Addr: p.addrs[id]})
		}
		return ms, nil
	}
	h := d.handler("n1", nil)

	done := make(chan *httptest.ResponseRecorder, 1)
	start := time.Now()
	go func() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/v1/stats/members", nil))
		done <- w
	}()
	var w *httptest.ResponseRecorder
	select {
	case w = <-done:
	case <-time.After(10 * ui.DefaultPeerTimeout):
		t.Fatalf("GET /v1/stats/members: no answer after %v", 10*ui.DefaultPeerTimeout)
	}
	t.Logf("answered in %v", time.Since(start).Round(time.Millisecond))
	var a ui.MembersAnswer
	if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil || w.Code != 200 {
		t.Fatalf("GET /v1/stats/members = %d %q (%v)", w.Code, w.Body.String(), err)
	}
	want := map[string]string{
		"n1": "ok",
		"n2": "ok",
		"n3": "no answer within " + ui.DefaultPeerTimeout.String(),
		"n4": "refused",
		"n5": "not in this node's Raft configuration",
	}
	if len(a.Members) != len(want) {
		t.Fatalf("members = %+v, want %d", a.Members, len(want))
	}
	for _, m := range a.Members {
		switch wm := want[m.ID]; {
		case wm == "ok" && (m.Stats == nil || m.Stats.ID != m.ID || m.Error != ""):
			t.Errorf("member %s = %+v, want its stats", m.ID, m)
		case wm != "ok" && (m.Stats != nil || !strings.Contains(m.Error, wm)):
			t.Errorf("member %s = stats %v, error %q; want an error with %q", m.ID, m.Stats, m.Error, wm)
		}
	}
	if a.Members[1].Stats != nil && a.Members[1].Stats.Node.AppliedIndex != 7 {
		t.Errorf("n2's stats = %+v, want its applied index 7", a.Members[1].Stats)
	}
}
