package api

import (
	"context"
	"net/http"

	"github.com/txlog/txlog/api/wire"
)

// Streams serves propose streams, GET /v1/internal/stream (wire.StreamPath):
// node/peer's StreamServer. The Server checks the request's query, then hands
// it over with streamAnswer, which runs each of the stream's requests as
// POST /v1/internal/propose runs its body.
type Streams interface {
	// ServeStream upgrades r's connection to a propose stream and serves it,
	// each request answered with answer, its frames at most limit bytes
	// (Config.MaxInternalBodyBytes). Before the upgrade it returns the error
	// to answer r with instead.
	ServeStream(w http.ResponseWriter, r *http.Request, limit int64, answer func(ctx context.Context, rawQuery string, frames []byte) (status int, body []byte)) error
	// CloseStreams ends the streams: they stop reading requests, and the
	// requests in flight finish and are answered, until ctx ends; then what is
	// left is cancelled. Streams that try to open later are refused.
	CloseStreams(ctx context.Context) error
}

// handleStream serves GET /v1/internal/stream through Config.Streams; without
// them the path is not found, and a proposing node falls back to
// POST /v1/internal/propose.
func (h *txHandlers) handleStream(w http.ResponseWriter, r *http.Request) {
	if _, err := parseQuery(r); err != nil {
		h.writeError(w, err)
		return
	}
	if h.cfg.Streams == nil {
		h.handleNotFound(w, r)
		return
	}
	if err := h.cfg.Streams.ServeStream(w, r, h.cfg.MaxInternalBodyBytes, h.streamAnswer); err != nil {
		h.writeError(w, err)
	}
}

// streamAnswer runs one request of a propose stream and returns the status and
// body of its answer: for 200 the results in binary (wire/streamresults.go),
// otherwise the JSON error object.
func (h *txHandlers) streamAnswer(ctx context.Context, rawQuery string, frames []byte) (int, []byte) {
	status, body := http.StatusOK, []byte(nil)
	q, err := parseRawQuery(rawQuery, proposeParams...)
	var results []wire.TxResult
	if err == nil {
		results, err = h.propose(ctx, q, frames)
	}
	if err == nil {
		body = wire.AppendResults(nil, results)
	} else {
		status, body = h.errorAnswer(err)
	}
	return status, body
}

// CloseStreams ends the propose streams of Config.Streams (see
// Streams.CloseStreams); nil without. Call it after http.Server.Shutdown,
// which does not know about upgraded connections.
func (s *Server) CloseStreams(ctx context.Context) error {
	if s.cfg.Streams == nil {
		return nil
	}
	return s.cfg.Streams.CloseStreams(ctx)
}
