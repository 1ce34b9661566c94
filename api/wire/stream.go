package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
)

// A propose stream carries internal proposals from one node to another over
// one persistent connection, instead of one POST /v1/internal/propose each.
// The proposing node opens it on the other node's peer link, a connection of
// kind 'S' (package peerlink), and from the first byte after the link's
// answer the connection carries messages in both directions, each the length
// of its body as an unsigned varint, then the body:
//
//	request: uvarint id | uvarint len(q) | q | frames
//	answer:  uvarint id | uvarint status | body
//
// A request is POST /v1/internal/propose in a message: q is its query text
// (timeout, ack, fresh), frames its body (frames.go). The answer with the same id is
// what that POST would answer: the HTTP status, and for 200 the results in
// binary (streamresults.go), otherwise the JSON error object. Requests are served
// concurrently and answered in the order they finish. A request whose envelope
// cannot be read ends the stream; everything else (a bad query, bad frames, a
// refused proposal) is an answer with a 4xx or 5xx status.
//
// Request id 0 is a ping: the reading goroutine answers it at once with status
// 200 and no body, whatever it carries, ahead of the requests in flight. The
// proposing node pings a stream that has kept it waiting (node/peer/streamclient.go), to
// tell a slow commit from a paused or cut-off peer. A node from before pings
// answers such a request too (400, no frames), which serves the same purpose.
//
// node/peer serves and opens the streams.

// PingID is the id of a ping: request ids start at 1.
const PingID = 0

// MaxStreamHeadBytes bounds what a request adds to its frames: its id and query.
const MaxStreamHeadBytes = 4 << 10

var ErrStreamMessage = errors.New("bad stream message")

// AppendStreamMessage appends the message of a body made of head then rest.
func AppendStreamMessage(b, head, rest []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(head)+len(rest)))
	b = append(b, head...)
	return append(b, rest...)
}

// EncodeStreamRequest returns the message of request id.
func EncodeStreamRequest(id uint64, q string, frames []byte) []byte {
	head := binary.AppendUvarint(make([]byte, 0, 2*binary.MaxVarintLen64+len(q)), id)
	head = binary.AppendUvarint(head, uint64(len(q)))
	head = append(head, q...)
	return AppendStreamMessage(make([]byte, 0, binary.MaxVarintLen64+len(head)+len(frames)), head, frames)
}

// uvarint reads the unsigned varint at the start of b, in minimal form (so
// that a message decodes from one encoding only), and returns its length; 0
// when b starts with none.
func uvarint(b []byte) (uint64, int) {
	v, n := binary.Uvarint(b)
	if n <= 0 || (n > 1 && b[n-1] == 0) {
		return 0, 0
	}
	return v, n
}

// DecodeStreamRequest splits the body of a request message. frames aliases body.
func DecodeStreamRequest(body []byte) (id uint64, q string, frames []byte, err error) {
	id, n := uvarint(body)
	if n == 0 {
		return 0, "", nil, fmt.Errorf("%w: request id", ErrStreamMessage)
	}
	body = body[n:]
	l, n := uvarint(body)
	if n == 0 || l > uint64(len(body)-n) || l > MaxStreamHeadBytes {
		return 0, "", nil, fmt.Errorf("%w: request %d: query length", ErrStreamMessage, id)
	}
	body = body[n:]
	return id, string(body[:l]), body[l:], nil
}

// EncodeStreamAnswer returns the message answering request id.
func EncodeStreamAnswer(id uint64, status int, body []byte) []byte {
	head := binary.AppendUvarint(make([]byte, 0, 2*binary.MaxVarintLen64), id)
	head = binary.AppendUvarint(head, uint64(status))
	return AppendStreamMessage(make([]byte, 0, binary.MaxVarintLen64+len(head)+len(body)), head, body)
}

// DecodeStreamAnswer splits the body of an answer message. rest aliases body.
func DecodeStreamAnswer(body []byte) (id uint64, status int, rest []byte, err error) {
	id, n := uvarint(body)
	if n == 0 {
		return 0, 0, nil, fmt.Errorf("%w: answer id", ErrStreamMessage)
	}
	body = body[n:]
	st, n := uvarint(body)
	if n == 0 || st < 100 || st > 599 {
		return 0, 0, nil, fmt.Errorf("%w: answer %d: status", ErrStreamMessage, id)
	}
	return id, int(st), body[n:], nil
}

// readUvarint reads an unsigned varint in minimal form, as uvarint decodes
// it. io.EOF before its first byte; io.ErrUnexpectedEOF after.
func readUvarint(r io.ByteReader) (uint64, error) {
	var x uint64
	var s uint
	for i := 0; i < binary.MaxVarintLen64; i++ {
		b, err := r.ReadByte()
		if err != nil {
			if i > 0 && err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		if b < 0x80 {
			if i == binary.MaxVarintLen64-1 && b > 1 || i > 0 && b == 0 {
				return 0, fmt.Errorf("%w: length not in minimal form or over 64 bits", ErrStreamMessage)
			}
			return x | uint64(b)<<s, nil
		}
		x |= uint64(b&0x7f) << s
		s += 7
	}
	return 0, fmt.Errorf("%w: length over 64 bits", ErrStreamMessage)
}

// streamChunkBytes is how far ReadStreamMessage's buffer runs ahead of the
// bytes that arrived.
const streamChunkBytes = 64 << 10

// ReadStreamMessage reads one message and returns its body, refusing a body
// longer than limit bytes before it allocates anything. The body's buffer
// grows as its bytes arrive, at most streamChunkBytes ahead of them (and
// doubling as append does): a declared length with few bytes behind it costs
// little memory. A message within streamChunkBytes takes one allocation of
// its size.
func ReadStreamMessage(r *bufio.Reader, limit int64) ([]byte, error) {
	l, err := readUvarint(r)
	if err != nil {
		return nil, err
	}
	if limit < 0 || l > uint64(limit) {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrStreamMessage, l, limit)
	}
	b := make([]byte, 0, min(l, streamChunkBytes))
	for uint64(len(b)) < l {
		n := int(min(l-uint64(len(b)), streamChunkBytes))
		b = slices.Grow(b, n)
		m, err := io.ReadFull(r, b[len(b):len(b)+n])
		b = b[:len(b)+m]
		if err != nil {
			return nil, fmt.Errorf("read %d-byte message: %w", l, io.ErrUnexpectedEOF)
		}
	}
	return b, nil
}
