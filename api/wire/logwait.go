package wire

import (
	"errors"
	"fmt"
)

// Waiting and streaming reads of the log (docs/consuming.md).
const (
	// LogStreamPath is the Server-Sent Events stream of the log.
	LogStreamPath = "/v1/log/stream"
	// LogEventEntry is the event type of one log entry on the stream; its id is
	// the entry's index and its data the entry as GET /v1/log gives it.
	LogEventEntry = "entry"
	// HeaderLastEventID is the SSE header a reconnecting reader sends: the
	// stream resumes at the index after it.
	HeaderLastEventID = "Last-Event-ID"
)

// CodeCompacted: the log no longer holds the entries asked for; the answer's
// first_index is where it starts now (410).
const CodeCompacted = "compacted"

// ErrCompacted means the log no longer holds the entries from the index asked
// for. The error is a *CompactedError, which says where the log starts now.
var ErrCompacted = errors.New("log compacted")

// CompactedError is ErrCompacted with the first index the log still holds. On
// the wire it is code compacted, status 410, with first_index beside the error
// object: {"error":{"code":"compacted",…},"first_index":F}.
type CompactedError struct {
	From       uint64 // the index asked for; 0 when decoded from the wire
	FirstIndex uint64
	// Message, when set, is the whole text of Error (as it came on the wire).
	Message string
}

func (e *CompactedError) Error() string {
	if e.Message != "" {
		return e.Message
	}
	return fmt.Sprintf("log compacted: index %d is gone, the log starts at %d", e.From, e.FirstIndex)
}

// Is makes errors.Is(err, ErrCompacted) true.
func (e *CompactedError) Is(target error) bool { return target == ErrCompacted }

// CompactedAnswer is the body of a 410 compacted answer.
type CompactedAnswer struct {
	Error      ErrorBody `json:"error"`
	FirstIndex uint64    `json:"first_index"`
}
