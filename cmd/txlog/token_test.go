package main

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/txlog/txlog/auth"
)

// runToken runs `txlog token args...`.
func runToken(t *testing.T, args ...string) result {
	t.Helper()
	var stdout, stderr syncBuffer
	c := &cli{stdout: &stdout, stderr: &stderr, lookupEnv: func(string) (string, bool) { return "", false }}
	err := c.token(context.Background(), args)
	code := report(err, &stderr)
	return result{stdout.String(), stderr.String(), code}
}

// TestTokenCreate: the printed line, as an auth file, authenticates the
// printed token with the role, name and prefixes asked for.
func TestTokenCreate(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want auth.Principal
	}{
		{"write scoped", []string{"--role", "write", "--name", "billing", "--prefix", "orders/", "--prefix=jobs/"},
			auth.Principal{Name: "billing", Role: auth.RoleWrite, Prefixes: []string{"orders/", "jobs/"}, Via: "token"}},
		{"admin", []string{"--role=admin", "--name", "ops"}, auth.Principal{Name: "ops", Role: auth.RoleAdmin, Via: "token"}},
		{"read default name", []string{"--role", "read"}, auth.Principal{Role: auth.RoleRead, Via: "token"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runToken(t, append([]string{"create"}, tt.args...)...)
			lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
			if r.code != 0 || len(lines) != 2 {
				t.Fatalf("token create: exit %d, stdout %q, stderr %s; want two lines", r.code, r.stdout, r.stderr)
			}
			tok, line := lines[0], lines[1]
			if !strings.Contains(line, auth.HashToken(tok)) || strings.Contains(line, tok) {
				t.Fatalf("line %q: want the token's hash, not the token", line)
			}
			path := filepath.Join(t.TempDir(), "auth")
			if err := os.WriteFile(path, []byte(line+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := auth.Open(auth.Config{File: path})
			if err != nil {
				t.Fatalf("auth.Open(the printed line) = %v", err)
			}
			defer f.Close()
			req := httptest.NewRequest("POST", "/v1/tx", nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			p, err := f.Authenticate(req)
			if err != nil {
				t.Fatalf("Authenticate(the printed token) = %v", err)
			}
			want := tt.want
			if want.Name == "" {
				want.Name = "read-" + auth.HashToken(tok)[:8]
			}
			if !reflect.DeepEqual(*p, want) {
				t.Fatalf("Authenticate() = %+v, want %+v", *p, want)
			}
			req.Header.Set("Authorization", "Bearer "+tok+"x")
			if _, err := f.Authenticate(req); !errors.Is(err, auth.ErrUnauthenticated) {
				t.Fatalf("Authenticate(another token) = %v, want refused", err)
			}
		})
	}
	if a, b := runToken(t, "create", "--role", "read"), runToken(t, "create", "--role", "read"); a.stdout == b.stdout {
		t.Fatalf("two token create printed the same %q", a.stdout)
	}
}

func TestTokenCreateBad(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no subcommand", nil, "want the subcommand create"},
		{"unknown subcommand", []string{"delete"}, "want the subcommand create"},
		{"no role", []string{"create"}, `role ""`},
		{"unknown role", []string{"create", "--role", "root"}, `role "root"`},
		{"reserved prefix", []string{"create", "--role", "read", "--prefix", "_txlog/audit/"}, "reserved"},
		{"empty prefix", []string{"create", "--role", "read", "--prefix", ""}, "empty prefix"},
		{"prefix with a blank", []string{"create", "--role", "read", "--prefix", "a b/"}, "no blanks"},
		{"name with a blank", []string{"create", "--role", "read", "--name", "a b"}, "no blanks"},
		{"name with #", []string{"create", "--role", "read", "--name", "a#b"}, "without '#'"},
		{"argument", []string{"create", "--role", "read", "extra"}, "takes no arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runToken(t, tt.args...)
			if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, tt.want) {
				t.Fatalf("token %v: exit %d, stdout %q, stderr %q; want 2, nothing printed, %q", tt.args, r.code, r.stdout, r.stderr, tt.want)
			}
		})
	}
}
