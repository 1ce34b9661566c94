package ui

import (
	"sync"
	"time"
)

// EventKind names what happened. Alerts use EventAlert.
type EventKind string

// The kinds of event a node records.
const (
	EventLeaderChange EventKind = "leader_change"
	EventJoin         EventKind = "join"
	EventRemove       EventKind = "remove"
	EventAlert        EventKind = "alert"
)

// Event is one thing a node saw happen: the JSON of a /v1/events event.
type Event struct {
	At   time.Time `json:"at"`
	Kind EventKind `json:"kind"`
	// Since and FiredAt are set on alerts only: when the condition began
	// and when the alert was sent (At is FiredAt).
	Since   time.Time `json:"since,omitzero"`
	FiredAt time.Time `json:"fired_at,omitzero"`
	Node    string    `json:"node,omitempty"` // the node it is about: the new leader, the member that joined or left
	Term    uint64    `json:"term,omitempty"`
	Message string    `json:"message"`
}

// MaxEvents is how many events a node keeps; older ones are dropped.
const MaxEvents = 100

// Events is a ring of the last MaxEvents events, safe for concurrent use.
// Events are rare (a few a minute at most), so a mutex is enough.
type Events struct {
	mu   sync.Mutex
	ring []Event // oldest first, at most MaxEvents
}

// Add records e.
func (es *Events) Add(e Event) {
	es.mu.Lock()
	defer es.mu.Unlock()
	if len(es.ring) == MaxEvents {
		copy(es.ring, es.ring[1:])
		es.ring = es.ring[:MaxEvents-1]
	}
	es.ring = append(es.ring, e)
}

// List returns the kept events, oldest first, in a new slice.
func (es *Events) List() []Event {
	es.mu.Lock()
	defer es.mu.Unlock()
	return append([]Event(nil), es.ring...)
}
