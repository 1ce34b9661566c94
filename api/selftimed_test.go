package api

import (
	"context"
	"testing"
	"time"
)

// selfTimed is a Backend that applies opts.Timeout to its writes itself.
type selfTimed struct{ Backend }

func (selfTimed) SubmitTimesItself() {}

// TestSubmitContext: a write's context ends by its timeout, made by the
// handler unless the Backend applies it itself to a context without a
// deadline.
func TestSubmitContext(t *testing.T) {
	bg := context.Background()
	ctx, cancel := submitContext(bg, selfTimed{}, time.Second)
	cancel()
	if ctx != bg {
		t.Fatal("a self-timed Backend got a context of the handler's")
	}
	for name, b := range map[string]Backend{"plain": nil, "self-timed": selfTimed{}} {
		parent := bg
		if name == "self-timed" {
			var c context.CancelFunc
			parent, c = context.WithTimeout(bg, time.Hour)
			defer c()
		}
		ctx, cancel := submitContext(parent, b, time.Second)
		dl, ok := ctx.Deadline()
		cancel()
		if !ok || time.Until(dl) > time.Second {
			t.Fatalf("%s: deadline %v (%v), want within a second", name, dl, ok)
		}
	}
}
