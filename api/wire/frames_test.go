package wire

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestFrames(t *testing.T) {
	tests := []struct {
		name     string
		payloads [][]byte
		want     []byte
	}{
		{"none", nil, []byte{}},
		{"one", [][]byte{[]byte("abc")}, []byte("\x03abc")},
		{"empty payload", [][]byte{{}, []byte("x")}, []byte("\x00\x01x")},
		{"two-byte length", [][]byte{bytes.Repeat([]byte("y"), 200)}, append([]byte{0xc8, 0x01}, bytes.Repeat([]byte("y"), 200)...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := EncodeFrames(tt.payloads)
			if !bytes.Equal(got, tt.want) {
				t.Fatalf("EncodeFrames() = %q, want %q", got, tt.want)
			}
			back, err := DecodeFrames(got, 0)
			if err != nil {
				t.Fatalf("DecodeFrames() error = %v", err)
			}
			if len(back) != len(tt.payloads) {
				t.Fatalf("DecodeFrames() = %d frames, want %d", len(back), len(tt.payloads))
			}
			for i := range back {
				if !bytes.Equal(back[i], tt.payloads[i]) {
					t.Errorf("frame %d = %q, want %q", i, back[i], tt.payloads[i])
				}
			}
		})
	}
}

func TestDecodeFramesErrors(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		max  int
		want string
	}{
		{"truncated length", []byte{0x80}, 0, "truncated length"},
		{"payload past end", []byte("\x05ab"), 0, "length 5, only 2 bytes left"},
		{"second frame past end", []byte("\x01a\x02b"), 0, "frame 1 at offset 2"},
		{"non-minimal length", []byte{0x81, 0x00, 'a'}, 0, "minimal form"},
		{"overflow", bytes.Repeat([]byte{0xff}, 11), 0, "overflows 64 bits"},
		{"huge length", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 0, "only 0 bytes left"},
		{"too many", []byte("\x00\x00\x00"), 2, "more than 2 frames"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeFrames(tt.data, tt.max)
			if !errors.Is(err, ErrBadFrame) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("DecodeFrames(%q) error = %v, want ErrBadFrame with %q", tt.data, err, tt.want)
			}
		})
	}
}

// FuzzDecodeFrames checks that DecodeFrames never panics, that what it
// accepts encodes back to the same bytes, and that any split of the input
// into payloads survives EncodeFrames and DecodeFrames.
func FuzzDecodeFrames(f *testing.F) {
	for _, s := range []string{"", "\x00", "\x03abc\x00\x01z", "\x80", "\x81\x00a", "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", "\x05ab"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		frames, err := DecodeFrames(data, 0)
		if err != nil {
			if !errors.Is(err, ErrBadFrame) {
				t.Fatalf("error %v is not ErrBadFrame", err)
			}
		} else if got := EncodeFrames(frames); !bytes.Equal(got, data) {
			t.Fatalf("EncodeFrames(DecodeFrames(%q)) = %q", data, got)
		}

		// Split data into payloads of lengths taken from its own bytes.
		var payloads [][]byte
		for rest := data; len(rest) > 0; {
			n := min(int(rest[0])%7, len(rest))
			payloads = append(payloads, rest[:n])
			rest = rest[max(n, 1):]
		}
		back, err := DecodeFrames(EncodeFrames(payloads), 0)
		if err != nil {
			t.Fatalf("DecodeFrames(EncodeFrames(%q)) error = %v", payloads, err)
		}
		if len(payloads) == 0 && len(back) == 0 {
			return
		}
		if !reflect.DeepEqual(back, payloads) {
			t.Fatalf("DecodeFrames(EncodeFrames(%q)) = %q", payloads, back)
		}
	})
}
