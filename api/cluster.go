package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"unicode/utf8"

	"github.com/txlog/txlog/api/wire"
)

// clusterHandlers serve the health checks and the cluster's membership:
// /healthz, /readyz and /v1/cluster/....
type clusterHandlers struct {
	*answers
	b Backend
}

// statusOK is the body of answers that carry nothing else.
var statusOK = map[string]string{"status": "ok"}

func (h *clusterHandlers) handleHealth(w http.ResponseWriter, r *http.Request) {
	h.writeJSON(w, http.StatusOK, statusOK)
}

func (h *clusterHandlers) handleReady(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), h.cfg.DefaultTimeout)
	defer cancel()
	if err := h.b.Ready(ctx); err != nil {
		if errors.Is(err, wire.ErrRemoved) || errors.Is(err, wire.ErrNodeNumberClash) {
			h.writeError(w, err) // 503 with its own code: it will not pass by waiting
			return
		}
		msg := err.Error()
		if e, ok := errors.AsType[*wire.Error](err); ok {
			msg = e.Message
		}
		h.writeError(w, &wire.Error{Code: wire.CodeNotReady, Message: msg})
		return
	}
	h.writeJSON(w, http.StatusOK, statusOK)
}

// handleCluster serves GET /v1/cluster.
func (h *clusterHandlers) handleCluster(w http.ResponseWriter, r *http.Request) {
	serveRead(h.answers, w, r, nil, noArg, func(ctx context.Context, _ struct{}, opts wire.ReadOptions) (wire.ClusterStatus, error) {
		st, err := h.b.Cluster(ctx, opts)
		if st.Members == nil {
			st.Members = []wire.Member{}
		}
		return st, err
	})
}

func (h *clusterHandlers) handleJoin(w http.ResponseWriter, r *http.Request) {
	if _, err := parseQuery(r); err != nil {
		h.writeError(w, err)
		return
	}
	req, ok := readDecoded(h.answers, w, r, decodeJoinBody)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.cfg.DefaultTimeout)
	defer cancel()
	res, err := h.b.Join(ctx, req)
	if err != nil {
		h.writeError(w, err)
		return
	}
	res.Status = "ok"
	h.writeJSON(w, http.StatusOK, res)
}

func (h *clusterHandlers) handleRemove(w http.ResponseWriter, r *http.Request) {
	if _, err := parseQuery(r); err != nil {
		h.writeError(w, err)
		return
	}
	id, err := pathVar(r, "id")
	if err != nil {
		h.writeError(w, err)
		return
	}
	if id == "" || !utf8.ValidString(id) {
		h.writeError(w, &wire.Error{Code: wire.CodeInvalidParam, Message: fmt.Sprintf("id %q: want a non-empty UTF-8 server ID", id)})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.cfg.DefaultTimeout)
	defer cancel()
	if err := h.b.Remove(ctx, id); err != nil {
		h.writeError(w, named(err, wire.MsgNotMember, id))
		return
	}
	h.writeJSON(w, http.StatusOK, statusOK)
}

func (h *clusterHandlers) handleTransferLeadership(w http.ResponseWriter, r *http.Request) {
	if _, err := parseQuery(r); err != nil {
		h.writeError(w, err)
		return
	}
	req, ok := readDecoded(h.answers, w, r, decodeTransferBody)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.cfg.DefaultTimeout)
	defer cancel()
	res, err := h.b.TransferLeadership(ctx, req)
	if err != nil {
		h.writeError(w, err)
		return
	}
	h.writeJSON(w, http.StatusOK, res)
}
