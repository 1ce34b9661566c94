package client

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
)

// TestNextPassesOverDownEndpoints: failover goes to an endpoint not seen
// failing before one that was; with every other one down it goes round.
func TestNextPassesOverDownEndpoints(t *testing.T) {
	cl := testClient("http://a", "http://b", "http://c")
	cn := cl.conn
	cn.setDown("http://b", true)
	for _, tt := range []struct{ from, want string }{
		{"http://a", "http://c"},
		{"http://c", "http://a"},
		{"http://b", "http://c"},
	} {
		if got := cn.next(tt.from); got != tt.want {
			t.Errorf("next(%s) with b down = %s, want %s", tt.from, got, tt.want)
		}
	}
	cn.setDown("http://a", true)
	cn.setDown("http://c", true)
	if got := cn.next("http://a"); got != "http://b" {
		t.Errorf("next(a) with all down = %s, want b, the next in turn", got)
	}
	cn.setDown("http://c", false)
	if got, _ := cn.first(); got != "http://c" {
		t.Errorf("first() with a down, c up = %s, want c", got)
	}
	if down := cl.Down(); len(down) != 2 || down[0] != "http://a" || down[1] != "http://b" {
		t.Errorf("Down() = %q, want a and b", down)
	}
	if !cl.Answered("http://c") || cl.Answered("http://a") {
		t.Errorf("Answered(c) = %v, Answered(a) = %v; want true, false", cl.Answered("http://c"), cl.Answered("http://a"))
	}
}

// TestFollowTimeout: a Follow whose nodes accept connections and never
// answer, or refuse them, ends with ErrNoAnswer about FollowTimeout after it
// started, not after FollowIdleTimeout or never.
func TestFollowTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + closed.Addr().String()
	closed.Close()
	for _, eps := range [][]string{{"http://" + ln.Addr().String()}, {closedURL}, {"http://" + ln.Addr().String(), closedURL}} {
		const ft = 500 * time.Millisecond
		cl := NewClient(ClientConfig{Endpoints: eps, FollowTimeout: ft})
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		start := time.Now()
		err := cl.Follow(ctx, 1, "", func(wire.LogEntry) error { return nil })
		took := time.Since(start)
		cancel()
		if !errors.Is(err, ErrNoAnswer) {
			t.Fatalf("Follow(%q) = %v, want ErrNoAnswer", eps, err)
		}
		if took > ft+time.Second {
			t.Fatalf("Follow(%q) took %v, want about %v", eps, took, ft)
		}
	}
}
