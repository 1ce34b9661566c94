package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/txlog/txlog/api/wire"
)

// Limits of Follow.
const (
	// FollowIdleTimeout is how long Follow waits for a line of the stream (an
	// event or the server's heartbeat comment, every 15s) before it takes the
	// connection for dead and reconnects.
	FollowIdleTimeout = 45 * time.Second
	// MaxEventBytes bounds one line of the stream.
	MaxEventBytes = 64 << 20
)

// logs are the reads of the log.
type logs struct{ *conn }

// Log reads up to limit committed transactions from index from on, from any
// node. from 0 and limit 0 leave the server's defaults (1 and 100).
func (c *logs) Log(ctx context.Context, from uint64, limit int) (wire.LogPage, error) {
	q := url.Values{}
	if from > 0 {
		q.Set("from", strconv.FormatUint(from, 10))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var page wire.LogPage
	err := c.call(ctx, request{method: http.MethodGet, path: "/v1/log", query: q}, true, &page)
	return page, err
}

// LogWait reads as Log, limited to the entries that touch a key starting with
// prefix ("" for all), from any node. With wait > 0 the node answers as soon
// as it has applied such an entry at index from or later, or after wait with
// no entries (the server bounds wait at 60s). Next moves past the entries the
// prefix skipped.
func (c *logs) LogWait(ctx context.Context, from uint64, limit int, prefix string, wait time.Duration) (wire.LogPage, error) {
	q := waitQuery(wait)
	if from > 0 {
		q.Set("from", strconv.FormatUint(from, 10))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if prefix != "" {
		q.Set("prefix", prefix)
	}
	var page wire.LogPage
	err := c.call(ctx, request{method: http.MethodGet, path: "/v1/log", query: q, serverTime: wait}, true, &page)
	return page, err
}

// Follow reads the log from index from on (0 means 1), the entries that touch
// a key starting with prefix ("" for all), over GET /v1/log/stream, and calls
// fn with each, in index order, each once. It returns when ctx ends (with
// ctx's error), when fn returns an error (that error), or when the stream
// cannot go on: a *wire.CompactedError (errors.Is ErrCompacted) when the log
// no longer holds the next entry, or another error the server answers that
// retrying does not cure (a bad prefix, say).
//
// A broken or silent connection (FollowIdleTimeout), or a node that refuses,
// is not an error: Follow reconnects with backoff, trying the next endpoint,
// and resumes after the last entry fn got (header Last-Event-ID). fn runs on
// Follow's goroutine; the stream waits while it runs.
func (c *logs) Follow(ctx context.Context, from uint64, prefix string, fn func(wire.LogEntry) error) error {
	base, err := c.first()
	if err != nil {
		return err
	}
	f := follow{c: c.conn, prefix: prefix, fn: fn, last: max(from, 1) - 1}
	var lastErr error
	f.since = time.Now()
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if err := f.pause(ctx, attempt); err != nil {
				if ctx.Err() == nil {
					return f.noAnswer(lastErr)
				}
				return giveUp(lastErr, err)
			}
		}
		before := f.last
		f.connected = false
		err := f.stream(ctx, base)
		var se *streamError
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.As(err, &se):
			return se.err
		}
		if f.connected {
			f.since = time.Now() // a node answered: the time without one starts again
		} else if f.expired() {
			return f.noAnswer(err)
		}
		if f.last > before {
			attempt = 0 // it made progress: retry soon, on the same node
			lastErr = err
			continue
		}
		lastErr, base = err, c.next(base)
	}
}

// ErrNoAnswer ends a Follow that no node answered for ClientConfig's
// FollowTimeout.
var ErrNoAnswer = errors.New("no node answered")

// noAnswer is the error of a Follow that no node answered in time.
func (f *follow) noAnswer(last error) error {
	if last == nil {
		return fmt.Errorf("%w for %v", ErrNoAnswer, f.c.cfg.FollowTimeout)
	}
	return fmt.Errorf("%w for %v: %w", ErrNoAnswer, f.c.cfg.FollowTimeout, last)
}

// expired reports whether no node has answered for FollowTimeout.
func (f *follow) expired() bool {
	return f.c.cfg.FollowTimeout > 0 && time.Since(f.since) >= f.c.cfg.FollowTimeout
}

// pause is conn.pause, cut short (with an error) when FollowTimeout runs out
// first.
func (f *follow) pause(ctx context.Context, attempt int) error {
	if f.c.cfg.FollowTimeout <= 0 {
		return f.c.pause(ctx, attempt)
	}
	pctx, cancel := context.WithDeadline(ctx, f.since.Add(f.c.cfg.FollowTimeout))
	defer cancel()
	return f.c.pause(pctx, attempt)
}

// follow is one Follow: where it is, and what it calls.
type follow struct {
	c      *conn
	prefix string
	fn     func(wire.LogEntry) error
	last   uint64 // the index of the last entry fn got; 0 for none
	// since is when the time without an answer started: Follow's start, or
	// the end of the last stream a node opened. connected is true once the
	// current stream was opened.
	since     time.Time
	connected bool
}

// streamError ends a Follow: an error of fn, of the server's that retrying
// does not cure, or a stream out of order.
type streamError struct{ err error }

func (e *streamError) Error() string { return e.err.Error() }

// stream reads one connection to base until it breaks.
func (f *follow) stream(ctx context.Context, base string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	open := f.c.cfg.AttemptTimeout + FollowIdleTimeout
	if ft := f.c.cfg.FollowTimeout; ft > 0 {
		open = min(open, max(time.Until(f.since.Add(ft)), time.Millisecond))
	}
	idle := time.AfterFunc(open, cancel)
	defer idle.Stop()
	q := url.Values{"from": {strconv.FormatUint(f.last+1, 10)}}
	if f.prefix != "" {
		q.Set("prefix", f.prefix)
	}
	u := base + wire.LogStreamPath + "?" + q.Encode()
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return &streamError{fmt.Errorf("GET %s: %w", u, err)}
	}
	hr.Header.Set("Accept", "text/event-stream")
	f.c.authorize(hr)
	if f.last > 0 {
		hr.Header.Set(wire.HeaderLastEventID, strconv.FormatUint(f.last, 10))
	}
	resp, err := f.c.hc.Do(hr)
	if err != nil {
		err = transportError(base, err)
		if _, ok := errors.AsType[*HandshakeError](err); ok {
			return &streamError{err}
		}
		f.c.setDown(base, true)
		return err
	}
	defer resp.Body.Close()
	f.c.setDown(base, false)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, MaxAnswerBytes))
		code, aerr := classify(answer{status: resp.StatusCode, body: b})
		if refused(code) || ambiguousCode(code) || resp.StatusCode >= 500 {
			return aerr
		}
		return &streamError{aerr}
	}
	f.connected = true
	idle.Reset(FollowIdleTimeout)
	err = readEvents(resp.Body, func() { idle.Reset(FollowIdleTimeout) }, f.event)
	if err == nil {
		err = io.ErrUnexpectedEOF // the server ended the stream
	}
	return err
}

// event handles one event of the stream.
func (f *follow) event(ev sseEvent) error {
	if ev.event != wire.LogEventEntry {
		return nil // a type this version does not know
	}
	var e wire.LogEntry
	if err := json.Unmarshal(ev.data, &e); err != nil {
		return &streamError{fmt.Errorf("log stream: event %q: %w", ev.id, err)}
	}
	if ev.id != strconv.FormatUint(e.Index, 10) || e.Index <= f.last {
		return &streamError{fmt.Errorf("log stream: event id %q, entry %d, after entry %d: out of order", ev.id, e.Index, f.last)}
	}
	if err := f.fn(e); err != nil {
		return &streamError{err}
	}
	f.last = e.Index
	return nil
}

// sseEvent is one Server-Sent Event.
type sseEvent struct {
	id, event string
	data      []byte
}

// readEvents parses the Server-Sent Events of r (the WHATWG event stream
// format: "field: value" lines, ":" comments, a blank line ends an event) and
// calls fn with each event that has data; line is called on every line. It
// returns fn's error, or the error that ended r (nil for EOF). The format is
// a few lines of code; a library would add a dependency and hide the reads.
func readEvents(r io.Reader, line func(), fn func(sseEvent) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var ev sseEvent
	var data bytes.Buffer
	hasData := false
	for {
		l, err := readLine(br)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		line()
		if len(l) == 0 { // dispatch
			if hasData {
				ev.data = data.Bytes()
				if err := fn(ev); err != nil {
					return err
				}
			}
			ev, hasData = sseEvent{}, false
			data.Reset()
			continue
		}
		if l[0] == ':' {
			continue // a comment: the heartbeat
		}
		name, value, _ := bytes.Cut(l, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(name) {
		case "id":
			ev.id = string(value)
		case "event":
			ev.event = string(value)
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			data.Write(value)
			hasData = true
		}
	}
}

// readLine reads one line without its "\n" or "\r\n", at most MaxEventBytes.
func readLine(br *bufio.Reader) ([]byte, error) {
	var long []byte
	for {
		l, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long, l...)
			if len(long) > MaxEventBytes {
				return nil, fmt.Errorf("log stream: line longer than %d bytes", MaxEventBytes)
			}
			continue
		}
		if err != nil {
			return nil, err // a line cut short counts as none
		}
		if long != nil {
			l = append(long, l...)
		}
		l = bytes.TrimSuffix(l[:len(l)-1], []byte("\r"))
		return l, nil
	}
}

// compactedError returns the *CompactedError of an error answer's body, if it
// is one.
func compactedError(code string, body []byte) (*wire.CompactedError, bool) {
	if code != wire.CodeCompacted {
		return nil, false
	}
	var a wire.CompactedAnswer
	if json.Unmarshal(body, &a) != nil {
		return nil, false
	}
	return &wire.CompactedError{FirstIndex: a.FirstIndex, Message: a.Error.Message}, true
}
