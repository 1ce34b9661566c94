package peer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"

	"github.com/txlog/txlog/peerlink"
)

// TestTransportErrorText: the text of a *TransportError, which the public
// API may answer with, names the cause but neither the peer's address nor
// the internal URL; errors.Is still finds the cause.
func TestTransportErrorText(t *testing.T) {
	const addr = "127.0.0.1:7001"
	u := "http://" + addr + "/v1/cluster/transfer-leadership"
	refused := &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7001}, Err: errors.New("connect: connection refused")}
	for _, tc := range []struct {
		name string
		err  error
		want string
		is   error
	}{
		{"deadline", &url.Error{Op: "Post", URL: u, Err: context.DeadlineExceeded}, "no answer from another node: timed out", context.DeadlineExceeded},
		{"canceled", &url.Error{Op: "Post", URL: u, Err: context.Canceled}, "no answer from another node: canceled", context.Canceled},
		{"dial", &url.Error{Op: "Post", URL: u, Err: refused}, "no answer from another node: dial: connect: connection refused", nil},
		{"link refused", &url.Error{Op: "Post", URL: u, Err: fmt.Errorf("peer link to %s: %w", addr, peerlink.ErrRefused)}, "no answer from another node: " + peerlink.ErrRefused.Error(), peerlink.ErrRefused},
		{"other", fmt.Errorf("read answer from %s: short", addr), "no answer from another node: read answer from the node: short", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := &TransportError{Addr: addr, Err: tc.err, Sent: true}
			if got := err.Error(); got != tc.want || strings.Contains(got, addr) || strings.Contains(got, "http://") {
				t.Fatalf("Error() = %q, want %q", got, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Fatalf("errors.Is(%v, %v) = false", err, tc.is)
			}
		})
	}
}
