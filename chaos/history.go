package chaos

import (
	"sync"
	"time"

	"github.com/txlog/txlog/txid"
)

// OpKind is what a workload operation does.
type OpKind string

// Operation kinds.
const (
	// OpPut is a blind put: no precondition.
	OpPut OpKind = "put"
	// OpCAS is a put with if_version, the write half of a read-modify-write.
	OpCAS OpKind = "cas"
	// OpRead is a linearizable read.
	OpRead OpKind = "read"
)

// Answer classes: the first answer a client got for an operation.
const (
	AnswerOK       = "200"     // committed
	AnswerPending  = "202"     // accepted, resolved later
	AnswerRejected = "409"     // an if_version did not hold
	AnswerUnknown  = "unknown" // timeout, lost connection, 503 unknown_outcome
	AnswerFailed   = "failed"  // a read that failed, or a write refused with a 4xx
	AnswerNotFound = "404"     // a read of a key that does not exist
)

// Op is one operation of the workload and what became of it. The workload fills
// it in; the checkers only read it.
//
// Times come from this process's monotonic clock. End is when the client
// learned the final outcome (the answer, or a later lookup); zero means never,
// and such an operation may take effect at any time after Start.
type Op struct {
	Client         int       `json:"client"`
	Kind           OpKind    `json:"kind"`
	Key            string    `json:"key"`
	Value          int64     `json:"value,omitempty"`      // written by put and cas
	IfVersion      uint64    `json:"if_version,omitempty"` // cas only
	Ack            string    `json:"ack,omitempty"`
	IdempotencyKey string    `json:"idempotency_key,omitempty"`
	Start          time.Time `json:"start"`
	Answered       time.Time `json:"answered"` // when the first answer came
	End            time.Time `json:"end,omitzero"`
	Answer         string    `json:"answer"` // one of the Answer classes
	Retries        int       `json:"retries,omitempty"`
	// Accepted is set when an attempt was answered 202: the write must resolve
	// to committed or rejected later.
	Accepted bool     `json:"accepted,omitempty"`
	Result   OpResult `json:"result"`
}

// OpResult is the final outcome of an Op as far as the client knows it.
type OpResult struct {
	// Status is committed, rejected or unknown for writes; for reads, committed
	// means the read returned.
	Status  string  `json:"status"`
	TxID    txid.ID `json:"txid,omitempty"`
	Index   uint64  `json:"index,omitempty"`
	Version uint64  `json:"version,omitempty"` // the version written, or read
	// Actual is the version a rejected cas found.
	Actual uint64 `json:"actual,omitempty"`
	// Found and ReadValue are the answer of a read: ReadValue is meaningful only
	// when Found.
	Found     bool   `json:"found,omitempty"`
	ReadValue int64  `json:"read_value,omitempty"`
	Err       string `json:"err,omitempty"`
	// FromLog is set when the outcome was learned only from the final log.
	FromLog bool `json:"from_log,omitempty"`
}

// IsWrite reports whether the operation writes.
func (o *Op) IsWrite() bool { return o.Kind == OpPut || o.Kind == OpCAS }

// History is the operations of a run, appended to by the workload's clients.
type History struct {
	mu  sync.Mutex
	ops []*Op
}

// Add appends op and returns it; the caller keeps filling it in under Update.
func (h *History) Add(op *Op) *Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, op)
	return op
}

// Update runs f on op while holding the history's lock, so that a reader of
// Snapshot never sees a half-written op.
func (h *History) Update(op *Op, f func(*Op)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f(op)
}

// Snapshot returns copies of all operations so far, in the order they started.
func (h *History) Snapshot() []Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Op, len(h.ops))
	for i, op := range h.ops {
		out[i] = *op
	}
	return out
}
