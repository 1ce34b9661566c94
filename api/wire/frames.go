package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The body of POST /v1/internal/propose is a sequence of frames. Each frame is
// the length of its payload as an unsigned varint (encoding/binary, minimal
// form), followed by that many payload bytes:
//
//	+------------------+-------------------+------------------+-----
//	| uvarint len(p0)  | p0 (len(p0) bytes)| uvarint len(p1)  | p1 ...
//	+------------------+-------------------+------------------+-----
//
// The payloads are opaque here: the api package only frames them. There is no
// count and no terminator; the body ends after the last payload.

// ErrBadFrame is returned (wrapped) by DecodeFrames for a body that is not a
// sequence of frames.
var ErrBadFrame = errors.New("bad frame")

// EncodeFrames returns the frames of payloads, in order. An empty payload is
// framed as a single zero byte.
func EncodeFrames(payloads [][]byte) []byte {
	n := 0
	for _, p := range payloads {
		n += binary.MaxVarintLen64 + len(p)
	}
	b := make([]byte, 0, n)
	for _, p := range payloads {
		b = binary.AppendUvarint(b, uint64(len(p)))
		b = append(b, p...)
	}
	return b
}

// DecodeFrames splits b into the payloads of its frames. The payloads alias b;
// the caller must not change b while it uses them. It refuses a length that is
// not in minimal form (so that EncodeFrames(DecodeFrames(b)) == b), a frame that
// runs past the end of b, and more than maxFrames frames when maxFrames > 0.
func DecodeFrames(b []byte, maxFrames int) ([][]byte, error) {
	var out [][]byte
	off := 0
	for off < len(b) {
		if maxFrames > 0 && len(out) == maxFrames {
			return nil, fmt.Errorf("%w: more than %d frames", ErrBadFrame, maxFrames)
		}
		n, size := binary.Uvarint(b[off:])
		switch {
		case size == 0:
			return nil, fmt.Errorf("%w %d at offset %d: truncated length", ErrBadFrame, len(out), off)
		case size < 0:
			return nil, fmt.Errorf("%w %d at offset %d: length overflows 64 bits", ErrBadFrame, len(out), off)
		case size > 1 && b[off+size-1] == 0:
			return nil, fmt.Errorf("%w %d at offset %d: length not in minimal form", ErrBadFrame, len(out), off)
		}
		off += size
		if n > uint64(len(b)-off) {
			return nil, fmt.Errorf("%w %d at offset %d: length %d, only %d bytes left", ErrBadFrame, len(out), off-size, n, len(b)-off)
		}
		out = append(out, b[off:off+int(n):off+int(n)])
		off += int(n)
	}
	return out, nil
}
