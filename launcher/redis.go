package launcher

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// DefaultRedisBin is the redis-server program StartRedis runs, looked up in PATH.
const DefaultRedisBin = "redis-server"

// redisStartAttempts is how often StartRedis picks another port when the one it
// reserved was taken before redis-server could bind it.
const redisStartAttempts = 3

// RedisConfig describes a redis-server run by the launcher. Zero values mean
// "use the default".
type RedisConfig struct {
	// Bin is the redis-server program. Default DefaultRedisBin.
	Bin string
	// Dir holds the data in <Dir>/data (unless DataDir is set) and the log
	// <Dir>/redis.log. Required.
	Dir string
	// DataDir, when set, is where the data lives instead of <Dir>/data.
	DataDir string
	// Host is the loopback address it binds. Default 127.0.0.1; see
	// ClusterConfig.Host for when to take one from PrivateLoopback.
	Host string
	// Logger receives the launcher's records; nil discards them.
	Logger *slog.Logger
}

// Redis is a redis-server on a loopback port that stays the same across its
// runs. It persists with an append-only file fsynced on every write (as txlog
// expects in production, see docs/parking.md), so Stop and Start keep what it
// acknowledged; RestartEmpty models a Redis that comes back without its data.
// Its methods must not race with each other.
type Redis struct {
	proc *Process
	addr string
	data string
}

// StartRedis starts a redis-server on a free loopback port and returns once it
// answers PING. The process dies with this one (see the package doc).
func StartRedis(ctx context.Context, cfg RedisConfig) (*Redis, error) {
	if cfg.Bin == "" {
		cfg.Bin = DefaultRedisBin
	}
	if cfg.Dir == "" {
		return nil, errors.New("redis config: Dir is required")
	}
	if cfg.Host == "" {
		cfg.Host = loopback
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("redis dir: %w", err)
	}
	data := filepath.Join(dir, "data")
	if cfg.DataDir != "" {
		if data, err = filepath.Abs(cfg.DataDir); err != nil {
			return nil, fmt.Errorf("redis data dir: %w", err)
		}
	}
	var lastErr error
	for range redisStartAttempts {
		ps, err := FreePorts(cfg.Host, 1)
		if err != nil {
			return nil, fmt.Errorf("reserve redis port: %w", err)
		}
		r := &Redis{addr: net.JoinHostPort(cfg.Host, strconv.Itoa(ps[0])), data: data}
		r.proc, err = NewProcess(ProcessConfig{
			ID:  "redis",
			Bin: cfg.Bin,
			Args: []string{
				"--port", strconv.Itoa(ps[0]),
				"--bind", cfg.Host,
				"--save", "",
				"--appendonly", "yes",
				"--appendfsync", "always",
				"--dir", r.data,
				"--daemonize", "no",
			},
			LogDir: dir,
			Logger: cfg.Logger,
		})
		if err != nil {
			return nil, err
		}
		if lastErr = r.Start(ctx); lastErr == nil {
			return r, nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("start redis-server: %w", lastErr)
}

// Addr returns the host:port Redis listens on.
func (r *Redis) Addr() string { return r.addr }

// Running reports whether redis-server runs.
func (r *Redis) Running() bool { return r.proc.Running() }

// Start starts redis-server on its data dir if it is not running, and waits
// until it answers PING (it answers -LOADING while it reads its AOF).
func (r *Redis) Start(ctx context.Context) error {
	if r.proc.Running() {
		return nil
	}
	if err := os.MkdirAll(r.data, 0o755); err != nil {
		return fmt.Errorf("start redis: %w", err)
	}
	if err := r.proc.Start(); err != nil {
		return err
	}
	err := Poll(ctx, pollInterval, func(context.Context) error {
		if !r.proc.Running() {
			return fmt.Errorf("redis-server exited; log tail:\n%s", r.proc.LogTail(logTailLines))
		}
		return redisPing(r.addr)
	})
	if err != nil {
		r.proc.Kill()
		return fmt.Errorf("start redis on %s: %w", r.addr, err)
	}
	return nil
}

// Stop shuts redis-server down with SIGTERM (it flushes its AOF first), within ctx.
func (r *Redis) Stop(ctx context.Context) error { return r.proc.Stop(ctx) }

// Kill crashes redis-server with SIGKILL.
func (r *Redis) Kill() error { return r.proc.Kill() }

// Pause freezes redis-server with SIGSTOP: connections stay open and commands
// hang, as with a Redis that is overloaded or cut off. Resume, Stop or Kill
// undo it.
func (r *Redis) Pause() error { return r.proc.Pause() }

// Resume undoes Pause with SIGCONT.
func (r *Redis) Resume() error { return r.proc.Resume() }

// RestartEmpty stops redis-server if it runs, deletes its data and starts it
// again on the same port: a Redis that lost its disk or was flushed.
func (r *Redis) RestartEmpty(ctx context.Context) error {
	if err := r.Stop(ctx); err != nil {
		return err
	}
	if err := os.RemoveAll(r.data); err != nil {
		return fmt.Errorf("wipe redis data: %w", err)
	}
	return r.Start(ctx)
}

// DataDir returns the directory of redis-server's data (its AOF).
func (r *Redis) DataDir() string { return r.data }

// LogPath returns redis-server's log file.
func (r *Redis) LogPath() string { return r.proc.LogPath() }

// redisPing sends one inline PING and wants +PONG.
func redisPing(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, requestTimeout)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(requestTimeout)); err != nil {
		return err
	}
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}
