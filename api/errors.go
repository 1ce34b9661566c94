package api

import (
	"errors"
	"net/http"
)

// Sentinel errors a Backend returns and a Client gives back. Check with errors.Is.
var (
	ErrNotFound       = errors.New("not found")
	ErrNoLeader       = errors.New("no leader reachable")
	ErrNotLeader      = errors.New("this node is not the leader")
	ErrUnknownOutcome = errors.New("transaction outcome unknown")
	ErrShuttingDown   = errors.New("node is shutting down")
	ErrTimeout        = errors.New("timed out")
)

// Error is a failure with a wire code, mostly bad input. Its HTTP status comes from
// the code table.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Wire error codes.
const (
	CodeBadRequest       = "bad_request"
	CodeInvalidJSON      = "invalid_json"
	CodeInvalidUTF8      = "invalid_utf8"
	CodeInvalidTx        = "invalid_transaction"
	CodeInvalidParam     = "invalid_parameter"
	CodePayloadTooLarge  = "payload_too_large"
	CodeNotFound         = "not_found"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeConflict         = "conflict"
	CodeNoLeader         = "no_leader"
	CodeNotLeader        = "not_leader"
	CodeUnknownOutcome   = "unknown_outcome"
	CodeShuttingDown     = "shutting_down"
	CodeTimeout          = "timeout"
	CodeNotReady         = "not_ready"
	CodeInternal         = "internal"
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
	CodeNotFound:         {http.StatusNotFound, ErrNotFound},
	CodeMethodNotAllowed: {http.StatusMethodNotAllowed, nil},
	CodeConflict:         {http.StatusConflict, nil},
	CodeNoLeader:         {http.StatusServiceUnavailable, ErrNoLeader},
	CodeNotLeader:        {http.StatusServiceUnavailable, ErrNotLeader},
	CodeUnknownOutcome:   {http.StatusServiceUnavailable, ErrUnknownOutcome},
	CodeShuttingDown:     {http.StatusServiceUnavailable, ErrShuttingDown},
	CodeTimeout:          {http.StatusGatewayTimeout, ErrTimeout},
	CodeNotReady:         {http.StatusServiceUnavailable, nil},
	CodeInternal:         {http.StatusInternalServerError, nil},
}
