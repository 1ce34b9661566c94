package txid

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// mkID returns the ID with the given fields.
func mkID(ms int64, node, seq uint16) ID {
	return ID(uint64(ms)<<(SeqBits+NodeBits) | uint64(node)<<SeqBits | uint64(seq))
}

func TestFields(t *testing.T) {
	tests := []struct {
		name      string
		ms        int64
		node, seq uint16
		wantTime  string
	}{
		{"smallest", 0, 0, 1, "2024-01-01T00:00:00Z"},
		{"middle", 86_400_000 + 1, 17, 99, "2024-01-02T00:00:00.001Z"},
		{"largest", maxMillis, MaxNode, MaxSeq, "2163-05-15T07:35:11.103Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := mkID(tt.ms, tt.node, tt.seq)
			if got := id.Millis(); got != tt.ms {
				t.Errorf("Millis() = %d, want %d", got, tt.ms)
			}
			if got := id.Node(); got != tt.node {
				t.Errorf("Node() = %d, want %d", got, tt.node)
			}
			if got := id.Seq(); got != tt.seq {
				t.Errorf("Seq() = %d, want %d", got, tt.seq)
			}
			if got := id.Time().Format(time.RFC3339Nano); got != tt.wantTime {
				t.Errorf("Time() = %s, want %s", got, tt.wantTime)
			}
		})
	}
}

func TestEpoch(t *testing.T) {
	want := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	if !Epoch.Equal(want) || Epoch.Location() != time.UTC {
		t.Fatalf("Epoch = %v, want %v", Epoch, want)
	}
	if got := ID(1).Time(); !got.Equal(Epoch) {
		t.Fatalf("ID(1).Time() = %v, want Epoch", got)
	}
}

func TestStringParse(t *testing.T) {
	tests := []struct {
		name string
		id   ID
		want string
	}{
		{"one", 1, "0000000000001"},
		{"thirty-two", 32, "0000000000010"},
		{"max", math.MaxUint64, "FZZZZZZZZZZZZ"},
		{"layout", mkID(1, 2, 3), "0000000040803"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.id.String(); got != tt.want {
				t.Fatalf("String() = %q, want %q", got, tt.want)
			}
			for _, s := range []string{tt.want, strings.ToLower(tt.want)} {
				got, err := Parse(s)
				if err != nil || got != tt.id {
					t.Fatalf("Parse(%q) = %v, %v; want %v", s, got, err, tt.id)
				}
			}
		})
	}
}

func TestStringRoundTripRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 10_000 {
		id := ID(r.Uint64() | 1)
		got, err := Parse(id.String())
		if err != nil || got != id {
			t.Fatalf("Parse(%q) = %v, %v; want %v", id.String(), got, err, id)
		}
	}
}

func TestStringSortsLikeNumber(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	ids := []ID{1, 2, 31, 32, 33, math.MaxUint64, math.MaxUint64 - 1, 1 << 63, 1<<63 - 1}
	for range 5_000 {
		// Mix small and large values so that many strings share prefixes.
		ids = append(ids, ID(r.Uint64()>>r.UintN(64)|1))
	}
	byNumber := slices.Clone(ids)
	slices.Sort(byNumber)
	byText := slices.Clone(ids)
	slices.SortFunc(byText, func(a, b ID) int { return strings.Compare(a.String(), b.String()) })
	if !slices.Equal(byNumber, byText) {
		t.Fatal("sorting by String differs from sorting by value")
	}
}

func TestParseRejects(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{"empty", ""},
		{"short", "000000000001"},
		{"long", "00000000000001"},
		{"letter I", "000000000000I"},
		{"letter L", "000000000000L"},
		{"letter O", "000000000000O"},
		{"letter U", "000000000000U"},
		{"lower u", "000000000000u"},
		{"punctuation", "000000-000001"},
		{"space", " 000000000001"},
		{"non-ASCII", "00000000000é"},
		{"NUL", "000000000000\x00"},
		{"overflow G", "G000000000000"},
		{"overflow Z", "ZZZZZZZZZZZZZ"},
		{"zero", "0000000000000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := Parse(tt.in)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse(%q) = %v, %v; want an error wrapping ErrInvalid", tt.in, id, err)
			}
		})
	}
}

func TestTextJSON(t *testing.T) {
	type doc struct {
		TxID ID `json:"txid"`
	}
	tests := []struct {
		name string
		id   ID
		want string
	}{
		{"id", mkID(5, 6, 7), `{"txid":"00000000M0R07"}`},
		{"zero is empty", 0, `{"txid":""}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(doc{tt.id})
			if err != nil || string(b) != tt.want {
				t.Fatalf("Marshal = %s, %v; want %s", b, err, tt.want)
			}
			var got doc
			if err := json.Unmarshal(b, &got); err != nil || got.TxID != tt.id {
				t.Fatalf("Unmarshal(%s) = %v, %v; want %v", b, got.TxID, err, tt.id)
			}
		})
	}
	var d doc
	if err := json.Unmarshal([]byte(`{"txid":"0000000000000"}`), &d); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Unmarshal of the all-zero text = %v, want ErrInvalid", err)
	}
}
