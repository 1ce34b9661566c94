package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/txlog/txlog/txid"
)

// sampleResults has every field of TxResult set in some result.
var sampleResults = []TxResult{
	{TxID: 1<<40 | 7, Status: StatusCommitted, IdempotencyKey: "k-1", Index: 12, Term: 3, Versions: map[string]uint64{"b": 2, "a": 1, "ü/x": 1 << 60}, Durability: AckQuorum},
	{TxID: 99, Status: StatusRejected, Index: 13, Term: 3, Conflict: &Conflict{Key: "a", Expected: 4, Actual: 5}, Durability: AckAll},
	{TxID: 98, Status: StatusRejected, Index: 14, Term: 3, Conflict: &Conflict{Fence: "consumer/billing", Expected: 5, Actual: 6}},
	{TxID: 99, Status: StatusRejected, Index: 15, Term: 3, Conflict: &Conflict{Group: "billing", Expected: 5, Actual: 7}},
	{TxID: 5, Status: StatusCommitted, IdempotencyKey: "dup", Index: 2, Term: 1, Versions: map[string]uint64{"z": 1}, Duplicate: true},
	{TxID: 6, Error: &ErrorBody{Code: CodeNotLeader, Message: "not the leader", TxID: 6}},
	{TxID: 8, Status: StatusPending, Durability: AckAccepted, HeldBy: []string{HeldByWAL, HeldByRedis}},
	{TxID: 9, Error: &ErrorBody{Code: CodeIdempotencyKeyReused, Message: "reused", TxID: 3}},
	{Status: StatusUnknown, Error: &ErrorBody{Code: CodeUnknownOutcome, Message: ""}},
	{},
}

// jsonRoundTrip is what the results become over POST /v1/internal/propose.
func jsonRoundTrip(t *testing.T, rs []TxResult) []TxResult {
	t.Helper()
	b, err := MarshalJSON(BatchResponse{Results: rs})
	if err != nil {
		t.Fatal(err)
	}
	var br BatchResponse
	if err := json.Unmarshal(b, &br); err != nil {
		t.Fatal(err)
	}
	return br.Results
}

// TestResultsRoundTrip: the binary form decodes to what the JSON form of the
// HTTP path decodes to.
func TestResultsRoundTrip(t *testing.T) {
	for _, rs := range [][]TxResult{sampleResults, nil, {{Versions: map[string]uint64{}}}} {
		got, err := DecodeResults(AppendResults(nil, rs))
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		want := jsonRoundTrip(t, rs)
		if len(want) == 0 && len(got) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("binary round trip:\n%+v\nJSON round trip:\n%+v", got, want)
		}
	}
}

// TestResultsFields fails when a result type gains or loses a field: the
// binary form (streamresults.go) must then learn it, and this count change.
func TestResultsFields(t *testing.T) {
	for _, c := range []struct {
		v    any
		want int
	}{{TxResult{}, 11}, {Conflict{}, 5}, {ErrorBody{}, 3}} {
		if got := reflect.TypeOf(c.v).NumField(); got != c.want {
			t.Errorf("%T has %d fields, the binary results format and the JSON encoder know %d: update appendResults, decodeResults and appendTxResultJSON", c.v, got, c.want)
		}
	}
}

// TestDecodeResultsBad: every cut of a valid form, trailing bytes, unknown
// flags and unsorted version keys are refused.
func TestDecodeResultsBad(t *testing.T) {
	b := AppendResults(nil, sampleResults)
	for n := range len(b) {
		if _, err := DecodeResults(b[:n]); !errors.Is(err, ErrStreamMessage) {
			t.Fatalf("the first %d of %d bytes: %v, want errStreamMessage", n, len(b), err)
		}
	}
	if _, err := DecodeResults(append(bytes.Clone(b), 0)); err == nil {
		t.Error("trailing byte accepted")
	}
	one := AppendResults(nil, []TxResult{{TxID: txid.ID(3)}})
	bad := bytes.Clone(one)
	bad[1] |= 1 << 6 // flags of the first result
	if _, err := DecodeResults(bad); err == nil {
		t.Error("unknown flag accepted")
	}
	bad[1] = resultGroup
	if _, err := DecodeResults(bad); err == nil {
		t.Error("group flag without a conflict accepted")
	}
	unsorted := []byte{1, 0, 0, 0, 0, 0, 0, 2, 1, 'b', 1, 1, 'a', 1, 0}
	if _, err := DecodeResults(unsorted); err == nil {
		t.Error("version keys out of order accepted")
	}
	sorted := []byte{1, 0, 0, 0, 0, 0, 0, 2, 1, 'a', 1, 1, 'b', 1, 0}
	if _, err := DecodeResults(sorted); err != nil {
		t.Errorf("the same keys in order: %v", err)
	}
}

func FuzzDecodeResults(f *testing.F) {
	f.Add(AppendResults(nil, sampleResults))
	f.Add(AppendResults(nil, nil))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 2, 1, 'a', 1, 1, 'b', 1, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := DecodeResults(data)
		if err != nil {
			if !errors.Is(err, ErrStreamMessage) {
				t.Fatalf("error %v is not errStreamMessage", err)
			}
			return
		}
		if back := AppendResults(nil, rs); !bytes.Equal(back, data) {
			t.Fatalf("decodeResults(%q) re-encodes as %q", data, back)
		}
	})
}
