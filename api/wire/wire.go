package wire

import (
	"bytes"
	"encoding/json"
	"time"
)

// HeaderForwarded marks a request that another node forwarded ("1"). A node that
// is not the leader answers such a request itself or with not_leader, and never
// forwards it again.
const HeaderForwarded = "X-Txlog-Forwarded"

// DefaultTimeout is the timeout of a write without a timeout query parameter,
// and the time a read may take, unless the server's Config says otherwise.
// The Client assumes it for a write without SubmitOptions.Timeout.
const DefaultTimeout = 5 * time.Second

// MarshalJSON encodes v without escaping <, > and &, so that a value goes
// over the wire, and into the log, as the caller wrote it.
func MarshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
