package peer

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/peerlink"
)

// TestAnswerError: an error answer reads as the public client reads it.
func TestAnswerError(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		check  func(error) bool
	}{
		{"not leader", 503, `{"error":{"code":"not_leader","message":"x"}}`, func(err error) bool { return errors.Is(err, wire.ErrNotLeader) }},
		{"not found", 404, `{"error":{"code":"not_found","message":"x"}}`, func(err error) bool { return errors.Is(err, wire.ErrNotFound) }},
		{"lease held", 409, `{"error":{"code":"lease_held","message":"x"},"lease":{"name":"l","holder":"h","token":3}}`, func(err error) bool {
			le, ok := errors.AsType[*wire.LeaseError](err)
			return ok && le.Lease.Token == 3
		}},
		{"compacted", 410, `{"error":{"code":"compacted","message":"x"},"first_index":9}`, func(err error) bool {
			ce, ok := errors.AsType[*wire.CompactedError](err)
			return ok && ce.FirstIndex == 9
		}},
		{"no error object", 502, `bad gateway`, func(err error) bool {
			e, ok := errors.AsType[*wire.Error](err)
			return ok && e.Code == "http_502" && e.Message == "bad gateway"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := AnswerError(tc.status, []byte(tc.body)); !tc.check(err) {
				t.Fatalf("AnswerError(%d, %s) = %#v", tc.status, tc.body, err)
			}
		})
	}
}

// TestClientNoAnswer: a node that refuses the link, or is not there, gives a
// *TransportError; a lookup keeps asking until its ctx ends.
func TestClientNoAnswer(t *testing.T) {
	other, err := peerlink.Listen("127.0.0.1:0", peerlink.Config{NodeID: "other", ClusterID: func() peerlink.ClusterID { return peerlink.ClusterID{9} }})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	gone := newLink(t, "gone")
	gone.Close()
	c := NewClient(newLink(t, "n1"))
	for _, addr := range []string{other.Addr().String(), gone.Addr().String()} {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		start := time.Now()
		_, err := c.Tx(ctx, addr, 1, 0)
		cancel()
		if _, ok := errors.AsType[*TransportError](err); !ok {
			t.Fatalf("Tx() at %s = %v, want a *TransportError", addr, err)
		}
		if took := time.Since(start); took < 250*time.Millisecond {
			t.Fatalf("Tx() at %s gave up after %v, want it to ask until its ctx ends", addr, took)
		}
		if _, err := c.Cluster(context.Background(), addr); err == nil {
			t.Fatalf("Cluster() at %s = nil error", addr)
		}
	}
}

// TestReadAnswerBound: an answer that declares more than MaxAnswerBytes is
// refused before it is read; one read grows as it arrives.
func TestReadAnswerBound(t *testing.T) {
	if _, err := readAnswer(strings.NewReader("x"), MaxAnswerBytes+1); err == nil {
		t.Fatal("readAnswer() of a declared over-long answer succeeded")
	}
	b, err := readAnswer(strings.NewReader("abc"), 64<<20)
	if err != nil || string(b) != "abc" {
		t.Fatalf("readAnswer() = %q, %v; want abc", b, err)
	}
}
