package api

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/txlog/txlog/api/wire"
)

// A reader is never stopped at a stored entry. A record the store could not
// decode comes from the Backend already marked (wire.LogEntry.Unreadable,
// wire.KV.Unreadable); a value that is not one JSON value (a put stored
// without the API's checks) makes encoding/json refuse the answer, and only
// then are the values checked one by one and those that are not JSON given
// as strings (wire.RawValue), so that the common answer costs no second scan
// of its values. Either way the record is counted in
// txlog_unreadable_records_total and logged at Error with its index (or
// key), once per answer that meets it.

// newUnreadableCounter makes txlog_unreadable_records_total.
func newUnreadableCounter() prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{
		Name: "txlog_unreadable_records_total",
		Help: "Stored records a read answered raw because they could not be decoded or a value is not JSON, counted once per answer.",
	})
}

// unreadableRecord counts and logs one unreadable record: at index in the
// log, or the state of key.
func (a *answers) unreadableRecord(index uint64, key string) {
	a.unreadable.Inc()
	if key != "" {
		a.log.Error("unreadable stored record", "key", key, "index", index)
		return
	}
	a.log.Error("unreadable stored record", "index", index)
}

// readableEntry returns e with the values that are not JSON given raw
// (wire.LogEntry.Readable), counting it if it had any.
func (a *answers) readableEntry(e wire.LogEntry) wire.LogEntry {
	r, n := e.Readable()
	if n > 0 {
		a.unreadableRecord(e.Index, "")
	}
	return r
}

// logPageJSON encodes a page of the log: entries whose record or values are
// unreadable go out raw, never a failed answer.
func (a *answers) logPageJSON(p wire.LogPage) ([]byte, error) {
	for _, e := range p.Entries {
		if e.Unreadable {
			a.unreadableRecord(e.Index, "")
		}
	}
	b, err := wire.MarshalJSON(p)
	if err == nil {
		return b, nil
	}
	p.Entries = slices.Clone(p.Entries) // the page may be shared
	for i, e := range p.Entries {
		p.Entries[i] = a.readableEntry(e)
	}
	return wire.MarshalJSON(p)
}

// kvJSON encodes a key's state, raw if its value is not JSON.
func (a *answers) kvJSON(kv wire.KV) ([]byte, error) {
	if kv.Unreadable {
		a.unreadableRecord(kv.Index, kv.Key)
	}
	b, err := wire.MarshalJSON(kv)
	if err == nil {
		return b, nil
	}
	r, raw := kv.Readable()
	if raw {
		a.unreadableRecord(kv.Index, kv.Key)
	}
	return wire.MarshalJSON(r)
}
