package redistest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/txlog/txlog/node/parking/redistest"
)

func client(t *testing.T, s *redistest.Server) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	return c
}

func TestServerLifecycle(t *testing.T) {
	ctx := context.Background()
	s := redistest.Start(t)
	c := client(t, s)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	addr := s.Addr

	t.Run("kill and restart keeps acknowledged writes", func(t *testing.T) {
		s.Kill()
		if s.Running() {
			t.Fatal("Running() = true after Kill")
		}
		s.Restart()
		if s.Addr != addr {
			t.Fatalf("Addr = %s after Restart, want %s", s.Addr, addr)
		}
		if got, err := c.Get(ctx, "k").Result(); err != nil || got != "v" {
			t.Fatalf("GET after kill+restart = %q, %v, want \"v\"", got, err)
		}
	})

	t.Run("restart empty loses data", func(t *testing.T) {
		s.RestartEmpty()
		if err := c.Get(ctx, "k").Err(); !errors.Is(err, redis.Nil) {
			t.Fatalf("GET after RestartEmpty = %v, want redis.Nil", err)
		}
	})

	t.Run("pause makes commands hang", func(t *testing.T) {
		s.Pause()
		short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		c2 := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DisableIdentity: true, ContextTimeoutEnabled: true})
		defer c2.Close()
		if err := c2.Ping(short).Err(); err == nil {
			t.Fatal("PING on a paused server succeeded, want a timeout")
		}
		s.Resume()
		if err := c.Ping(ctx).Err(); err != nil {
			t.Fatalf("PING after Resume: %v", err)
		}
	})

	t.Run("stop while paused", func(t *testing.T) {
		s.Pause()
		s.Stop()
		if s.Running() {
			t.Fatal("Running() = true after Stop")
		}
		s.Stop() // twice is fine
		s.Restart()
		if !s.Running() {
			t.Fatal("Running() = false after Restart")
		}
	})
}

func TestTwoServers(t *testing.T) {
	a, b := redistest.Start(t), redistest.Start(t)
	if a.Addr == b.Addr || a.Dir == b.Dir {
		t.Fatalf("two servers share %s / %s", a.Addr, a.Dir)
	}
}
