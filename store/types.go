package store

import (
	"errors"
	"fmt"
	"time"

	"github.com/txlog/txlog/txid"
)

// OpKind says what an Op does.
type OpKind uint8

// Op kinds. The numbers are part of the encoding and never change.
const (
	OpPut    OpKind = 1
	OpDelete OpKind = 2
	// OpCommitOffset sets the committed offset of the consumer group named by
	// Key to Offset (consumer.go); it writes no key.
	OpCommitOffset OpKind = 3
)

// Op is one operation of a transaction.
type Op struct {
	Kind OpKind
	Key  string // the key; for OpCommitOffset the group's name, by the rules of a key
	// Value is the raw JSON value of a put; nil for a delete. Apply stores it as is.
	Value []byte
	// HasIfVersion says whether IfVersion is a precondition. IfVersion 0 means the key
	// must not exist; N means its current version must equal N.
	HasIfVersion bool
	// Reset lets an OpCommitOffset move the offset back (or keep it).
	Reset     bool
	IfVersion uint64
	// Offset is the offset an OpCommitOffset commits; 0 for other kinds.
	Offset uint64
}

// Tx is a client transaction: all of its ops apply, or none.
type Tx struct {
	ID             txid.ID
	IdempotencyKey string // may be empty
	Ops            []Op
	// Fence, if set, makes the transaction apply only while the lease it
	// names is held with its token (lease.go); nil for most transactions.
	Fence *Fence
	// Notify, if not empty, is the url the cluster POSTs the outcome to once
	// the transaction is decided (notify.go); empty for most transactions.
	Notify string
}

// NodeInfo is what a node publishes about itself through the log.
type NodeInfo struct {
	ID       string
	HTTPAddr string
	RaftAddr string
	TxIDNode uint16 // the node number in the txids it issues
}

// CommandKind says what a Command carries.
type CommandKind uint8

// Command kinds. The numbers are part of the encoding and never change.
const (
	KindTx           CommandKind = 1 // Payload is EncodeTx bytes
	KindRegisterNode CommandKind = 2 // Payload is EncodeNode bytes
	KindLease        CommandKind = 3 // Payload is EncodeLeaseCommand bytes
	KindNotifyDone   CommandKind = 4 // Payload is EncodeNotifyDone bytes (notify.go)
)

// Command is the data of one Raft log entry. The leader stamps Time and
// DedupWindow when it proposes, so that Apply depends only on the state and the
// entry, never on the applying node's clock or configuration.
type Command struct {
	Kind        CommandKind
	Time        int64         // leader's wall clock, Unix nanoseconds
	DedupWindow time.Duration // how long txid and idempotency-key records are kept
	Payload     []byte        // encoded Tx or NodeInfo; not re-encoded by EncodeCommand
}

// Entry is a committed Raft log entry handed to Apply.
type Entry struct {
	Index uint64
	Term  uint64
	Data  []byte // EncodeCommand bytes
}

// Status is the outcome of a transaction.
type Status uint8

// Statuses. The numbers are part of the encoding and never change.
const (
	StatusCommitted Status = 1
	StatusRejected  Status = 2
)

// Conflict records a failed if_version precondition, a failed fence, or a
// commit_offset that does not move its group's offset forward.
type Conflict struct {
	Key      string
	Expected uint64 // the if_version asked for; 0 means "must not exist"; a fence's token
	Actual   uint64 // the key's version when applied; 0 means it did not exist; the lease's token, 0 if free or expired
	// Fence is the lease of a failed Tx.Fence; then Key is empty.
	Fence string
	// Group is the consumer group of a refused OpCommitOffset; then Key and
	// Fence are empty, Expected is the offset asked for and Actual the
	// group's committed offset (0 if it has none).
	Group string
}

// Outcome is what happened to a transaction, as recorded by Apply.
type Outcome struct {
	TxID           txid.ID
	IdempotencyKey string
	Index          uint64
	Term           uint64
	Time           int64 // the entry's leader-stamped time, Unix nanoseconds
	Status         Status
	Conflict       *Conflict         // set when Status is StatusRejected
	Versions       map[string]uint64 // committed: each written key's new version, 0 for a delete
}

// Result is what Apply returns for one entry. Every node returns the same Result
// for the same entry applied to the same state.
//
//	entry                        Kind              Outcome    Duplicate  Skipped  Err
//	index <= applied index       0                 zero       false      true     nil
//	undecodable or unknown kind  0 or the kind     zero       false      false    wraps ErrCorrupt
//	new transaction              KindTx            new        false      false    nil
//	repeated txid or idem key    KindTx            original   true       false    nil
//	idem key of another tx       KindTx            original   false      false    nil   (Reused)
//	txid of another tx           KindTx            original   false      false    nil   (TxIDConflict)
//	node registration            KindRegisterNode  zero       false      false    nil
//	lease command                KindLease         zero       false      false    nil   (Lease)
type Result struct {
	// Outcome is the transaction's outcome. For a duplicate it is the original one.
	Outcome Outcome
	// Duplicate is true when the txid or idempotency key was already recorded
	// for the same transaction (SameTx): the entry changed nothing.
	Duplicate bool
	// Reused is true when the idempotency key was already recorded for another
	// transaction (not SameTx): the entry changed nothing, it is not a
	// duplicate, and Outcome is the original transaction's. Every node finds
	// the same, as for a conflict.
	Reused bool
	// TxIDConflict is true when the txid was already recorded for another
	// transaction (not SameTx), in an earlier batch or earlier in this one:
	// a txid names one transaction, so the entry changed nothing, it is
	// neither committed nor a duplicate, and Outcome is the recorded
	// transaction's. Every node finds the same.
	TxIDConflict bool
	// Skipped is true when the entry was at or below the applied index (a replay
	// after restart). A skipped entry is not decoded and changes nothing.
	Skipped bool
	// Kind is the kind of the entry's command; 0 when Skipped or when the command
	// header could not be decoded.
	Kind CommandKind
	// Lease is what a lease command did; nil for other kinds.
	Lease *LeaseOutcome
	// Err is set when the committed entry could not be applied because its data is
	// corrupt or of an unknown kind; it wraps ErrCorrupt. Apply recorded nothing for
	// the entry but moved the applied index past it. This is not a failure of the
	// node: every node reports the same Err for the same entry.
	Err error
}

// LogRecord is one committed transaction in log order.
type LogRecord struct {
	Outcome
	Ops   []Op
	Fence *Fence // the transaction's fence, if it had one (read with the ops)
	// Unreadable is set, wrapping ErrCorrupt, when the stored record could
	// not be decoded: then Index is its index, Raw its stored bytes, and
	// every other field is zero. Reader.Log goes on past it.
	Unreadable error
	Raw        []byte
}

// KV is one key's current state.
type KV struct {
	Key      string
	Value    []byte // raw JSON, as the put stored it
	Version  uint64
	ModIndex uint64 // the Raft index that last wrote the key
	// Unreadable is set, wrapping ErrCorrupt, when the key's stored state
	// or the log record holding its value could not be decoded: then Value
	// is nil, and Version and ModIndex are what could be read (0 if not).
	Unreadable error
}

// Limits checked by DecodeTx.
const (
	MaxOps                 = 10_000 // ops in one Tx
	MaxKeyBytes            = 1024   // bytes in an Op key, which must not be empty
	MaxIdempotencyKeyBytes = 128    // bytes in a Tx idempotency key
)

// DefaultDedupWindow is the dedup window Apply uses for a Command whose
// DedupWindow is zero or negative.
const DefaultDedupWindow = 24 * time.Hour

// Errors.
var (
	// ErrClosed is returned by the methods of a DB after Close.
	ErrClosed = errors.New("store closed")
	// ErrNotFound is returned by lookups of a txid, idempotency key or key that is not there.
	ErrNotFound = errors.New("not found")
	// ErrCorrupt is returned (wrapped) by decoders for bytes that are not a valid encoding.
	ErrCorrupt = errors.New("corrupt encoding")

	// ErrKeyReused is what a *KeyReusedError is (errors.Is).
	ErrKeyReused = errors.New("idempotency key reused for another transaction")

	// ErrTxIDConflict is returned (wrapped) by Reader.TxFor when the txid is
	// recorded for another transaction, as Apply refuses it
	// (Result.TxIDConflict).
	ErrTxIDConflict = errors.New("txid recorded for another transaction")

	// errNotIndexed is ErrNotFound from the in-memory idempotency index, which
	// is current, so no commit of open entries can change it.
	errNotIndexed = errors.New("not found in the idempotency index")
)

// KeyReusedError says that an idempotency key is recorded for another
// transaction than the one given with it (see SameTx).
type KeyReusedError struct {
	Key  string
	TxID txid.ID // the transaction recorded under Key
}

func (e *KeyReusedError) Error() string {
	return fmt.Sprintf("idempotency key %q: recorded for transaction %s, with other ops", e.Key, e.TxID)
}

// Is makes errors.Is(err, ErrKeyReused) true.
func (e *KeyReusedError) Is(target error) bool { return target == ErrKeyReused }
