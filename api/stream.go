package api

import (
	"context"
	"net/http"

	"github.com/txlog/txlog/api/wire"
)

// ProposeAnswer runs one request of a propose stream (node/peer's
// StreamServer, on the peer link) as POST /v1/internal/propose runs its body,
// and returns the status and body of its answer: for 200 the results in
// binary (wire/streamresults.go), otherwise the JSON error object. ctx
// reaches Backend.Propose.
func (s *Server) ProposeAnswer(ctx context.Context, rawQuery string, frames []byte) (int, []byte) {
	h := s.tx
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
