package client

import (
	"errors"
	"fmt"
	"testing"

	"github.com/txlog/txlog/api/wire"
)

// TestLastErrorOnce: the unknown outcome a client gives up with does not
// say "transaction outcome unknown" twice when the last answer said it.
func TestLastErrorOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		last error
		want string
	}{
		{"none", nil, ""},
		{"the sentinel", wire.ErrUnknownOutcome, ""},
		{"wrapped", (&wire.ErrorBody{Code: wire.CodeUnknownOutcome, Message: "transaction outcome unknown: leadership lost"}).Err(), " (last error: leadership lost)"},
		{"another", (&wire.ErrorBody{Code: wire.CodeNoLeader, Message: "no leader reachable"}).Err(), " (last error: no leader reachable)"},
		{"transport", fmt.Errorf("dial: %w", errors.New("refused")), " (last error: dial: refused)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := lastError(tc.last); got != tc.want {
				t.Fatalf("lastError(%v) = %q, want %q", tc.last, got, tc.want)
			}
		})
	}
}
