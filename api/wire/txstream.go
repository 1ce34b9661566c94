package wire

import "encoding/binary"

// A client stream carries a client's transactions to a node over one
// connection, instead of one POST /v1/tx each (docs/api.md, "Client
// stream"). The client opens it with GET TxStreamPath and the headers
// Connection: Upgrade and Upgrade: TxStreamProtocol; the node answers 101
// with HeaderNode and HeaderLeader, and from the first byte after that
// answer the connection carries messages in both directions, in the
// envelope of a propose stream (stream.go):
//
//	message: uvarint len(body) | body
//	request: uvarint id | uvarint len(q) | q | payload
//	answer:  uvarint id | uvarint status | json
//
// q is the query text of POST /v1/tx (timeout, ack) and payload its JSON
// body; the answer with the same id carries the status and JSON body that
// POST /v1/tx would answer. Requests are answered in the order they finish.
// Request id 0 is a ping (PingID), answered at once with id 0, status 200
// and a TxStreamPing. An answer with id 0 and a status of 400 or more is a
// goaway: the node's last message before it closes the connection, with a
// JSON error object; the requests in flight then are not answered.

// Names of the client stream.
const (
	// TxStreamPath is the route that opens a client stream.
	TxStreamPath = "/v1/tx/stream"
	// TxStreamProtocol is the Upgrade header's value of a client stream.
	TxStreamProtocol = "txlog-tx/1"
	// HeaderNode names, on the 101 answer, the node that serves the stream.
	HeaderNode = "X-Txlog-Node"
	// HeaderLeader gives, on the 101 answer, the leader's client address
	// as GET /v1/cluster gives it (ClusterStatus.LeaderHTTPAddr); empty when
	// no leader is known.
	HeaderLeader = "X-Txlog-Leader"
)

// TxStreamPing is the JSON of the answer to a ping of a client stream.
type TxStreamPing struct {
	Node   string `json:"node"`
	Leader string `json:"leader"`
}

// AppendTxStreamRequest appends the message of request id with query text
// q and payload (the JSON body of POST /v1/tx) to b: a client that writes
// many requests at once appends them to one buffer.
func AppendTxStreamRequest(b []byte, id uint64, q string, payload []byte) []byte {
	var head [2 * binary.MaxVarintLen64]byte
	h := binary.AppendUvarint(head[:0], id)
	h = binary.AppendUvarint(h, uint64(len(q)))
	b = binary.AppendUvarint(b, uint64(len(h)+len(q)+len(payload)))
	b = append(b, h...)
	b = append(b, q...)
	return append(b, payload...)
}

// EncodeTxStreamRequest returns the message of request id.
func EncodeTxStreamRequest(id uint64, q string, payload []byte) []byte {
	return AppendTxStreamRequest(make([]byte, 0, 3*binary.MaxVarintLen64+len(q)+len(payload)), id, q, payload)
}

// DecodeTxStreamRequest splits the body of a request message (what
// ReadStreamMessage returns): its id, query text and payload, which aliases
// body. The query text is at most MaxStreamHeadBytes; a varint not in
// minimal form is refused. Errors wrap ErrStreamMessage.
func DecodeTxStreamRequest(body []byte) (id uint64, q string, payload []byte, err error) {
	return DecodeStreamRequest(body)
}

// AppendTxStreamAnswer appends the message answering request id with status
// and its JSON body to b.
func AppendTxStreamAnswer(b []byte, id uint64, status int, body []byte) []byte {
	var head [2 * binary.MaxVarintLen64]byte
	h := binary.AppendUvarint(head[:0], id)
	h = binary.AppendUvarint(h, uint64(status))
	return AppendStreamMessage(b, h, body)
}

// DecodeTxStreamAnswer splits the body of an answer message: its id, HTTP
// status (100 to 599) and JSON body, which aliases body. Errors wrap
// ErrStreamMessage.
func DecodeTxStreamAnswer(body []byte) (id uint64, status int, json []byte, err error) {
	return DecodeStreamAnswer(body)
}

// IsGoaway reports whether the answer with id and status is a goaway: the
// node's last message on the stream.
func IsGoaway(id uint64, status int) bool { return id == PingID && status >= 400 }

// TxStreamLimit is the longest message body a node reads on a client
// stream whose payloads are at most maxBodyBytes (the node's
// --max-body-bytes): one past it ends the stream.
func TxStreamLimit(maxBodyBytes int64) int64 { return maxBodyBytes + MaxStreamHeadBytes }
