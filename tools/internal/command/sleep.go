package command

import (
	"context"
	"time"
)

// Sleep waits d, or until ctx ends: then it returns ctx's error at once.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
