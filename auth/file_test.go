package auth

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	tokens "github.com/txlog/txlog/auth/token"
	"github.com/txlog/txlog/internal/certgen"
)

// Tokens of the tests, and their lines.
var (
	tokRead  = "txlog_read-token"
	tokWrite = "txlog_write-token"
	tokAdmin = "txlog_admin-token"
)

func goodFile() string {
	return strings.Join([]string{
		"# the test credentials",
		"",
		Line(HashToken(tokRead), RoleRead, "reader", []string{"orders/", "jobs/"}),
		"   " + Line(HashToken(tokWrite), RoleWrite, "writer", nil) + "\r",
		"\t# indented comment",
		Line(HashToken(tokAdmin), RoleAdmin, "admin@ops", nil),
		"cert:client-a write app-a prefix=a/",
		"cert:ops admin ops",
	}, "\n") + "\n"
}

// writeFile replaces path's contents through a rename, as an editor or a
// secret mount does.
func writeFile(t *testing.T, path, data string) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func openFile(t *testing.T, data string, cfg Config) (*File, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "auth")
	writeFile(t, path, data)
	cfg.File = path
	f, err := Open(cfg)
	if err != nil {
		t.Fatalf("Open() = %v", err)
	}
	t.Cleanup(func() { f.Close() })
	return f, path
}

func TestParseGood(t *testing.T) {
	c, err := parse([]byte(goodFile()))
	if err != nil {
		t.Fatalf("parse() = %v", err)
	}
	if len(c.tokens) != 3 || len(c.certs) != 2 {
		t.Fatalf("parse() = %d tokens, %d certs; want 3, 2", len(c.tokens), len(c.certs))
	}
	want := Principal{Name: "reader", Role: RoleRead, Prefixes: []string{"orders/", "jobs/"}, Via: "token"}
	if !reflect.DeepEqual(c.tokens[0].p, want) {
		t.Fatalf("first token = %+v, want %+v", c.tokens[0].p, want)
	}
	want = Principal{Name: "app-a", Role: RoleWrite, Prefixes: []string{"a/"}, Via: "cert"}
	if !reflect.DeepEqual(c.certs["client-a"], want) {
		t.Fatalf("cert:client-a = %+v, want %+v", c.certs["client-a"], want)
	}
	if c, err := parse(nil); err != nil || c.count() != 0 {
		t.Fatalf("parse(empty) = %v, %v; want no credentials", c, err)
	}
}

// TestParseBad: every kind of bad line is refused with its line number and
// what is wrong, and a file with several bad lines reports each.
func TestParseBad(t *testing.T) {
	h := HashToken("x")
	good := Line(h, RoleRead, "ok", nil)
	tests := []struct {
		name string
		line string
		want string // in the error
	}{
		{"too few fields", "sha256:" + h + " read", "got 2 fields"},
		{"one field", "cert:x", "got 1 fields"},
		{"unknown kind", "md5:abc read n", "want sha256:"},
		{"bare hash", h + " read n", "want sha256:"},
		{"short hash", "sha256:abc read n", "has 3 characters"},
		{"long hash", "sha256:" + h + "0 read n", "has 65 characters"},
		{"uppercase hash", "sha256:" + strings.ToUpper(h) + " read n", "want 64 lowercase hex"},
		{"non-hex hash", "sha256:" + strings.Repeat("g", 64) + " read n", "want 64 lowercase hex"},
		{"empty cn", "cert: read n", "empty CN"},
		{"control in cn", "cert:a\x01b read n", "control"},
		{"invalid utf-8 in cn", "cert:a\xffb read n", "control or invalid"},
		{"unknown role", "cert:c root n", `role "root"`},
		{"role case", "cert:c Admin n", `role "Admin"`},
		{"name with #", "cert:c read a#b", "without '#'"},
		{"name not ascii", "cert:c read näme", "printable ASCII"},
		{"name too long", "cert:c read " + strings.Repeat("n", maxNameBytes+1), "at most 128"},
		{"unknown field", "cert:c read n scope=a/", `unknown field "scope=a/"`},
		{"trailing comment", "cert:c read n # note", `unknown field "#"`},
		{"empty prefix", "cert:c read n prefix=", "empty prefix"},
		{"reserved prefix", "cert:c read n prefix=_txlog/", "reserved"},
		{"under reserved prefix", "cert:c read n prefix=_txlog/audit/", "reserved"},
		{"prefix twice", "cert:c read n prefix=a/ prefix=a/", `prefix "a/" twice`},
		{"duplicate hash", "sha256:" + h + " write other", "token hash of line 1 again"},
		{"duplicate name", "cert:c write ok", `name "ok" already names line 1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse([]byte(good + "\n" + tt.line + "\n"))
			var le *LineError
			if !errors.As(err, &le) || le.Line != 2 || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("parse(%q) = %v; want a LineError of line 2 saying %q", tt.line, err, tt.want)
			}
		})
	}
	t.Run("every bad line", func(t *testing.T) {
		_, err := parse([]byte("cert:c root n\n# fine\ncert:d read m\ncert:e read m\nbad\n"))
		var lines []int
		for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
			lines = append(lines, e.(*LineError).Line)
		}
		if !reflect.DeepEqual(lines, []int{1, 4, 5}) {
			t.Fatalf("bad lines reported = %v (%v), want [1 4 5]", lines, err)
		}
	})
	t.Run("duplicate cn", func(t *testing.T) {
		_, err := parse([]byte("cert:c read a\ncert:c write b\n"))
		if err == nil || !strings.Contains(err.Error(), "cert:c of line 1 again") {
			t.Fatalf("parse() = %v, want the second cert:c refused", err)
		}
	})
}

func req(method, authz string) *http.Request {
	r := httptest.NewRequest(method, "/v1/kv/x", nil)
	if authz != "" {
		r.Header.Set("Authorization", authz)
	}
	return r
}

func basic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

// withCert returns r as if it came over TLS with a verified client
// certificate named cn.
func withCert(t *testing.T, r *http.Request, cn string, verified bool) *http.Request {
	t.Helper()
	ca, err := certgen.NewCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Issue(certgen.Options{CommonName: cn, Client: true})
	if err != nil {
		t.Fatal(err)
	}
	r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf.Cert}}
	if verified {
		r.TLS.VerifiedChains = [][]*x509.Certificate{{leaf.Cert, ca.Cert}}
	}
	return r
}

func TestAuthenticate(t *testing.T) {
	f, _ := openFile(t, goodFile(), Config{})
	reader := &Principal{Name: "reader", Role: RoleRead, Prefixes: []string{"orders/", "jobs/"}, Via: "token"}
	writer := &Principal{Name: "writer", Role: RoleWrite, Via: "token"}
	appA := &Principal{Name: "app-a", Role: RoleWrite, Prefixes: []string{"a/"}, Via: "cert"}
	tests := []struct {
		name string
		r    *http.Request
		want *Principal
		err  string // in the error, when want is nil
	}{
		{"bearer", req("POST", "Bearer "+tokWrite), writer, ""},
		{"bearer scheme in lower case", req("GET", "bearer "+tokRead), reader, ""},
		{"bearer scoped", req("GET", "Bearer "+tokRead), reader, ""},
		{"basic on GET", req("GET", basic("anyone", tokRead)), reader, ""},
		{"basic on HEAD", req("HEAD", basic("", tokWrite)), writer, ""},
		{"basic token with colon", req("GET", basic("u", tokRead+":")), nil, "unknown token"},
		{"no credential", req("GET", ""), nil, "no credential"},
		{"unknown token", req("GET", "Bearer txlog_nope"), nil, "unknown token"},
		{"token off by one character", req("GET", "Bearer "+tokRead[:len(tokRead)-1]+"X"), nil, "unknown token"},
		{"hash as token", req("GET", "Bearer "+HashToken(tokAdmin)), nil, "unknown token"},
		{"basic on POST", req("POST", basic("u", tokAdmin)), nil, "Basic credentials only for GET"},
		{"basic on PUT", req("PUT", basic("u", tokAdmin)), nil, "Basic credentials only for GET"},
		{"basic on DELETE", req("DELETE", basic("u", tokAdmin)), nil, "Basic credentials only for GET"},
		{"basic on OPTIONS", req("OPTIONS", basic("u", tokAdmin)), nil, "Basic credentials only for GET"},
		{"basic not base64", req("GET", "Basic !!!"), nil, "not base64"},
		{"basic without colon", req("GET", "Basic "+base64.StdEncoding.EncodeToString([]byte(tokRead))), nil, "without ':'"},
		{"basic empty password", req("GET", basic("u", "")), nil, "want one token"},
		{"empty bearer", req("GET", "Bearer "), nil, "want one token"},
		{"bearer alone", req("GET", "Bearer"), nil, "want one token"},
		{"two tokens", req("GET", "Bearer "+tokRead+" "+tokWrite), nil, "want one token"},
		{"unknown scheme", req("GET", "Token "+tokRead), nil, "want Bearer <token>"},
		{"token without scheme", req("GET", tokRead), nil, "want Bearer"},
		{"over-long header", req("GET", "Bearer "+strings.Repeat("a", MaxAuthorizationBytes)), nil, "want at most 1024"},
		{"verified cert", withCert(t, req("POST", ""), "client-a", true), appA, ""},
		{"unknown cert", withCert(t, req("GET", ""), "client-b", true), nil, `certificate CN "client-b" not in the auth file`},
		{"unverified cert", withCert(t, req("GET", ""), "client-a", false), nil, "no credential"},
		{"token wins over cert", withCert(t, req("GET", "Bearer "+tokRead), "client-a", true), reader, ""},
		{"unknown token with a good cert", withCert(t, req("GET", "Bearer nope"), "client-a", true), nil, "unknown token"},
		{"basic on POST with a good cert", withCert(t, req("POST", basic("u", tokRead)), "client-a", true), nil, "Basic credentials only for GET"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := f.Authenticate(tt.r)
			if tt.want != nil {
				if err != nil || !reflect.DeepEqual(p, tt.want) {
					t.Fatalf("Authenticate() = %+v, %v; want %+v", p, err, tt.want)
				}
				return
			}
			if p != nil || !errors.Is(err, ErrUnauthenticated) || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("Authenticate() = %+v, %v; want an unauthenticated error saying %q", p, err, tt.err)
			}
			if strings.Contains(err.Error(), tokAdmin) || strings.Contains(err.Error(), tokRead) {
				t.Fatalf("error %q repeats a token", err)
			}
		})
	}
	t.Run("two Authorization headers", func(t *testing.T) {
		r := req("GET", "Bearer "+tokRead)
		r.Header.Add("Authorization", "Bearer "+tokAdmin)
		if p, err := f.Authenticate(r); !errors.Is(err, ErrUnauthenticated) {
			t.Fatalf("Authenticate() = %+v, %v; want refused", p, err)
		}
	})
	t.Run("principal is the caller's", func(t *testing.T) {
		p, _ := f.Authenticate(req("GET", "Bearer "+tokRead))
		p.Prefixes[0] = "everything"
		p.Role = RoleAdmin
		again, _ := f.Authenticate(req("GET", "Bearer "+tokRead))
		if !reflect.DeepEqual(again, reader) {
			t.Fatalf("after changing one answer, Authenticate() = %+v, want %+v", again, reader)
		}
	})
}

// TestTokenLookupEveryPosition covers the constant-time lookup: the match
// is found wherever it is among many lines (the loop never stops early,
// and the select keeps the match past it), and a miss is a miss.
func TestTokenLookupEveryPosition(t *testing.T) {
	const n = 50
	var b strings.Builder
	for i := range n {
		fmt.Fprintln(&b, Line(HashToken(fmt.Sprint("tok", i)), RoleRead, fmt.Sprint("n", i), nil))
	}
	c, err := parse([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 1, n / 2, n - 2, n - 1} {
		p, ok := c.token(fmt.Sprint("tok", i))
		if !ok || p.Name != fmt.Sprint("n", i) {
			t.Fatalf("token(tok%d) = %+v, %v; want n%d", i, p, ok, i)
		}
	}
	if p, ok := c.token("tok50"); ok {
		t.Fatalf("token(tok50) = %+v, want none", p)
	}
	if p, ok := (&creds{}).token("tok0"); ok {
		t.Fatalf("token() on no lines = %+v, want none", p)
	}
}

// TestCertOverTLS: a real mutual-TLS handshake; the CN of the certificate
// the server verified names the principal, and a certificate of a CN the
// file does not name is refused.
func TestCertOverTLS(t *testing.T) {
	f, _ := openFile(t, goodFile(), Config{})
	ca, err := certgen.NewCA("clients")
	if err != nil {
		t.Fatal(err)
	}
	srvLeaf, err := ca.Issue(certgen.Options{CommonName: "node", Hosts: []string{"127.0.0.1"}, Server: true})
	if err != nil {
		t.Fatal(err)
	}
	srvCert, err := srvLeaf.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := f.Authenticate(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, "%s %s %s", p.Name, p.Role, p.Via)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{srvCert}, ClientCAs: ca.Pool(), ClientAuth: tls.VerifyClientCertIfGiven}
	srv.StartTLS()
	defer srv.Close()
	get := func(cn string) (int, string) {
		cfg := &tls.Config{RootCAs: ca.Pool()}
		if cn != "" {
			leaf, err := ca.Issue(certgen.Options{CommonName: cn, Client: true})
			if err != nil {
				t.Fatal(err)
			}
			c, err := leaf.TLSCertificate()
			if err != nil {
				t.Fatal(err)
			}
			cfg.Certificates = []tls.Certificate{c}
		}
		cl := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
		defer cl.CloseIdleConnections()
		resp, err := cl.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(body)
	}
	if code, body := get("client-a"); code != 200 || body != "app-a write cert" {
		t.Fatalf("GET with cert client-a = %d %q, want 200 app-a write cert", code, body)
	}
	if code, body := get("mallory"); code != 401 || !strings.Contains(body, `certificate CN "mallory" not in the auth file`) {
		t.Fatalf("GET with cert mallory = %d %q, want 401 naming the CN", code, body)
	}
	if code, body := get(""); code != 401 || !strings.Contains(body, "no credential") {
		t.Fatalf("GET without cert = %d %q, want 401 no credential", code, body)
	}
}

func counter(t *testing.T, reg *prometheus.Registry, name, label string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label == "" || labelIs(m, label) {
				if m.GetCounter() != nil {
					return m.GetCounter().GetValue()
				}
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}

func labelIs(m *dto.Metric, v string) bool {
	for _, l := range m.GetLabel() {
		if l.GetValue() == v {
			return true
		}
	}
	return false
}

// TestReloadKeepsOld: a bad file on Reload is refused, counted and
// logged; the credentials read before still apply; a good file then
// applies.
func TestReloadKeepsOld(t *testing.T) {
	reg := prometheus.NewRegistry()
	var logs syncBuffer
	f, path := openFile(t, goodFile(), Config{Metrics: reg, Logger: slog.New(slog.NewTextHandler(&logs, nil)), Interval: time.Hour})
	gen := f.Generation()
	writeFile(t, path, goodFile()+"cert:x superuser x\n")
	if err := f.Reload(); err == nil || !strings.Contains(err.Error(), "line 9") {
		t.Fatalf("Reload() of a bad file = %v, want line 9 refused", err)
	}
	if g := f.Generation(); g != gen {
		t.Fatalf("a refused reload moved Generation() from %d to %d", gen, g)
	}
	if _, err := f.Authenticate(req("GET", "Bearer "+tokRead)); err != nil {
		t.Fatalf("after a refused reload, Authenticate() = %v; want the old credentials", err)
	}
	if got := counter(t, reg, "txlog_auth_reloads_total", "error"); got != 1 {
		t.Fatalf("txlog_auth_reloads_total{result=error} = %v, want 1", got)
	}
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "auth file refused") {
		t.Fatalf("log = %q, want the refusal at error", logs.String())
	}
	writeFile(t, path, Line(HashToken("new"), RoleAdmin, "new", nil)+"\n")
	if err := f.Reload(); err != nil {
		t.Fatalf("Reload() = %v", err)
	}
	if g := f.Generation(); g == gen {
		t.Fatalf("a reload that applied a file left Generation() at %d", g)
	}
	if _, err := f.Authenticate(req("GET", "Bearer "+tokRead)); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("a token no longer in the file: Authenticate() = %v, want refused", err)
	}
	if p, err := f.Authenticate(req("GET", "Bearer new")); err != nil || p.Name != "new" {
		t.Fatalf("a token added: Authenticate() = %+v, %v", p, err)
	}
	if ok, n := counter(t, reg, "txlog_auth_reloads_total", "ok"), counter(t, reg, "txlog_auth_credentials", ""); ok != 1 || n != 1 {
		t.Fatalf("reloads ok = %v, credentials = %v; want 1, 1", ok, n)
	}
	os.Remove(path)
	if err := f.Reload(); err == nil {
		t.Fatal("Reload() of a removed file = nil, want an error")
	}
	if _, err := f.Authenticate(req("GET", "Bearer new")); err != nil {
		t.Fatalf("after the file was removed, Authenticate() = %v; want the old credentials", err)
	}
}

// TestRevokedByEdit: a token removed from the file is refused soon after
// the file changes, with no signal (the watcher's stat); the others keep
// working throughout. A bad edit in between changes nothing.
func TestRevokedByEdit(t *testing.T) {
	reg := prometheus.NewRegistry()
	f, path := openFile(t, goodFile(), Config{Metrics: reg})
	ok := func(tok string) bool {
		_, err := f.Authenticate(req("GET", "Bearer "+tok))
		return err == nil
	}
	wait := func(what string, cond func() bool) time.Duration {
		t.Helper()
		start := time.Now()
		for !cond() {
			if time.Since(start) > 10*time.Second {
				t.Fatalf("%s: not after %v", what, time.Since(start))
			}
			if !ok(tokWrite) {
				t.Fatalf("%s: the writer's token, never revoked, was refused", what)
			}
			time.Sleep(5 * time.Millisecond) // the poll's pace, not a wait for an event
		}
		return time.Since(start)
	}
	// A bad edit: refused, the credentials stay.
	writeFile(t, path, strings.Replace(goodFile(), "prefix=a/", "prefix=_txlog/x", 1))
	wait("bad edit counted", func() bool { return counter(t, reg, "txlog_auth_reloads_total", "error") == 1 })
	if !ok(tokRead) || !ok(tokAdmin) {
		t.Fatal("a bad edit revoked tokens")
	}
	// Revoke the reader by an edit in place (same inode).
	revoked := strings.Replace(goodFile(), Line(HashToken(tokRead), RoleRead, "reader", []string{"orders/", "jobs/"}), "# reader revoked", 1)
	if err := os.WriteFile(path, []byte(revoked), 0o600); err != nil {
		t.Fatal(err)
	}
	took := wait("reader revoked", func() bool { return !ok(tokRead) })
	t.Logf("revoked token refused %v after the edit (Interval %v)", took, DefaultInterval)
	// Revoke the admin by a rename over the file.
	writeFile(t, path, strings.Replace(revoked, Line(HashToken(tokAdmin), RoleAdmin, "admin@ops", nil), "", 1))
	took = wait("admin revoked", func() bool { return !ok(tokAdmin) })
	t.Logf("revoked token refused %v after the rename", took)
}

func TestOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad")
	writeFile(t, bad, "cert:a read n\ncert:b read n\n")
	open := filepath.Join(dir, "open")
	writeFile(t, open, goodFile())
	if err := os.Chmod(open, 0o666); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		file string
		want string
	}{
		{"no file named", "", "Config.File is required"},
		{"missing", filepath.Join(dir, "missing"), "no such file"},
		{"directory", dir, "not a regular file"},
		{"bad line", bad, `line 2: name "n" already names line 1`},
		{"world-writable", open, "lets anyone write it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Open(Config{File: tt.file})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				f.Close()
				t.Fatalf("Open(%s) = %v, want an error saying %q", tt.file, err, tt.want)
			}
		})
	}
}

func TestNewToken(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		tok, err := NewToken()
		if err != nil {
			t.Fatal(err)
		}
		raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(tok, tokens.Prefix))
		if !strings.HasPrefix(tok, tokens.Prefix) || err != nil || len(raw) != 32 || len(tok) != 49 {
			t.Fatalf("NewToken() = %q; want txlog_ and 32 bytes in base64url", tok)
		}
		if seen[tok] {
			t.Fatalf("NewToken() = %q twice", tok)
		}
		seen[tok] = true
	}
	if got := HashToken("abc"); got != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Fatalf("HashToken(abc) = %s, want the SHA-256 test vector", got)
	}
	if got := Line("00", RoleWrite, "n", []string{"a/", "b/"}); got != "sha256:00 write n prefix=a/ prefix=b/" {
		t.Fatalf("Line() = %q", got)
	}
}

func TestCloseTwice(t *testing.T) {
	f, _ := openFile(t, goodFile(), Config{})
	if err := errors.Join(f.Close(), f.Close(), (*File)(nil).Close()); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Authenticate(req("GET", "Bearer "+tokRead)); err != nil {
		t.Fatalf("after Close, Authenticate() = %v; want the last credentials", err)
	}
}

// syncBuffer is a log's destination the watcher may write from its
// goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestHalfWrittenNotTaken: a file seen changed is read only once a later
// stat finds it the same, so a file caught part-written in place (cut at a
// line's end: it parses) does not revoke the lines still to come.
func TestHalfWrittenNotTaken(t *testing.T) {
	f, path := openFile(t, goodFile(), Config{Interval: time.Hour}) // ticks by hand
	write := func(data string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ok := func(tok string) bool {
		_, err := f.Authenticate(req("GET", "Bearer "+tok))
		return err == nil
	}
	lines := strings.SplitAfter(goodFile(), "\n")
	write(strings.Join(lines[:3], "")) // only the reader's line so far
	f.tick()
	if !ok(tokWrite) || !ok(tokAdmin) {
		t.Fatal("a file caught half-written was taken: the lines not yet written are refused")
	}
	write(strings.Join(lines[:6], "")) // the writer's and admin's too
	f.tick()
	if !ok(tokWrite) || !ok(tokAdmin) {
		t.Fatal("a file still changing was taken")
	}
	write(strings.Join(lines[:6], "") + "# done\n")
	f.tick()
	f.tick() // the same as the last: read
	if !ok(tokRead) || !ok(tokWrite) || !ok(tokAdmin) {
		t.Fatal("the finished file's tokens are refused")
	}
	if _, err := f.Authenticate(withCert(t, req("GET", ""), "ops", true)); err == nil {
		t.Fatal("cert:ops, no longer in the finished file, still authenticates")
	}
}
