package wire

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/txlog/txlog/txid"
)

// Sentinel errors a Backend returns and a Client gives back. Check with errors.Is.
var (
	ErrNotFound       = errors.New("not found")
	ErrNoLeader       = errors.New("no leader reachable")
	ErrNotLeader      = errors.New("this node is not the leader")
	ErrUnknownOutcome = errors.New("transaction outcome unknown")
	ErrShuttingDown   = errors.New("node is shutting down")
	// ErrOverloaded means the node holds too many accepted, unresolved
	// transactions to take more; nothing was done. Retry later or elsewhere.
	ErrOverloaded = errors.New("node overloaded: too many unresolved transactions")
	ErrTimeout    = errors.New("timed out")
	// ErrRemoved means this node was removed from the cluster: it takes no
	// writes and is about to stop. Nothing was done; send to another node.
	ErrRemoved = errors.New("node removed from the cluster")
	// ErrNodeNumberClash means another member holds this node's txid node
	// number, so the txids it would issue are not unique: it takes no writes
	// until one of the two is removed. Nothing was done; send to another node.
	ErrNodeNumberClash = errors.New("txid node number held by another member")
	// ErrIdempotencyKeyReused means the idempotency key is recorded for
	// another transaction (other ops or preconditions); nothing was done.
	// The error is a *KeyReusedError, which names that transaction.
	ErrIdempotencyKeyReused = errors.New("idempotency key reused for another transaction")
	// ErrTxIDConflict means the transaction's txid is recorded for another
	// transaction (other bytes): a txid names one transaction, so nothing
	// was done. A node that issued the txid itself proposes the transaction
	// again under a fresh one; a client sees this only for a txid it did not
	// get from a node (or when that retry met the same).
	ErrTxIDConflict = errors.New("txid recorded for another transaction")
	// ErrTooManyStreams means the node serves as many log streams and
	// waiting reads as it takes (txlogd --max-streams); nothing was done.
	// Retry later or on another node.
	ErrTooManyStreams = errors.New("too many streams and waiting reads on this node")
	// ErrStreamFull means a client stream had as many requests in flight as
	// the node takes on one (txlogd --client-stream-inflight); nothing was
	// done. Retry once an answer came back.
	ErrStreamFull = errors.New("too many requests in flight on this client stream")
)

// KeyReusedError is ErrIdempotencyKeyReused with the transaction the key is
// recorded for. On the wire it is code idempotency_key_reused, status 422,
// with that transaction's ID in the error object's txid.
type KeyReusedError struct {
	Key  string  // the idempotency key; empty when decoded from the wire
	TxID txid.ID // the transaction first recorded under Key
	// Message, when set, is the whole text of Error (as it came on the wire).
	Message string
}

func (e *KeyReusedError) Error() string {
	if e.Message != "" {
		return e.Message
	}
	return fmt.Sprintf("idempotency key %q is recorded for transaction %s, with other ops; use a new key for a new transaction", e.Key, e.TxID)
}

// Is makes errors.Is(err, ErrIdempotencyKeyReused) true.
func (e *KeyReusedError) Is(target error) bool { return target == ErrIdempotencyKeyReused }

// Error is a failure with a wire code, mostly bad input. Its HTTP status comes from
// the code table.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Is makes errors.Is(err, s) true for the sentinel s of the error's code
// (Sentinel), so that a not_found *Error built from the wording table is
// still ErrNotFound.
func (e *Error) Is(target error) bool {
	s := codes[e.Code].sentinel
	return s != nil && s == target
}

// Msg names one wording of the messages table.
type Msg int

// The wordings of the messages table. Each names what is wrong with its
// parts: the kind and the id that is missing, the parameter, its value and
// what is wanted.
const (
	MsgNoRoute                Msg = iota // method, escaped path
	MsgMethodNotAllowed                  // method, escaped path, the methods it takes
	MsgKeyNotFound                       // key
	MsgTxNotFound                        // txid
	MsgIdempotencyKeyNotFound            // idempotency key
	MsgLeaseNotFound                     // lease name
	MsgConsumerNotFound                  // group
	MsgNotMember                         // server id
	MsgNotServed                         // the kind of thing (leases, consumer groups)
	MsgUnknownParam                      // parameter, the parameters the route takes
	MsgUnknownParamNone                  // parameter
	MsgParamRepeated                     // parameter, times
	MsgParamMissing                      // parameter, what is wanted
	MsgParamValue                        // parameter, value, what is wanted
	MsgParamInvalid                      // parameter, value, what is wrong with it
	MsgTransferNotMember                 // the id of the body
	MsgTransferNoVoter                   // the leader's id

	// The wordings of a body's field, which follow its path
	// ("ops[0].key: empty"): the decoder of the body gives the code
	// (invalid_transaction for a transaction, bad_request for the other
	// bodies); the table's bad_request is the one of a body without its own.
	// The decoders keep the Msg and its parts and format only when the
	// error is written.
	MsgFieldUnknown
	MsgFieldMissing
	MsgFieldEmpty
	MsgFieldMissingOrEmpty
	MsgFieldTwice
	MsgFieldKind       // the kind wanted, the kind given (or its text)
	MsgFieldTooLong    // its length, the limit
	MsgFieldTooMany    // the limit
	MsgFieldNegative   // the number
	MsgFieldOverflow   // the number
	MsgFieldInvalid    // what encoding/json said
	MsgFieldSameKey    // the other transaction's index
	MsgFieldGroupTwice // group, the other op's index
	MsgFieldNotPositive
	MsgFieldTokenNotPositive
	MsgFieldOffsetNotPositive
	MsgFieldOpUnknown    // the op given, the ops
	MsgFieldOnlyOn       // the op
	MsgFieldNotAllowedOn // the op
	MsgFieldKeyOnCommit  // the op
	MsgFieldPutValue
	MsgFieldNodeNumber // the number, the highest
	MsgFieldAddrForm   // the address
	MsgFieldAddrHost   // the address
	MsgFieldAddrPort   // the address
	MsgFieldDuration   // the text
	MsgFieldBetween    // the value, the bounds

	// Body and header errors, each with its own code.
	MsgNotUTF8        // the field's path, or body
	MsgHasReplacement // the field's path
	MsgBodyEmpty
	MsgBodyTruncated
	MsgBodySyntax     // offset, what encoding/json said
	MsgBodyBadJSON    // what encoding/json said
	MsgBodyTrailing   // offset
	MsgBodyTooLarge   // the limit
	MsgBodySlow       // the time allowed
	MsgBodyRead       // the read's error
	MsgHeaderRepeated // header, times
	MsgHeaderEmpty    // header
	MsgHeaderValue    // header, value, what is wanted
	MsgHeaderDiffers  // header, its value, the body's key
	MsgHeaderOnBatch  // header
	MsgNotJSONValue   // the field's path
	MsgJSONSpaced     // the field's path
	MsgNotifyRefused  // the field's path, why
)

// messages is the one table of the wording of error messages: each Msg's
// code (whose status is in codes) and its format, which the handlers fill
// with the parts (New). A message says what is wrong once, and never names
// an internal URL or a peer's address.
var messages = [...]struct {
	code   string
	format string
}{
	MsgNoRoute:                {CodeNotFound, "no route %s %s"},
	MsgMethodNotAllowed:       {CodeMethodNotAllowed, "method %s not allowed on %s; it takes %s"},
	MsgKeyNotFound:            {CodeNotFound, "key %q not found"},
	MsgTxNotFound:             {CodeNotFound, "transaction %s not found"},
	MsgIdempotencyKeyNotFound: {CodeNotFound, "no transaction under idempotency key %q"},
	MsgLeaseNotFound:          {CodeNotFound, "lease %q not found (free or expired)"},
	MsgConsumerNotFound:       {CodeNotFound, "consumer group %q has no committed offset"},
	MsgNotMember:              {CodeNotFound, "node %q is not a member"},
	MsgNotServed:              {CodeNotFound, "%s are not served by this node"},
	MsgUnknownParam:           {CodeInvalidParam, "unknown parameter %q; this route takes: %s"},
	MsgUnknownParamNone:       {CodeInvalidParam, "unknown parameter %q; this route takes no parameters"},
	MsgParamRepeated:          {CodeInvalidParam, "parameter %q given %d times; give it once"},
	MsgParamMissing:           {CodeInvalidParam, "parameter %q missing; want %s"},
	MsgParamValue:             {CodeInvalidParam, "parameter %s=%q: want %s"},
	MsgParamInvalid:           {CodeInvalidParam, "parameter %s=%q: %s"},
	MsgTransferNotMember:      {CodeInvalidParam, "body field id=%q: not a member; want the id of a voter"},
	MsgTransferNoVoter:        {CodeConflict, "no voter but the leader %q to hand leadership to; name one with id, or join one first"},

	MsgFieldUnknown:           {CodeBadRequest, "unknown field"},
	MsgFieldMissing:           {CodeBadRequest, "missing"},
	MsgFieldEmpty:             {CodeBadRequest, "empty"},
	MsgFieldMissingOrEmpty:    {CodeBadRequest, "missing or empty"},
	MsgFieldTwice:             {CodeBadRequest, "given twice"},
	MsgFieldKind:              {CodeBadRequest, "want %s, got %s"},
	MsgFieldTooLong:           {CodeBadRequest, "%d bytes, limit %d"},
	MsgFieldTooMany:           {CodeBadRequest, "more than %d elements"},
	MsgFieldNegative:          {CodeBadRequest, "negative (%s)"},
	MsgFieldOverflow:          {CodeBadRequest, "%s does not fit 64 bits"},
	MsgFieldInvalid:           {CodeBadRequest, "%v"},
	MsgFieldSameKey:           {CodeBadRequest, "same as txs[%d]"},
	MsgFieldGroupTwice:        {CodeBadRequest, "%q committed twice (also ops[%d])"},
	MsgFieldNotPositive:       {CodeBadRequest, "must be positive"},
	MsgFieldTokenNotPositive:  {CodeBadRequest, "must be positive (leave it out to acquire)"},
	MsgFieldOffsetNotPositive: {CodeBadRequest, "must be positive (0 only with reset)"},
	MsgFieldOpUnknown:         {CodeBadRequest, "unknown %q, want %q, %q or %q"},
	MsgFieldOnlyOn:            {CodeBadRequest, "only on a %s"},
	MsgFieldNotAllowedOn:      {CodeBadRequest, "not allowed on a %s"},
	MsgFieldKeyOnCommit:       {CodeBadRequest, "not allowed on a %s (the group names it)"},
	MsgFieldPutValue:          {CodeBadRequest, "missing; a put needs a value (null is a value)"},
	MsgFieldNodeNumber:        {CodeBadRequest, "%d: want 1..%d (omit it to have one assigned)"},
	MsgFieldAddrForm:          {CodeBadRequest, "%q: want host:port"},
	MsgFieldAddrHost:          {CodeBadRequest, "%q: want a host other nodes can dial, not an empty or unspecified one"},
	MsgFieldAddrPort:          {CodeBadRequest, "%q: want a port in 1..65535"},
	MsgFieldDuration:          {CodeBadRequest, "%q: want a duration such as 5s"},
	MsgFieldBetween:           {CodeBadRequest, "%s: want %s to %s"},
	MsgNotUTF8:                {CodeInvalidUTF8, "%s: not valid UTF-8"},
	MsgHasReplacement:         {CodeInvalidUTF8, "%s: contains U+FFFD (a lone surrogate escape or a replaced byte)"},
	MsgBodyEmpty:              {CodeInvalidJSON, "body: empty"},
	MsgBodyTruncated:          {CodeInvalidJSON, "body: truncated JSON"},
	MsgBodySyntax:             {CodeInvalidJSON, "body: invalid JSON at offset %d: %v"},
	MsgBodyBadJSON:            {CodeInvalidJSON, "body: %v"},
	MsgBodyTrailing:           {CodeInvalidJSON, "body: data after the JSON value at offset %d"},
	MsgBodyTooLarge:           {CodePayloadTooLarge, "body: more than %d bytes"},
	MsgBodySlow:               {CodeRequestTimeout, "body: not all of it within %v"},
	MsgBodyRead:               {CodeBadRequest, "body: read: %v"},
	MsgHeaderRepeated:         {CodeInvalidParam, "%s header: given %d times"},
	MsgHeaderEmpty:            {CodeInvalidParam, "%s header: empty"},
	MsgHeaderValue:            {CodeInvalidParam, "%s header: %q, want %s"},
	MsgHeaderDiffers:          {CodeInvalidParam, "%s header %q differs from idempotency_key %q"},
	MsgHeaderOnBatch:          {CodeInvalidParam, "%s header: not allowed on a batch; set idempotency_key in each transaction"},
	MsgNotJSONValue:           {CodeInvalidJSON, "%s: not a JSON value"},
	MsgJSONSpaced:             {CodeInvalidJSON, "%s: JSON with white space (values are stored compacted)"},
	MsgNotifyRefused:          {CodeNotifyNotAllowed, "%s: %v"},
}

// New returns the *Error of wording m with its parts, through the messages
// table.
func New(m Msg, parts ...any) *Error {
	t := messages[m]
	return &Error{Code: t.code, Message: fmt.Sprintf(t.format, parts...)}
}

// Text returns the wording m with its parts, without a code: the part
// after a field's path in a body's error. Call it only on the error path
// (it formats).
func Text(m Msg, parts ...any) string { return fmt.Sprintf(messages[m].format, parts...) }

// MsgCode returns the wire code of wording m.
func MsgCode(m Msg) string { return messages[m].code }

// Msgs returns every wording of the table, for tests.
func Msgs() []Msg {
	out := make([]Msg, len(messages))
	for i := range out {
		out[i] = Msg(i)
	}
	return out
}

// Wire error codes.
const (
	CodeBadRequest       = "bad_request"
	CodeInvalidJSON      = "invalid_json"
	CodeInvalidUTF8      = "invalid_utf8"
	CodeInvalidTx        = "invalid_transaction"
	CodeInvalidParam     = "invalid_parameter"
	CodePayloadTooLarge  = "payload_too_large"
	CodeRequestTimeout   = "request_timeout"
	CodeNotFound         = "not_found"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeConflict         = "conflict"
	CodeNoLeader         = "no_leader"
	CodeNotLeader        = "not_leader"
	CodeUnknownOutcome   = "unknown_outcome"
	CodeShuttingDown     = "shutting_down"
	CodeOverloaded       = "overloaded"
	CodeTimeout          = "timeout"
	CodeNotReady         = "not_ready"
	CodeInternal         = "internal"
	// Membership (POST /v1/cluster/join, and writes on a node that may not
	// take them).
	CodeNodeNumberTaken = "node_number_taken"
	CodeNodeNumberClash = "node_number_clash"
	CodeRemoved         = "removed"
	// CodeMemberExists: a join names a member's id with another Raft or
	// HTTP address, without "replace": true (409).
	CodeMemberExists = "member_exists"
	// CodeIdempotencyKeyReused: the key names another transaction (422).
	CodeIdempotencyKeyReused = "idempotency_key_reused"
	// CodeTxIDConflict: the txid names another transaction (409).
	CodeTxIDConflict = "txid_conflict"
	// CodeRaftStateLost: the node lost its Raft log or its saved term and vote
	// while keeping its store, so it does not run Raft; nothing was done.
	CodeRaftStateLost = "raft_state_lost"
	// CodeNotifyNotAllowed: a transaction's notify url is not http(s) or its
	// host is not in the node's --webhook-allow list (or no list is set).
	CodeNotifyNotAllowed = "notify_not_allowed"
	// CodeTooManyStreams: a log stream or a waiting read past the node's
	// --max-streams (503, with Retry-After).
	CodeTooManyStreams = "too_many_streams"
	// CodeStreamFull: a request of a client stream past the node's
	// --client-stream-inflight requests in flight on it (429).
	CodeStreamFull = "stream_full"
	// CodeUnauthenticated: auth is on and the request carries no credential,
	// or one the node does not know (401, with WWW-Authenticate).
	CodeUnauthenticated = "unauthenticated"
	// CodeForbidden: the credential's role or key scope does not allow the
	// request, or its Origin or Host header is not allowed (403).
	CodeForbidden = "forbidden"
)

// codes is the one table from wire code to HTTP status and sentinel, shared by the
// handlers (error → status, code) and the client (status, code → error).
var codes = map[string]struct {
	status   int
	sentinel error // nil: the code maps to *Error
}{
	CodeBadRequest:       {http.StatusBadRequest, nil},
	CodeInvalidJSON:      {http.StatusBadRequest, nil},
	CodeInvalidUTF8:      {http.StatusBadRequest, nil},
	CodeInvalidTx:        {http.StatusBadRequest, nil},
	CodeInvalidParam:     {http.StatusBadRequest, nil},
	CodePayloadTooLarge:  {http.StatusRequestEntityTooLarge, nil},
	CodeRequestTimeout:   {http.StatusRequestTimeout, nil},
	CodeNotFound:         {http.StatusNotFound, ErrNotFound},
	CodeMethodNotAllowed: {http.StatusMethodNotAllowed, nil},
	CodeConflict:         {http.StatusConflict, nil},
	CodeNoLeader:         {http.StatusServiceUnavailable, ErrNoLeader},
	CodeNotLeader:        {http.StatusServiceUnavailable, ErrNotLeader},
	CodeUnknownOutcome:   {http.StatusServiceUnavailable, ErrUnknownOutcome},
	CodeShuttingDown:     {http.StatusServiceUnavailable, ErrShuttingDown},
	CodeOverloaded:       {http.StatusServiceUnavailable, ErrOverloaded},
	CodeTimeout:          {http.StatusGatewayTimeout, ErrTimeout},
	CodeNotReady:         {http.StatusServiceUnavailable, nil},
	CodeInternal:         {http.StatusInternalServerError, nil},
	CodeNodeNumberTaken:  {http.StatusConflict, nil},
	CodeNodeNumberClash:  {http.StatusServiceUnavailable, ErrNodeNumberClash},
	CodeRemoved:          {http.StatusServiceUnavailable, ErrRemoved},
	CodeMemberExists:     {http.StatusConflict, nil},

	CodeIdempotencyKeyReused: {http.StatusUnprocessableEntity, ErrIdempotencyKeyReused},
	CodeTxIDConflict:         {http.StatusConflict, ErrTxIDConflict},
	CodeRaftStateLost:        {http.StatusServiceUnavailable, nil},
	CodeNotifyNotAllowed:     {http.StatusBadRequest, nil},
	CodeTooManyStreams:       {http.StatusServiceUnavailable, ErrTooManyStreams},
	CodeStreamFull:           {http.StatusTooManyRequests, ErrStreamFull},
	CodeUnauthenticated:      {http.StatusUnauthorized, nil},
	CodeForbidden:            {http.StatusForbidden, nil},

	CodeLeaseHeld: {http.StatusConflict, nil}, // a *LeaseError (leases.go)
	CodeFenced:    {http.StatusConflict, nil},

	CodeCompacted: {http.StatusGone, ErrCompacted}, // a *CompactedError (logwait.go)
}

// sentinelCodes lists the codes that have a sentinel, sorted, so that an error
// wrapping two sentinels always maps to the same code.
var sentinelCodes = func() []string {
	var out []string
	for code, c := range codes {
		if c.sentinel != nil {
			out = append(out, code)
		}
	}
	slices.Sort(out)
	return out
}()

// ErrorStatus maps err to its HTTP status and wire body through the code table:
// an *Error keeps its code, a *KeyReusedError puts its txid in the body, a
// wrapped sentinel gets the code of the sentinel, a context error becomes
// timeout, and anything else is internal.
func ErrorStatus(err error) (int, ErrorBody) {
	if e, ok := errors.AsType[*Error](err); ok {
		if c, ok := codes[e.Code]; ok {
			return c.status, ErrorBody{Code: e.Code, Message: e.Message}
		}
		return http.StatusInternalServerError, ErrorBody{Code: CodeInternal, Message: fmt.Sprintf("unknown error code %q: %s", e.Code, e.Message)}
	}
	if e, ok := errors.AsType[*CompactedError](err); ok {
		return codes[CodeCompacted].status, ErrorBody{Code: CodeCompacted, Message: e.Error()}
	}
	if e, ok := errors.AsType[*KeyReusedError](err); ok {
		return codes[CodeIdempotencyKeyReused].status, ErrorBody{Code: CodeIdempotencyKeyReused, Message: e.Error(), TxID: e.TxID}
	}
	for _, code := range sentinelCodes {
		if errors.Is(err, codes[code].sentinel) {
			return codes[code].status, ErrorBody{Code: code, Message: err.Error()}
		}
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return codes[CodeTimeout].status, ErrorBody{Code: CodeTimeout, Message: err.Error()}
	}
	return http.StatusInternalServerError, ErrorBody{Code: CodeInternal, Message: err.Error()}
}

// codeError turns a wire error back into an error through the code table: the
// sentinel of the code, wrapped with the message when it adds something, or an
// *Error for a code without a sentinel (or one this version does not know).
// idempotency_key_reused becomes a *KeyReusedError with the body's txid.
func codeError(b ErrorBody) error {
	c, ok := codes[b.Code]
	if b.Code == CodeIdempotencyKeyReused {
		return &KeyReusedError{TxID: b.TxID, Message: b.Message}
	}
	if !ok || c.sentinel == nil {
		return &Error{Code: b.Code, Message: b.Message}
	}
	if b.Message == "" || b.Message == c.sentinel.Error() {
		return c.sentinel
	}
	return &sentinelError{sentinel: c.sentinel, message: b.Message}
}

// sentinelError is a wire error of a code with a sentinel: its text is the
// message alone (which says what is wrong; the sentinel's own text would
// repeat it), and errors.Is finds the sentinel.
type sentinelError struct {
	sentinel error
	message  string
}

func (e *sentinelError) Error() string { return e.message }

func (e *sentinelError) Unwrap() error { return e.sentinel }

// RetryableCode reports whether an answer with code means that the request was
// not carried out and that another node, or the same one a little later, may
// carry it out.
func RetryableCode(code string) bool {
	switch code {
	case CodeNoLeader, CodeNotLeader, CodeShuttingDown, CodeNotReady, CodeOverloaded, CodeRaftStateLost, CodeRemoved, CodeNodeNumberClash, CodeTooManyStreams, CodeStreamFull:
		return true
	}
	return false
}

// NewErrorBody returns the wire form of err through the code table, as the
// handlers write it: for example the Error of one failed transaction in a
// batch result.
func NewErrorBody(err error) *ErrorBody {
	_, b := ErrorStatus(err)
	return &b
}

// Err turns a wire error back into an error through the code table, as the
// Client does: the sentinel of the code (wrapped with the message; check with
// errors.Is), or an *Error for a code without a sentinel.
func (b *ErrorBody) Err() error { return codeError(*b) }

// Sentinel returns the sentinel of a wire code, nil when it has none.
func Sentinel(code string) error { return codes[code].sentinel }

// Status returns the HTTP status of a wire code; false for a code the table
// does not hold.
func Status(code string) (int, bool) {
	c, ok := codes[code]
	return c.status, ok
}
