package api

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/txlog/txlog/api/wire"
)

// Backup makes the auth tests' world a BackupBackend (authz_test.go's
// allRoutes has GET /v1/backup).
func (w *world) Backup(_ context.Context, out io.Writer) error {
	_, err := io.WriteString(out, "backup bytes")
	return err
}

// backupFunc is a BackupBackend over the fake backend.
type backupFunc struct {
	*fakeBackend
	f func(w io.Writer) error
}

func (b backupFunc) Backup(_ context.Context, w io.Writer) error { return b.f(w) }

// TestBackupRoute: the stream as the backend writes it; an error before the
// first byte is an error answer; one after it aborts the connection (a
// client sees a torn body, never a clean end); a backend without Backup
// answers 404; a query parameter is refused.
func TestBackupRoute(t *testing.T) {
	serveB := func(f func(w io.Writer) error) *httptest.Server {
		var b Backend = &fakeBackend{}
		if f != nil {
			b = backupFunc{fakeBackend: &fakeBackend{}, f: f}
		}
		srv := httptest.NewServer(NewServer(Config{}, b))
		t.Cleanup(srv.Close)
		return srv
	}
	get := func(srv *httptest.Server, path string) (*http.Response, string, error) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			return nil, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp, string(b), err
	}

	srv := serveB(func(w io.Writer) error { _, err := io.WriteString(w, "whole"); return err })
	if resp, body, err := get(srv, "/v1/backup"); err != nil || resp.StatusCode != 200 || body != "whole" || resp.Header.Get("Content-Type") != "application/octet-stream" {
		t.Fatalf("GET /v1/backup = %v %q %v", resp, body, err)
	}
	if resp, body, _ := get(srv, "/v1/backup?x=1"); resp.StatusCode != 400 || !strings.Contains(body, wire.CodeInvalidParam) {
		t.Fatalf("GET /v1/backup?x=1 = %d %s, want 400", resp.StatusCode, body)
	}

	srv = serveB(func(io.Writer) error { return errors.New("disk on fire") })
	if resp, body, _ := get(srv, "/v1/backup"); resp.StatusCode != 500 || !strings.Contains(body, `"code":"internal"`) {
		t.Fatalf("failed before the first byte: %d %s, want 500", resp.StatusCode, body)
	}

	srv = serveB(func(w io.Writer) error {
		w.Write(make([]byte, 1<<16))
		return errors.New("disk on fire")
	})
	if _, _, err := get(srv, "/v1/backup"); err == nil {
		t.Fatal("failed after the first bytes: the body ended cleanly, want a torn stream")
	}

	srv = serveB(nil)
	if resp, _, _ := get(srv, "/v1/backup"); resp.StatusCode != 404 {
		t.Fatalf("without a BackupBackend: %d, want 404", resp.StatusCode)
	}
}

// TestBackupRouteScoped: an admin credential with key prefixes may not take
// a backup, which holds every key (403), and the backend is not asked.
func TestBackupRouteScoped(t *testing.T) {
	var audits []wire.AuditRecord
	srv := NewServer(worldConfig(true, &audits), newWorld())
	rec := ask(t, srv, "GET", "/v1/backup", "", "admal")
	if e := errorOf(t, rec); rec.Code != 403 || e.Code != wire.CodeForbidden || e.Message != `GET /v1/backup holds every key; credential "al-admin" has key prefixes` {
		t.Fatalf("GET /v1/backup as a scoped admin = %d %s, want 403", rec.Code, rec.Body)
	}
	if strings.Contains(rec.Body.String(), "backup bytes") {
		t.Fatal("the scoped admin got the backup")
	}
	if rec := ask(t, srv, "GET", "/v1/backup", "", "admin"); rec.Code != 200 || rec.Body.String() != "backup bytes" {
		t.Fatalf("GET /v1/backup as admin = %d %s", rec.Code, rec.Body)
	}
}
