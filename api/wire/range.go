package wire

// Range reads: GET /v1/kv?prefix=P&after=K&limit=N (docs/api.md, "Range
// reads").

// Bounds of a range read's limit.
const (
	DefaultRangeLimit = 100
	MaxRangeLimit     = 1000
)

// KeySpan is the keys from Start (included) to End (excluded); End "" has
// no end.
type KeySpan struct {
	Start string `json:"start"`
	End   string `json:"end,omitempty"`
}

// RangeRequest is a range read as the Backend receives it: the spans of
// keys the read covers (the prefix, cut to what the caller's credential
// sees), in key order and not overlapping; the keys strictly after After;
// at most Limit of them. It is also the body of POST /v1/internal/range,
// by which a node forwards a range read to the leader.
type RangeRequest struct {
	Spans    []KeySpan `json:"spans"`
	After    string    `json:"after,omitempty"`
	Limit    int       `json:"limit"`
	KeysOnly bool      `json:"keys_only,omitempty"`
	// Consistency is set only on the body of POST /v1/internal/range.
	Consistency string `json:"consistency,omitempty"`
}

// KVPage is the answer of a range read: keys in key order, each with its
// value (none with keys_only=true) and version, all as of the applied index
// Index. More is true when keys follow; pass Next as after to read them.
// Next is the last key of KVs, or the request's after when KVs is empty.
type KVPage struct {
	Index uint64 `json:"index"`
	KVs   []KV   `json:"kvs"`
	More  bool   `json:"more"`
	Next  string `json:"next"`
}

// PrefixSpan returns the span of the keys that start with prefix: every key
// for "".
func PrefixSpan(prefix string) KeySpan {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return KeySpan{Start: prefix, End: string(b[:i+1])}
		}
	}
	return KeySpan{Start: prefix}
}
