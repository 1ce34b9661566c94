package api

import (
	"context"
	"io"
	"net/http"

	"github.com/txlog/txlog/auth"
)

// BackupBackend is what GET /v1/backup needs of a Backend that serves it:
// a backup of the node's whole state (store/backup.go's format), written to
// w while writes go on. Backup writes nothing to w before it knows it can
// take the backup, so that an error it returns without having written
// answers as an error. Without it the route answers 404.
type BackupBackend interface {
	Backup(ctx context.Context, w io.Writer) error
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// handleBackup streams a backup of this node's state: GET /v1/backup, for
// the admin role, unscoped. A backup that fails once its first bytes are out
// aborts the connection, so that the client sees a torn stream (its
// checksum fails too) and never a clean end.
func (s *Server) handleBackup(w http.ResponseWriter, r *http.Request) {
	bb, ok := s.cluster.b.(BackupBackend)
	if !ok {
		s.handleNotFound(w, r)
		return
	}
	if _, err := parseQuery(r); err != nil {
		s.writeError(w, err)
		return
	}
	if p := auth.FromContext(r.Context()); p.Scoped() {
		s.writeError(w, everyScopeRefused("GET /v1/backup holds every key", p))
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Cache-Control", "no-store")
	cw := &countingWriter{w: w}
	if err := bb.Backup(r.Context(), cw); err != nil {
		if cw.n == 0 {
			w.Header().Set("Content-Type", "application/json")
			s.writeError(w, err)
			return
		}
		s.log.Warn("backup stream broken", "bytes", cw.n, "err", err)
		panic(http.ErrAbortHandler)
	}
}
