package main

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
)

// silentURL returns the URL of a listener that accepts connections (the
// kernel completes the handshake) and never answers, as a stopped process or
// a black-holed address does.
func silentURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return "http://" + ln.Addr().String()
}

// TestTimeoutAgainstDeadAddress: every command that talks to nodes comes
// back within its --timeout plus a second against an address that refuses
// connections and against one that accepts them and never answers, exits
// 1 (never 0, never a usage error) and says why in one line.
func TestTimeoutAgainstDeadAddress(t *testing.T) {
	const timeout = time.Second
	commands := [][]string{
		{"get", "k"},
		{"get", "--consistency", "stale", "k"},
		{"submit", "k", "v"},
		{"status"},
		{"log"},
		{"log", "--follow"},
		{"watch", "k"},
		{"watch", "--from", "1", "--prefix", "p/"},
		{"lease", "get", "l"},
		{"lease", "list"},
		{"lease", "acquire", "l"},
		{"lease", "watch", "l"},
		{"consumers"},
		{"exclusive", "--lease", "l", "--", "true"},
		{"member", "list"},
		{"member", "remove", "n9"},
		{"leader", "transfer"},
		{"endpoint", "health"},
	}
	for _, addr := range []struct {
		name string
		url  func(*testing.T) string
	}{{"closed port", deadURL}, {"silent listener", silentURL}} {
		for _, args := range commands {
			t.Run(addr.name+"/"+strings.Join(args, " "), func(t *testing.T) {
				t.Parallel()
				url := addr.url(t)
				args := append(args[:len(args):len(args)], "--targets", url, "--timeout", timeout.String())
				if args[0] == "exclusive" {
					// Flags go before "--" there.
					args = append([]string{"exclusive", "--targets", url, "--timeout", timeout.String()}, args[1:len(args)-4]...)
				}
				start := time.Now()
				r := runCLI(t, testCtx(t), nil, args...)
				took := time.Since(start)
				if took > timeout+time.Second {
					t.Errorf("took %v, want at most --timeout %v plus a second", took.Round(time.Millisecond), timeout)
				}
				if r.code != exitFailed && !(args[0] == "submit" && r.code == exitUnknown) {
					t.Errorf("exit %d, want 1; stderr:\n%s", r.code, r.stderr)
				}
				if strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "txlog: ") {
					t.Errorf("stderr %q: want one line saying why", r.stderr)
				}
			})
		}
	}
}

// TestTriesLiveNodesFirst: with two of three targets not answering, a stale
// read comes back from the third within the --timeout (each silent node gets
// a share of it), and the next command, told by the file of endpoints that
// got no answer, asks the live node first and answers at once.
func TestTriesLiveNodesFirst(t *testing.T) {
	live := serve(t, &fakeBackend{GetFunc: func(ctx context.Context, key string, opts wire.ReadOptions) (wire.KV, error) {
		return wire.KV{Key: key, Value: json.RawMessage(`1`), Version: 1, Index: 1}, nil
	}})
	cache := t.TempDir()
	env := map[string]string{
		targetsEnv:       strings.Join([]string{silentURL(t), silentURL(t), live}, ","),
		"XDG_CACHE_HOME": cache,
	}
	start := time.Now()
	r := runCLI(t, testCtx(t), env, "get", "--consistency", "stale", "--timeout", "3s", "k")
	first := time.Since(start)
	if r.code != 0 {
		t.Fatalf("first get: exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if first > 3*time.Second {
		t.Fatalf("first get took %v, want within --timeout 3s", first)
	}
	b, err := os.ReadFile(filepath.Join(cache, "txlog", "down-endpoints"))
	if err != nil || strings.Count(string(b), "\n") != 2 {
		t.Fatalf("down-endpoints = %q, %v; want the two silent targets", b, err)
	}
	start = time.Now()
	r = runCLI(t, testCtx(t), env, "get", "--consistency", "stale", "--timeout", "3s", "k")
	second := time.Since(start)
	if r.code != 0 || second > 500*time.Millisecond {
		t.Fatalf("second get: exit %d after %v, want the live node asked first; stderr:\n%s", r.code, second, r.stderr)
	}
	t.Logf("first get %v, second %v", first.Round(time.Millisecond), second.Round(time.Millisecond))
}

// TestBenchFailsOnErrors: a bench whose requests all failed exits 1.
func TestBenchFailsOnErrors(t *testing.T) {
	r := runCLI(t, testCtx(t), nil, "bench", "--targets", deadURL(t), "--duration", "300ms", "--clients", "2", "--progress", "0", "--json")
	if r.code != exitFailed || !strings.Contains(r.stderr, "failed") {
		t.Fatalf("exit %d; stderr:\n%s\nwant 1 and the failed requests", r.code, r.stderr)
	}
}
