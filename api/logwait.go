package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/auth"
)

// Limits of the waiting and streaming reads of the log.
const (
	// MaxLogWait bounds the wait parameter of GET /v1/log.
	MaxLogWait = 60 * time.Second
	// DefaultLogHeartbeat is how often an idle GET /v1/log/stream sends a
	// comment line, so that proxies and readers see the connection live.
	DefaultLogHeartbeat = 15 * time.Second
	// logScanBudget bounds the log records one read with a prefix looks at;
	// next then moves past the ones it skipped.
	logScanBudget = 10 * MaxLogLimit
	// logStreamPage is how many entries the stream reads, writes and flushes
	// at a time.
	logStreamPage = 100
	// logStreamWriteTimeout bounds the write of one batch of events: a reader
	// that takes longer is cut off, and resumes with Last-Event-ID.
	logStreamWriteTimeout = 30 * time.Second
)

// LogFollower is what waiting (GET /v1/log?wait=) and streaming
// (GET /v1/log/stream) reads need beyond Backend. node.Node implements it. On a
// Backend without it nothing ever counts as applied while a read waits, and
// the log starts at 1.
type LogFollower interface {
	// FirstIndex returns the first index the log still holds: entries below it
	// were removed. 1 when none ever were.
	FirstIndex() uint64
	// Applied returns a channel closed when this node next applies an entry.
	// A read takes it before it reads the log, so it misses nothing.
	Applied() <-chan struct{}
}

// logHandlers serve GET /v1/log and GET /v1/log/stream. done ends the
// waiting reads and the streams when the node shuts down
// (Server.EndLogStreams): http.Server.Shutdown waits for them, and they
// never go idle.
type logHandlers struct {
	*answers
	b    Backend
	f    LogFollower // nil if b is not one
	once sync.Once
	done chan struct{}
	// events shares the pages of the streams without a prefix or a
	// Principal that sees less than everything; seen those of the streams
	// without a prefix whose Principal has no key prefixes but is not an
	// admin: they all see every entry but the reserved and unreadable ones.
	events, seen *streamCache
}

func newLogHandlers(a *answers, b Backend) *logHandlers {
	h := &logHandlers{answers: a, b: b, done: make(chan struct{}), events: newStreamCache(), seen: newStreamCache()}
	h.f, _ = b.(LogFollower)
	return h
}

// EndLogStreams ends the streams of GET /v1/log/stream and the waits of
// GET /v1/log. Register it with http.Server.RegisterOnShutdown. Safe to call
// more than once.
func (s *Server) EndLogStreams() {
	s.logs.once.Do(func() { close(s.logs.done) })
}

// logRead is a read of the log, as the query asks for it.
type logRead struct {
	from   uint64
	limit  int
	wait   time.Duration
	prefix string // "": every entry
	// p is the reader's Principal when it sees less than every key
	// (seer): the entries it may not see are skipped as those without
	// prefix are.
	p *auth.Principal
}

// parseLogRead reads the parameters of GET /v1/log (stream: of
// GET /v1/log/stream, which takes no limit or wait, and resumes after the
// Last-Event-ID header lastID when it is set).
func parseLogRead(q query, maxKeyBytes int, stream bool, lastID string) (logRead, error) {
	from, err := q.integer("from", 1, 1, 1<<63-1)
	if err != nil {
		return logRead{}, err
	}
	rd := logRead{from: from, limit: logStreamPage}
	if !stream {
		limit, err := q.integer("limit", DefaultLogLimit, 1, MaxLogLimit)
		if err != nil {
			return logRead{}, err
		}
		rd.limit = int(limit)
		if rd.wait, err = q.duration("wait", 0, MaxLogWait, true); err != nil {
			return logRead{}, err
		}
	}
	if p, ok := q.get("prefix"); ok {
		if err := checkKey(p, "prefix", maxKeyBytes); err != nil {
			return logRead{}, paramError("prefix", p, err)
		}
		rd.prefix = p
	}
	if stream && lastID != "" {
		id, err := strconv.ParseUint(lastID, 10, 64)
		if err != nil || id >= 1<<63-1 {
			return logRead{}, &wire.Error{Code: wire.CodeInvalidParam, Message: fmt.Sprintf("%s %q: want the index of an entry", wire.HeaderLastEventID, lastID)}
		}
		rd.from = id + 1 // takes precedence over from
	}
	return rd, nil
}

// applied returns the channel that Applied gives, nil (never ready) without a
// LogFollower.
func (h *logHandlers) applied() <-chan struct{} {
	if h.f != nil {
		return h.f.Applied()
	}
	return nil
}

// readLog answers the read rd: a page as logPage reads it, or with rd.wait,
// the first page that has an entry, waiting up to rd.wait for one to be
// applied. A wait that runs out answers the empty page and its next.
func (h *logHandlers) readLog(ctx context.Context, rd logRead) (wire.LogPage, error) {
	var timeout <-chan time.Time
	if rd.wait > 0 {
		t := time.NewTimer(rd.wait)
		defer t.Stop()
		timeout = t.C
	}
	for {
		var changed <-chan struct{}
		if rd.wait > 0 {
			changed = h.applied() // before the read: an entry applied after it closes it
		}
		page, err := h.logPage(ctx, rd)
		if err != nil || len(page.Entries) > 0 || rd.wait == 0 {
			return page, err
		}
		if page.Next != rd.from { // a prefix read skipped entries: read on
			rd.from = page.Next
			continue
		}
		select {
		case <-changed:
		case <-timeout:
			return page, nil
		case <-h.done:
			return page, nil
		case <-ctx.Done():
			return page, ctx.Err()
		}
	}
}

// logPage reads up to rd.limit entries from index rd.from on that touch a key
// with rd.prefix (all with "") and that rd.p sees (seesEntry), looking at up
// to logScanBudget records; Next is past the last record looked at, so a
// reader moves past the entries skipped. An index below the log's first
// gives a *wire.CompactedError, never a page that starts later.
func (h *logHandlers) logPage(ctx context.Context, rd logRead) (wire.LogPage, error) {
	limit, prefix := rd.limit, rd.prefix
	out := wire.LogPage{Next: rd.from}
	for scanned := 0; ; {
		ask := limit - len(out.Entries)
		page, err := h.b.Log(ctx, out.Next, ask)
		if err != nil {
			return wire.LogPage{}, err
		}
		// After the read: retention only moves the first index up, so a read
		// that started at or after it saw every entry it asked for.
		if h.f != nil {
			if first := h.f.FirstIndex(); out.Next < first {
				return wire.LogPage{}, &wire.CompactedError{From: out.Next, FirstIndex: first}
			}
		}
		if prefix == "" && rd.p == nil {
			return page, nil
		}
		for i, e := range page.Entries {
			if (prefix == "" || touches(e, prefix)) && seesEntry(rd.p, &page.Entries[i]) {
				out.Entries = append(out.Entries, e)
			}
		}
		out.Next = page.Next
		scanned += len(page.Entries)
		if len(page.Entries) < ask || len(out.Entries) == limit || scanned >= logScanBudget {
			return out, nil
		}
	}
}

// touches reports whether an op of e has a key that starts with prefix.
func touches(e wire.LogEntry, prefix string) bool {
	for _, op := range e.Ops {
		if strings.HasPrefix(op.Key, prefix) {
			return true
		}
	}
	return false
}

// handleLog serves GET /v1/log?from=N&limit=M[&wait=D][&prefix=P].
func (h *logHandlers) handleLog(w http.ResponseWriter, r *http.Request) {
	q, err := parseQuery(r, "from", "limit", "wait", "prefix")
	if err != nil {
		h.writeError(w, err)
		return
	}
	rd, err := parseLogRead(q, h.cfg.MaxKeyBytes, false, "")
	rd.p = seer(r.Context())
	if err == nil && rd.wait > 0 {
		if err = h.streams.take(); err == nil {
			defer h.streams.give()
		}
	}
	if err != nil {
		h.writeError(w, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), rd.wait+h.cfg.DefaultTimeout)
	defer cancel()
	page, err := h.readLog(ctx, rd)
	if err == nil && rd.wait > 0 && !h.credentialHolds(r) {
		err = errCredentialGone()
	}
	if err != nil {
		h.writeLogError(w, err)
		return
	}
	if page.Entries == nil {
		page.Entries = []wire.LogEntry{}
	}
	h.writeJSON(w, http.StatusOK, page)
}

// writeLogError answers err; a *CompactedError gets first_index in the body.
func (h *logHandlers) writeLogError(w http.ResponseWriter, err error) {
	ce, ok := errors.AsType[*wire.CompactedError](err)
	if !ok {
		h.writeError(w, err)
		return
	}
	if rec, ok := w.(*recorder); ok {
		rec.err = err
	}
	h.writeJSON(w, http.StatusGone, wire.CompactedAnswer{Error: wire.ErrorBody{Code: wire.CodeCompacted, Message: ce.Error()}, FirstIndex: ce.FirstIndex})
}

// handleLogStream serves GET /v1/log/stream?from=N[&prefix=P] as Server-Sent
// Events, one event per entry (appendEvent), from what this node has applied,
// in log order. It reads a page from the Backend at a time and writes and
// flushes it before it reads the next, so a slow reader holds no lock and
// no more than a page; one that takes longer than logStreamWriteTimeout for
// a page is cut off. A comment line goes out every Config.logHeartbeat while
// idle. Once the events started, an error ends the stream; the reader
// reconnects with Last-Event-ID and gets the error as an answer. So does a
// credential that no longer holds (credentialHolds, asked before each page
// and each heartbeat): a token removed from the auth file reads nothing
// more, and its reconnect gets 401.
func (h *logHandlers) handleLogStream(w http.ResponseWriter, r *http.Request) {
	q, err := parseQuery(r, "from", "prefix")
	if err != nil {
		h.writeError(w, err)
		return
	}
	rd, err := parseLogRead(q, h.cfg.MaxKeyBytes, true, r.Header.Get(wire.HeaderLastEventID))
	rd.p = seer(r.Context())
	if err == nil {
		if err = h.streams.take(); err == nil {
			defer h.streams.give()
		}
	}
	if err != nil {
		h.writeError(w, err)
		return
	}
	ctx := r.Context()
	changed := h.applied()
	page, err := h.logPage(ctx, rd)
	if err != nil {
		h.writeLogError(w, err)
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	beat := time.NewTicker(h.cfg.logHeartbeat)
	defer beat.Stop()
	buf := []byte(": txlog log stream\n\n") // sends the headers at once
	if buf, err = h.appendEvents(buf, page.Entries); err != nil {
		h.log.Warn("encode log event", "err", err)
		return
	}
	next := page.Next
	for {
		if len(buf) > 0 {
			if err := writeFlush(rc, w, buf); err != nil {
				h.log.Debug("log stream write", "err", err)
				return
			}
			buf = buf[:0]
			beat.Reset(h.cfg.logHeartbeat)
		}
		if next == rd.from { // nothing new: wait
			select {
			case <-changed:
			case <-beat.C:
				if !h.credentialHolds(r) {
					return
				}
				buf = append(buf, ": heartbeat\n\n"...)
				continue
			case <-h.done:
				return
			case <-ctx.Done():
				return
			}
		}
		if !h.credentialHolds(r) {
			return
		}
		rd.from = next
		changed = h.applied()
		rctx, cancel := context.WithTimeout(ctx, h.cfg.DefaultTimeout)
		buf, next, err = h.streamEvents(rctx, buf, rd)
		cancel()
		if err != nil {
			h.log.Debug("log stream read", "from", rd.from, "err", err)
			return
		}
	}
}

// streamEvents appends to buf the events of the page of the stream rd from
// rd.from, and returns the index after it. A stream without a prefix or key
// prefixes (rd.p) shares the page with the others that read it and see what
// it sees (streamCache).
func (h *logHandlers) streamEvents(ctx context.Context, buf []byte, rd logRead) ([]byte, uint64, error) {
	read := func() ([]byte, int, uint64, error) {
		page, err := h.logPage(ctx, rd)
		if err != nil {
			return nil, 0, 0, err
		}
		events, err := h.appendEvents(nil, page.Entries)
		return events, len(page.Entries), page.Next, err
	}
	var events []byte
	var next uint64
	var err error
	if rd.prefix != "" || rd.p.Scoped() {
		events, _, next, err = read()
	} else {
		cache := h.events
		if rd.p != nil {
			cache = h.seen
		}
		events, _, next, err = cache.get(ctx, rd.from, read)
		if err == nil && h.f != nil {
			// A page kept from before retention moved the first index past it
			// answers as a read would: compacted.
			if first := h.f.FirstIndex(); rd.from < first {
				err = &wire.CompactedError{From: rd.from, FirstIndex: first}
			}
		}
	}
	if err != nil {
		return buf, 0, err
	}
	return append(buf, events...), next, nil
}

// appendEvents appends the events of es to b (appendEvent). An entry whose
// stored record is unreadable, or whose values are not all JSON, goes out as
// readableEntry makes it, and is counted.
func (a *answers) appendEvents(b []byte, es []wire.LogEntry) ([]byte, error) {
	for _, e := range es {
		if e.Unreadable {
			a.unreadableRecord(e.Index, "")
		}
		var err error
		if b, err = appendEvent(b, e); err != nil {
			if b, err = appendEvent(b, a.readableEntry(e)); err != nil {
				return b, fmt.Errorf("index %d: %w", e.Index, err)
			}
		}
	}
	return b, nil
}

// writeFlush writes b and flushes it, within logStreamWriteTimeout.
func writeFlush(rc *http.ResponseController, w http.ResponseWriter, b []byte) error {
	_ = rc.SetWriteDeadline(time.Now().Add(logStreamWriteTimeout)) // unsupported: no bound
	if _, err := w.Write(b); err != nil {
		return err
	}
	if err := rc.Flush(); err != nil {
		return err
	}
	_ = rc.SetWriteDeadline(time.Time{})
	return nil
}

// appendEvent appends the event of e: "id: <index>", "event: entry" and
// "data: <e as JSON>" lines and a blank line. The JSON is one line.
func appendEvent(b []byte, e wire.LogEntry) ([]byte, error) {
	data, err := wire.MarshalJSON(e)
	if err != nil {
		return b, err
	}
	b = append(b, "id: "...)
	b = strconv.AppendUint(b, e.Index, 10)
	b = append(b, "\nevent: "+wire.LogEventEntry+"\ndata: "...)
	b = append(b, data...)
	return append(b, "\n\n"...), nil
}
