package wire

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/txlog/txlog/txid"
)

// Op is one operation of a transaction on the wire.
type Op struct {
	Op        string          `json:"op"` // "put", "delete" or "commit_offset"
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value,omitempty"`      // required for put, forbidden for delete
	IfVersion *uint64         `json:"if_version,omitempty"` // nil: unconditional; 0: must not exist; N: version must be N
	// Group, Offset and Reset are the fields of a commit_offset op (OpCommitOffset);
	// Key, Value and IfVersion are then empty.
	Group  string `json:"group,omitempty"`
	Offset uint64 `json:"offset,omitempty"`
	Reset  bool   `json:"reset,omitempty"`
	// Raw, only in answers (the log), is set when the stored value is not
	// one JSON value: Value is then a JSON string of its bytes, RawText or
	// RawBase64 (raw.go). A request's op has no such field.
	Raw string `json:"raw,omitempty"`
}

// Op names on the wire.
const (
	OpPut    = "put"
	OpDelete = "delete"
)

// TxRequest is the body of POST /v1/tx and one element of a batch.
type TxRequest struct {
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	Ops            []Op   `json:"ops"`
	// Fence, if set, makes the transaction apply only while the lease is
	// held with the token (checked when the entry is applied).
	Fence *Fence `json:"fence,omitempty"`
	// Notify, if set, asks for a callback when the transaction is decided
	// (docs/consuming.md, "Callbacks").
	Notify *Notify `json:"notify,omitempty"`
}

// Callback is the body the cluster POSTs to a transaction's notify url once
// it is decided; every field is always present, conflict null unless
// rejected. The X-Txlog-Delivery header (CallbackDeliveryID) identifies it.
type Callback struct {
	TxID           txid.ID   `json:"txid"`
	IdempotencyKey string    `json:"idempotency_key"`
	Status         string    `json:"status"`
	Index          uint64    `json:"index"`
	Conflict       *Conflict `json:"conflict"`
}

// CallbackDeliveryID is the X-Txlog-Delivery of the callback of the
// transaction id decided at index: the same on every attempt and every
// leader, so a receiver deduplicates on it.
func CallbackDeliveryID(index uint64, id txid.ID) string {
	return strconv.FormatUint(index, 10) + "-" + id.String()
}

// Notify is a transaction's callback: {"url":"http://…"}, the host in the
// node's --webhook-allow list.
type Notify struct {
	URL string `json:"url"`
}

// Fence is a transaction's condition on a lease: {"lease":"name","token":N}.
type Fence struct {
	Lease string `json:"lease"`
	Token uint64 `json:"token"`
}

// BatchRequest is the body of POST /v1/tx/batch.
type BatchRequest struct {
	Txs []TxRequest `json:"txs"`
}

// Transaction statuses on the wire.
const (
	StatusCommitted = "committed"
	StatusRejected  = "rejected"
	StatusPending   = "pending"
	StatusUnknown   = "unknown"
)

// Where a parked transaction is held (TxResult.HeldBy).
const (
	HeldByWAL   = "wal"
	HeldByRedis = "redis"
)

// Acknowledgement levels (query parameter ack).
const (
	AckQuorum   = "quorum"
	AckAll      = "all"
	AckAccepted = "accepted"
)

// Read consistency levels (query parameter consistency).
const (
	ConsistencyLinearizable = "linearizable"
	ConsistencyLeader       = "leader"
	ConsistencyStale        = "stale"
)

// Conflict is a failed if_version precondition, or with Fence set (and no
// Key) a failed fence: Expected is its token, Actual the lease's (0 if free),
// or with Group set (and no Key) a commit_offset that does not move the
// group's offset forward: Expected is the offset asked for, Actual the
// group's committed offset (0 if it has none).
type Conflict struct {
	Key      string `json:"key,omitempty"`
	Fence    string `json:"fence,omitempty"`
	Group    string `json:"group,omitempty"`
	Expected uint64 `json:"expected"`
	Actual   uint64 `json:"actual"`
}

// TxResult is the answer for one transaction.
//
// TxID is omitted when zero (no ID was issued, for example for a batch member
// that failed before it got one), because the zero ID has no text form.
type TxResult struct {
	TxID           txid.ID           `json:"txid,omitempty"`
	Status         string            `json:"status"`
	IdempotencyKey string            `json:"idempotency_key,omitempty"`
	Index          uint64            `json:"index,omitempty"`
	Term           uint64            `json:"term,omitempty"`
	Versions       map[string]uint64 `json:"versions,omitempty"`
	Conflict       *Conflict         `json:"conflict,omitempty"`
	Duplicate      bool              `json:"duplicate,omitempty"`
	// Durability is the acknowledgement level actually reached ("quorum", "all", "accepted").
	Durability string `json:"durability,omitempty"`
	// HeldBy says, for a transaction answered pending because the node parked
	// it, where it is held until it commits: HeldByWAL, the node's intake WAL
	// (fsynced), and HeldByRedis when it is parked in Redis too.
	HeldBy []string `json:"held_by,omitempty"`
	// Error is set in batch results for a transaction that failed on its own.
	Error *ErrorBody `json:"error,omitempty"`
}

// BatchResponse is the answer of POST /v1/tx/batch: one result per transaction, in order.
type BatchResponse struct {
	Results []TxResult `json:"results"`
}

// KV is the answer of GET /v1/kv/{key}.
type KV struct {
	Key     string          `json:"key"`
	Value   json.RawMessage `json:"value"`
	Version uint64          `json:"version"`
	Index   uint64          `json:"index"` // the Raft index that last wrote the key
	// Raw is set when the stored value is not one JSON value: Value is then
	// a JSON string of its bytes, RawText or RawBase64 (raw.go).
	Raw string `json:"raw,omitempty"`
	// Unreadable is true when the key's stored state, or the log record that
	// holds its value, could not be decoded: Value is null, and Version and
	// Index are what could be read (0 if not).
	Unreadable bool `json:"unreadable,omitempty"`
}

// LogEntry is one committed transaction in GET /v1/log.
type LogEntry struct {
	Index          uint64            `json:"index"`
	Term           uint64            `json:"term"`
	TxID           txid.ID           `json:"txid"`
	IdempotencyKey string            `json:"idempotency_key,omitempty"`
	Time           time.Time         `json:"time"` // the leader-stamped time of the entry
	Ops            []Op              `json:"ops"`
	Fence          *Fence            `json:"fence,omitempty"`
	Status         string            `json:"status"`
	Conflict       *Conflict         `json:"conflict,omitempty"`
	Versions       map[string]uint64 `json:"versions,omitempty"`
	// Unreadable is true when the stored record at Index could not be
	// decoded: Status is StatusUnreadable, Record holds the stored bytes
	// (base64 in JSON), and the other fields are zero (Ops empty).
	Unreadable bool   `json:"unreadable,omitempty"`
	Record     []byte `json:"record,omitempty"`
}

// LogPage is the answer of GET /v1/log. Next is the index to ask for next; it equals
// the from that was asked for when there is nothing more yet.
type LogPage struct {
	Entries []LogEntry `json:"entries"`
	Next    uint64     `json:"next"`
}

// Member is one server of the Raft configuration.
type Member struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft_addr"`
	HTTPAddr string `json:"http_addr,omitempty"`
	Suffrage string `json:"suffrage"` // "voter", "nonvoter", "staging"
	Leader   bool   `json:"leader"`
	// LastContact is the time since the leader last heard from this member, as the
	// leader sees it; empty when unknown (asked of a follower) or for the leader itself.
	LastContact string `json:"last_contact,omitempty"`
	// NodeNumber is the txid node number the member published in the node
	// registry; 0 (omitted) while it has not published one.
	NodeNumber int `json:"node_number,omitempty"`
}

// ClusterStatus is the answer of GET /v1/cluster.
type ClusterStatus struct {
	ID             string   `json:"id"`
	State          string   `json:"state"` // "leader", "follower", "candidate", "shutdown"
	LeaderID       string   `json:"leader_id,omitempty"`
	LeaderHTTPAddr string   `json:"leader_http_addr,omitempty"`
	Term           uint64   `json:"term"`
	CommitIndex    uint64   `json:"commit_index"`
	AppliedIndex   uint64   `json:"applied_index"`
	Members        []Member `json:"members"`
	// ClusterID is the ID of the cluster this node belongs to, 32 hex digits;
	// empty while it has none (a node waiting to bootstrap or to be joined).
	ClusterID string `json:"cluster_id,omitempty"`
	// Extra holds component states that later parts add (for example the Redis breaker).
	Extra map[string]string `json:"extra,omitempty"`
}

// JoinRequest is the body of POST /v1/cluster/join.
type JoinRequest struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft_addr"`
	HTTPAddr string `json:"http_addr,omitempty"`
	Voter    *bool  `json:"voter,omitempty"` // default true
	// NodeNumber is the txid node number the server holds or asks for,
	// 1..txid.MaxNode; 0 (omitted) lets the leader assign a free one.
	NodeNumber int `json:"node_number,omitempty"`
	// Replace, when true, lets a join name a member's id with other
	// addresses: the member is re-pointed to them. Without it such a join is
	// refused with 409 member_exists; a join with the member's own
	// addresses is idempotent either way.
	Replace bool `json:"replace,omitempty"`
}

// JoinResult is the answer of POST /v1/cluster/join.
type JoinResult struct {
	Status string `json:"status"` // "ok"
	// NodeNumber is the txid node number the server holds in the cluster: the
	// one it asked for, or the one the leader assigned. The server persists it
	// before it issues a txid.
	NodeNumber int `json:"node_number"`
	// ClusterID is the cluster's ID, 32 hex digits; the server persists it
	// before it takes part in the cluster (its peer link presents it).
	ClusterID string `json:"cluster_id,omitempty"`
}

// TransferRequest is the body of POST /v1/cluster/transfer-leadership (optional).
type TransferRequest struct {
	ID string `json:"id,omitempty"` // the server to hand leadership to; empty lets Raft choose
}

// TransferResult is the answer of POST /v1/cluster/transfer-leadership.
type TransferResult struct {
	LeaderID string `json:"leader_id"`
	// Unchanged is true when the request named the leader itself: nothing
	// was done, and the answer came at once.
	Unchanged bool `json:"unchanged,omitempty"`
}

// ErrorBody is the body of every error answer: {"error":{"code","message"}}, plus
// the txid for errors about a transaction whose ID is known.
type ErrorBody struct {
	Code    string  `json:"code"`
	Message string  `json:"message"`
	TxID    txid.ID `json:"txid,omitempty"`
}
