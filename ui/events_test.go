package ui

import (
	"testing"
	"time"
)

func TestEventsRing(t *testing.T) {
	var es Events
	if got := es.List(); len(got) != 0 {
		t.Fatalf("List() of new Events = %v, want none", got)
	}
	for i := range MaxEvents + 5 {
		es.Add(Event{At: time.Unix(int64(i), 0), Kind: EventJoin})
	}
	got := es.List()
	if len(got) != MaxEvents || got[0].At.Unix() != 5 || got[len(got)-1].At.Unix() != MaxEvents+4 {
		t.Fatalf("List() = %d events from %d to %d, want %d from 5 to %d", len(got), got[0].At.Unix(), got[len(got)-1].At.Unix(), MaxEvents, MaxEvents+4)
	}
}
