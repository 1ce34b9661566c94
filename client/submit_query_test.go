package client

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
)

// TestWriteQuery checks that writeQuery's text is what url.Values.Encode
// wrote for the same ack and timeout.
func TestWriteQuery(t *testing.T) {
	short, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, c := range []struct {
		ctx  context.Context
		opts wire.SubmitOptions
	}{
		{context.Background(), wire.SubmitOptions{}},
		{context.Background(), wire.SubmitOptions{Ack: wire.AckQuorum}},
		{context.Background(), wire.SubmitOptions{Ack: wire.AckAll, Timeout: 1500 * time.Microsecond}},
		{context.Background(), wire.SubmitOptions{Ack: wire.AckAccepted, Timeout: time.Second}},
		{context.Background(), wire.SubmitOptions{Ack: "odd &=? value", Timeout: 3 * time.Millisecond}},
		{context.Background(), wire.SubmitOptions{Timeout: 250 * time.Nanosecond}},
		{short, wire.SubmitOptions{Ack: wire.AckQuorum}}, // fitted: a timeout appears
	} {
		got, d, ok := writeQuery(c.ctx, c.opts)
		if !ok {
			t.Fatalf("writeQuery(%+v) = not ok", c.opts)
		}
		want := url.Values{}
		if c.opts.Ack != "" {
			want.Set("ack", c.opts.Ack)
		}
		if c.opts.Timeout > 0 || d < max(c.opts.Timeout, 0) || (c.opts.Timeout <= 0 && d < wire.DefaultTimeout) {
			want.Set("timeout", d.String())
		}
		if got != want.Encode() {
			t.Errorf("writeQuery(%+v) = %q, want %q", c.opts, got, want.Encode())
		}
	}
	done, cancel2 := context.WithCancel(context.Background())
	cancel2()
	dl, cancel3 := context.WithDeadline(done, time.Now())
	defer cancel3()
	if _, _, ok := writeQuery(dl, wire.SubmitOptions{}); ok {
		t.Error("writeQuery(a ctx at its deadline) = ok, want no time left")
	}
}

// TestAttemptContext checks that an attempt ends at the earlier of its own
// bound and its parent's deadline, with or without a timer of its own.
func TestAttemptContext(t *testing.T) {
	parent, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	pd, _ := parent.Deadline()
	for _, c := range []struct {
		d    time.Duration
		want time.Time
	}{{time.Minute, time.Now().Add(time.Minute)}, {2 * time.Hour, pd}} {
		ctx, cancel := attemptContext(parent, c.d)
		dl, ok := ctx.Deadline()
		if !ok || dl.Sub(c.want).Abs() > time.Second {
			t.Errorf("attemptContext(1h parent, %v) deadline %v, %v; want about %v", c.d, dl, ok, c.want)
		}
		cancel()
	}
	ctx, cancel2 := attemptContext(parent, 2*time.Hour)
	defer cancel2()
	cancel()
	if ctx.Err() == nil {
		t.Error("attemptContext: the parent ended and the attempt did not")
	}
}
