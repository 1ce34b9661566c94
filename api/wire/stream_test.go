package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"
)

// TestReadStreamMessageGrowsAsBytesArrive: a message that declares 64 MiB
// with a few bytes behind it allocates about what arrived, not what it
// declared; one over the limit is refused before anything is read.
func TestReadStreamMessageGrowsAsBytesArrive(t *testing.T) {
	declared := uint64(64 << 20)
	msg := append(binary.AppendUvarint(nil, declared), "only a few bytes"...)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 10 {
		_, err := ReadStreamMessage(bufio.NewReader(bytes.NewReader(msg)), 64<<20)
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("ReadStreamMessage() of a cut-short message = %v, want io.ErrUnexpectedEOF", err)
		}
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 4<<20 {
		t.Fatalf("10 messages declaring %d bytes with %d behind them allocated %d bytes, want well under 4 MiB", declared, len(msg), got)
	}

	if _, err := ReadStreamMessage(bufio.NewReader(bytes.NewReader(msg)), 1<<20); !errors.Is(err, ErrStreamMessage) {
		t.Fatalf("ReadStreamMessage() over the limit = %v, want ErrStreamMessage", err)
	}

	// A whole message, longer than a chunk, still reads back as sent.
	body := bytes.Repeat([]byte("x"), 3*streamChunkBytes+5)
	got, err := ReadStreamMessage(bufio.NewReader(bytes.NewReader(AppendStreamMessage(nil, nil, body))), 1<<20)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("ReadStreamMessage() of a %d-byte message = %d bytes, %v", len(body), len(got), err)
	}
}

// TestDecodeResultsCountBound: a count larger than the bytes could hold is
// refused before the results are allocated.
func TestDecodeResultsCountBound(t *testing.T) {
	b := binary.AppendUvarint(nil, 1<<20)
	b = append(b, make([]byte, 1<<10)...)
	if _, err := DecodeResults(b); !errors.Is(err, ErrStreamMessage) {
		t.Fatalf("DecodeResults() with a count of 1Mi over 1 KiB = %v, want ErrStreamMessage", err)
	}
}

// FuzzReadStreamMessage: any bytes read as messages give bodies that encode
// back to the bytes read, or an error; never a panic.
func FuzzReadStreamMessage(f *testing.F) {
	for _, b := range [][]byte{
		EncodeStreamRequest(1, "timeout=5s", EncodeFrames([][]byte{[]byte("abc")})),
		EncodeStreamAnswer(2, 200, nil),
		binary.AppendUvarint(nil, 64<<20),
		{0x80, 0x80}, {0x00}, {},
	} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		br := bufio.NewReader(bytes.NewReader(data))
		var back []byte
		for {
			body, err := ReadStreamMessage(br, 1<<16)
			if err != nil {
				break
			}
			back = AppendStreamMessage(back, body, nil)
		}
		if !bytes.HasPrefix(data, back) {
			t.Fatalf("messages read from %x re-encode as %x", data, back)
		}
	})
}
