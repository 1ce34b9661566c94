package wire

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/txlog/txlog/txid"
)

func TestErrorTable(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		status int
		code   string
	}{
		{"sentinel", ErrNotFound, 404, CodeNotFound},
		{"wrapped sentinel", fmt.Errorf("forward: %w", ErrNoLeader), 503, CodeNoLeader},
		{"typed", &Error{Code: CodeInvalidTx, Message: "ops: empty"}, 400, CodeInvalidTx},
		{"wrapped typed", fmt.Errorf("validate: %w", &Error{Code: CodeNotReady, Message: "x"}), 503, CodeNotReady},
		{"unknown code", &Error{Code: "nonsense", Message: "x"}, 500, CodeInternal},
		{"deadline", fmt.Errorf("apply: %w", context.DeadlineExceeded), 504, CodeTimeout},
		{"timeout sentinel", ErrTimeout, 504, CodeTimeout},
		{"other", errors.New("boom"), 500, CodeInternal},
		{"key reused", fmt.Errorf("submit: %w", &KeyReusedError{Key: "k", TxID: 7}), 422, CodeIdempotencyKeyReused},
		{"txid conflict", fmt.Errorf("%w: txid 7 at index 3", ErrTxIDConflict), 409, CodeTxIDConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := ErrorStatus(tt.err)
			if status != tt.status || body.Code != tt.code {
				t.Errorf("errorBody(%v) = %d %q, want %d %q", tt.err, status, body.Code, tt.status, tt.code)
			}
			if nb := NewErrorBody(tt.err); nb.Code != tt.code {
				t.Errorf("NewErrorBody(%v).Code = %q, want %q", tt.err, nb.Code, tt.code)
			}
		})
	}
}

// TestErrorRoundTrip checks that every code of the table comes back from the
// wire as its sentinel, or as an *Error with the code.
func TestErrorRoundTrip(t *testing.T) {
	for code, c := range codes {
		if c.status < 400 || http.StatusText(c.status) == "" {
			t.Errorf("code %s: status %d", code, c.status)
		}
		err := (&ErrorBody{Code: code, Message: "because"}).Err()
		if c.sentinel != nil {
			if !errors.Is(err, c.sentinel) {
				t.Errorf("code %s: Err() = %v, want %v", code, err, c.sentinel)
			}
			if _, ok := errors.AsType[*Error](err); ok {
				t.Errorf("code %s: Err() is an *Error, want the sentinel", code)
			}
		} else if e, ok := errors.AsType[*Error](err); !ok || e.Code != code {
			t.Errorf("code %s: Err() = %v, want *Error with the code", code, err)
		}
		// And back to the wire again.
		if status, body := ErrorStatus(err); status != c.status || body.Code != code {
			t.Errorf("code %s: back to the wire as %d %s", code, status, body.Code)
		}
	}
}

// TestKeyReusedRoundTrip: the txid of the transaction a reused key names goes
// over the wire and comes back in a *KeyReusedError.
func TestKeyReusedRoundTrip(t *testing.T) {
	status, body := ErrorStatus(fmt.Errorf("submit: %w", &KeyReusedError{Key: "k", TxID: txid.ID(77)}))
	if status != http.StatusUnprocessableEntity || body.Code != CodeIdempotencyKeyReused || body.TxID != 77 || !strings.Contains(body.Message, `"k"`) {
		t.Fatalf("errorBody = %d %+v, want 422 idempotency_key_reused naming txid 77 and the key", status, body)
	}
	err := body.Err()
	e, ok := errors.AsType[*KeyReusedError](err)
	if !ok || e.TxID != 77 || !errors.Is(err, ErrIdempotencyKeyReused) || err.Error() != body.Message {
		t.Fatalf("Err() = %#v, want a *KeyReusedError naming txid 77 with the message", err)
	}
	if RetryableCode(body.Code) {
		t.Fatal("idempotency_key_reused is retryable; a retry can never succeed")
	}
}

// TestMessagesTable: every wording of the messages table has a code of the
// code table and uses each of its parts; a not_found one is ErrNotFound.
func TestMessagesTable(t *testing.T) {
	for _, m := range Msgs() {
		code := MsgCode(m)
		if _, ok := Status(code); !ok {
			t.Errorf("message %d: code %q is not in the code table", m, code)
		}
		var parts []any
		for i, verb := range strings.Split(messages[m].format, "%")[1:] {
			if strings.HasPrefix(verb, "d") {
				parts = append(parts, 1000+i)
			} else {
				parts = append(parts, fmt.Sprintf("part%d", i))
			}
		}
		e := New(m, parts...)
		for _, p := range parts {
			if !strings.Contains(e.Message, fmt.Sprint(p)) {
				t.Errorf("New(%d) = %q, without its part %v", m, e.Message, p)
			}
		}
		if strings.Contains(e.Message, "%!") {
			t.Errorf("New(%d) = %q: a bad format", m, e.Message)
		}
		if code == CodeNotFound && !errors.Is(e, ErrNotFound) {
			t.Errorf("errors.Is(New(%d), ErrNotFound) = false", m)
		}
	}
}

// TestSentinelMessageOnce: a wire error of a code with a sentinel reads
// as its message alone, so that a 404 that names what is missing is not
// prefixed with "not found" again, and it is still the sentinel; passed
// through another node's answer it stays the same.
func TestSentinelMessageOnce(t *testing.T) {
	msg := `consumer group "nogroup" has no committed offset`
	err := (&ErrorBody{Code: CodeNotFound, Message: msg}).Err()
	if err.Error() != msg || !errors.Is(err, ErrNotFound) {
		t.Fatalf("Err() = %q (is ErrNotFound: %v), want %q", err, errors.Is(err, ErrNotFound), msg)
	}
	status, b := ErrorStatus(err)
	if status != http.StatusNotFound || b.Code != CodeNotFound || b.Message != msg {
		t.Fatalf("ErrorStatus(Err()) = %d %+v, want 404 %q", status, b, msg)
	}
	if err := (&ErrorBody{Code: CodeNoLeader, Message: ErrNoLeader.Error()}).Err(); err != ErrNoLeader {
		t.Fatalf("Err() of the sentinel's own text = %v, want the sentinel", err)
	}
}
