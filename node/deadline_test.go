package node

import (
	"context"
	"testing"
	"time"
)

// TestReqDeadline: a request's deadline is its context's, else its
// timeout from now; its proposal ends a reserve before it, as withReserve of
// the request's context would; its own context is made only when asked for.
func TestReqDeadline(t *testing.T) {
	near := func(got, want time.Time) bool { d := got.Sub(want); return d > -time.Second/2 && d < time.Second/2 }
	t.Run("timeout", func(t *testing.T) {
		rd := newReqDeadline(context.Background(), 5*time.Second)
		defer rd.stop()
		want := time.Now().Add(5 * time.Second)
		pctx, cancel := rd.proposal()
		defer cancel()
		pdl, ok := pctx.Deadline()
		if !ok || !near(pdl, want.Add(-time.Second)) {
			t.Fatalf("proposal deadline = %v (%v), want about %v", pdl, ok, want.Add(-time.Second))
		}
		if rd.made != nil {
			t.Fatal("the proposal made the request's own context")
		}
		dl, ok := rd.ctx().Deadline()
		if !ok || !near(dl, want) {
			t.Fatalf("request deadline = %v (%v), want about %v", dl, ok, want)
		}
		wpctx, wcancel := withReserve(rd.ctx())
		defer wcancel()
		if wdl, _ := wpctx.Deadline(); !near(wdl, pdl) {
			t.Fatalf("proposal deadline %v, withReserve's %v", pdl, wdl)
		}
	})
	t.Run("parent's deadline", func(t *testing.T) {
		parent, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		rd := newReqDeadline(parent, time.Hour)
		defer rd.stop()
		pdl, _ := parent.Deadline()
		if rd.ctx() != parent {
			t.Fatal("a parent whose deadline is the request's got a context of its own")
		}
		pctx, c := rd.proposal()
		defer c()
		got, ok := pctx.Deadline()
		if !ok || !got.Before(pdl) || !near(got, pdl.Add(-200*time.Millisecond)) {
			t.Fatalf("proposal deadline = %v, want a fifth of a second before %v", got, pdl)
		}
	})
	t.Run("none", func(t *testing.T) {
		rd := newReqDeadline(context.Background(), 0)
		defer rd.stop()
		pctx, c := rd.proposal()
		defer c()
		if _, ok := pctx.Deadline(); ok {
			t.Fatal("a request without a deadline got a proposal deadline")
		}
		if _, ok := rd.ctx().Deadline(); ok {
			t.Fatal("a request without a deadline got one")
		}
	})
	t.Run("expires", func(t *testing.T) {
		rd := newReqDeadline(context.Background(), 50*time.Millisecond)
		defer rd.stop()
		pctx, c := rd.proposal()
		defer c()
		select {
		case <-pctx.Done():
		case <-time.After(30 * time.Second):
			t.Fatal("the proposal's context never ended")
		}
		select {
		case <-rd.ctx().Done():
		case <-time.After(30 * time.Second):
			t.Fatal("the request's context never ended")
		}
	})
}
