package node

import (
	"context"
	"errors"
	"log/slog"
	"slices"
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
