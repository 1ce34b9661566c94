package replication

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
)

var _ hclog.Logger = (*hclogger)(nil)

// hclogger is the hclog.Logger raft and its transport log to. It writes
// through an slog.Logger, so raft's lines share the node's handler (JSON, with
// node and component), and renames raft's "error" key to our "err".
type hclogger struct {
	l     *slog.Logger
	name  string
	args  []any         // implied args, as given to With
	level *atomic.Int32 // an hclog.Level, shared by every logger derived from the root
}

// newHCLogger returns raft's logger. Raft is chatty at Info, so it logs at
// Warn and above unless l is enabled for Debug.
func newHCLogger(l *slog.Logger) *hclogger {
	level := new(atomic.Int32)
	level.Store(int32(hclog.Warn))
	if l.Enabled(context.Background(), slog.LevelDebug) {
		level.Store(int32(hclog.Debug))
	}
	return &hclogger{l: l.With("component", "raft"), level: level}
}

func slogLevel(level hclog.Level) slog.Level {
	switch level {
	case hclog.Trace:
		return slog.LevelDebug - 4
	case hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	}
	return slog.LevelInfo
}

// attrs converts hclog's alternating keys and values to slog's.
func attrs(args []any) []any {
	out := make([]any, 0, len(args))
	for i, a := range args {
		if i%2 == 0 {
			if k, ok := a.(string); ok && k == "error" {
				a = "err"
			}
		} else if f, ok := a.(hclog.Format); ok && len(f) > 0 {
			a = fmt.Sprintf(fmt.Sprint(f[0]), f[1:]...)
		}
		out = append(out, a)
	}
	return out
}

func (h *hclogger) Log(level hclog.Level, msg string, args ...any) {
	if level == hclog.Off || level < hclog.Level(h.level.Load()) {
		return
	}
	a := attrs(args)
	if h.name != "" {
		a = append(a, "module", h.name)
	}
	h.l.Log(context.Background(), slogLevel(level), msg, a...)
}

func (h *hclogger) Trace(msg string, args ...any) { h.Log(hclog.Trace, msg, args...) }
func (h *hclogger) Debug(msg string, args ...any) { h.Log(hclog.Debug, msg, args...) }
func (h *hclogger) Info(msg string, args ...any)  { h.Log(hclog.Info, msg, args...) }
func (h *hclogger) Warn(msg string, args ...any)  { h.Log(hclog.Warn, msg, args...) }
func (h *hclogger) Error(msg string, args ...any) { h.Log(hclog.Error, msg, args...) }

func (h *hclogger) enabled(level hclog.Level) bool { return level >= hclog.Level(h.level.Load()) }

func (h *hclogger) IsTrace() bool { return h.enabled(hclog.Trace) }
func (h *hclogger) IsDebug() bool { return h.enabled(hclog.Debug) }
func (h *hclogger) IsInfo() bool  { return h.enabled(hclog.Info) }
func (h *hclogger) IsWarn() bool  { return h.enabled(hclog.Warn) }
func (h *hclogger) IsError() bool { return h.enabled(hclog.Error) }

func (h *hclogger) ImpliedArgs() []any { return h.args }

func (h *hclogger) With(args ...any) hclog.Logger {
	c := *h
	c.l = h.l.With(attrs(args)...)
	c.args = append(append([]any(nil), h.args...), args...)
	return &c
}

func (h *hclogger) Name() string { return h.name }

func (h *hclogger) Named(name string) hclog.Logger {
	if h.name != "" {
		name = h.name + "." + name
	}
	return h.ResetNamed(name)
}

func (h *hclogger) ResetNamed(name string) hclog.Logger {
	c := *h
	c.name = name
	return &c
}

func (h *hclogger) SetLevel(level hclog.Level) { h.level.Store(int32(level)) }
func (h *hclogger) GetLevel() hclog.Level      { return hclog.Level(h.level.Load()) }

// StandardLogger returns a log.Logger writing at Info through the same slog.Logger.
func (h *hclogger) StandardLogger(*hclog.StandardLoggerOptions) *log.Logger {
	return slog.NewLogLogger(h.l.Handler(), slog.LevelInfo)
}

// StandardWriter returns a writer logging each line at Info.
func (h *hclogger) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	return h.StandardLogger(opts).Writer()
}
