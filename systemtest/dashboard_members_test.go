package systemtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/txlog/txlog/launcher"
)

// newBrowser starts a headless Chromium (Debian's chromium package, which
// scripts/test.sh installs; without it the test fails) that lives as long as
// ctx, and returns its tab's context.
func newBrowser(t *testing.T, ctx context.Context) context.Context {
	t.Helper()
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium not found (%v): scripts/test.sh installs Debian's chromium package", err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium),
		chromedp.Headless, // --headless
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.WindowSize(1100, 760),
	}
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(bcancel)
	return bctx
}

// recordRequests opens bctx's tab and records the URL of every request it
// sends from then on (the listener runs in the tab's loop: it only appends);
// the function it returns gives a copy of those so far.
func recordRequests(t *testing.T, bctx context.Context) func() []string {
	t.Helper()
	var mu sync.Mutex
	var requests []string
	if err := chromedp.Do(bctx); err != nil { // open the tab, so the listener sees its first request
		t.Fatal(err)
	}
	if err := chromedp.Listen(bctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			mu.Lock()
			requests = append(requests, e.Request.URL)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), requests...)
	}
}

// nodeIDs returns the IDs of c's nodes in ID order.
func nodeIDs(c *launcher.Cluster) []string {
	nodes := c.Nodes()
	ids := make([]string, len(nodes))
	for i, p := range nodes {
		ids[i] = p.ID()
	}
	return ids
}

// memberRow is one row of the page's members table.
type memberRow struct {
	ID     string `json:"id"`
	State  string `json:"state"`
	Commit string `json:"commit"`
	Title  string `json:"title"` // why the member's stats are missing
}

// pageState is what the page shows in its members table and error line.
type pageState struct {
	Self string      `json:"self"`
	Rows []memberRow `json:"rows"`
	Err  string      `json:"err"`
}

const readPageState = `JSON.stringify({
  self: document.getElementById("self").textContent,
  rows: [...document.querySelectorAll("#members tr")].map(r => ({
    id: r.dataset.id, state: r.cells[1].textContent, commit: r.querySelector("[data-col=commit]").textContent, title: r.title })),
  err: document.getElementById("err").textContent,
})`

// waitPage polls the page in bctx until ok accepts what it shows, for at most d.
func waitPage(t *testing.T, bctx context.Context, d time.Duration, what string, ok func(pageState) error) pageState {
	t.Helper()
	return waitView(t, bctx, d, 100*time.Millisecond, what, readPageState, ok)
}

// waitView polls the page in bctx every interval, reading it with script (a
// JavaScript expression that gives a JSON text of a T), until ok accepts
// what it shows; the test fails if that has not happened within d.
func waitView[T any](t *testing.T, bctx context.Context, d, interval time.Duration, what, script string, ok func(T) error) T {
	t.Helper()
	wctx, cancel := context.WithTimeout(bctx, d)
	defer cancel()
	var last T
	var lastErr error
	err := launcher.Poll(wctx, interval, func(ctx context.Context) error {
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](script))
		if err != nil {
			lastErr = err
			return err
		}
		var v T
		if lastErr = json.Unmarshal([]byte(s), &v); lastErr != nil {
			return lastErr
		}
		last = v
		lastErr = ok(last)
		return lastErr
	})
	if err != nil {
		t.Fatalf("%s within %v: %v (page shows %+v)", what, d, lastErr, last)
	}
	return last
}

// allStats accepts a page whose rows are ids, each with a Raft state and a
// commit index read from that member's stats, and no error.
func allStats(ids ...string) func(pageState) error {
	return func(s pageState) error {
		if s.Err != "" {
			return fmt.Errorf("page says %q", s.Err)
		}
		if len(s.Rows) != len(ids) {
			return fmt.Errorf("%d member rows, want %d", len(s.Rows), len(ids))
		}
		for i, r := range s.Rows {
			if r.ID != ids[i] {
				return fmt.Errorf("row %d is %q, want %q", i, r.ID, ids[i])
			}
			if r.State != "leader" && r.State != "follower" || r.Commit == "–" || r.Commit == "" {
				return fmt.Errorf("row %s: state %q, commit %q; want its stats (%s)", r.ID, r.State, r.Commit, r.Title)
			}
		}
		return nil
	}
}

// TestDashboardReadsItsOwnOrigin opens a node's /ui/ in a headless Chromium
// and checks that the page shows all three members' stats, which it reads
// through that node (GET /v1/stats/members), and that every request the page
// makes goes to the origin it was served from. Then it SIGKILLs another member:
// that member's row says it is unreachable, and why, while the others keep
// their stats.
func TestDashboardReadsItsOwnOrigin(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := c.Leader(ctx); err != nil {
		t.Fatal(err)
	}
	ids := nodeIDs(c)
	served := ids[0]
	bctx := newBrowser(t, ctx)
	requests := recordRequests(t, bctx) // every request the tab sends
	page := c.URL(served) + "/ui/"
	if err := chromedp.Do(bctx, chromedp.Navigate(page)); err != nil {
		t.Fatalf("open %s: %v", page, err)
	}
	waitPage(t, bctx, 15*time.Second, "page shows every member's stats", allStats(ids...))

	origin, err := url.Parse(c.URL(served))
	if err != nil {
		t.Fatal(err)
	}
	seen := requests()
	var members int
	for _, r := range seen {
		u, err := url.Parse(r)
		if err != nil || u.Scheme != origin.Scheme || u.Host != origin.Host {
			t.Errorf("page requested %s, not of its origin %s", r, c.URL(served))
		}
		if err == nil && u.Path == "/v1/stats/members" {
			members++
		}
	}
	if members == 0 {
		t.Fatalf("page never requested /v1/stats/members; it requested %q", seen)
	}
	t.Logf("page made %d requests, %d of /v1/stats/members, all to %s", len(seen), members, c.URL(served))

	// /v1/stats answers without Access-Control-Allow-Origin.
	resp, err := http.Get(c.URL(ids[1]) + "/v1/stats")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Access-Control-Allow-Origin"); resp.StatusCode != 200 || got != "" {
		t.Fatalf("GET /v1/stats = %d, Access-Control-Allow-Origin %q; want 200 and none", resp.StatusCode, got)
	}

	killed := ids[2]
	if err := c.Kill(killed); err != nil {
		t.Fatal(err)
	}
	got := waitPage(t, bctx, 15*time.Second, "page shows the killed member unreachable", func(s pageState) error {
		if len(s.Rows) != 3 {
			return fmt.Errorf("%d member rows, want 3", len(s.Rows))
		}
		for _, r := range s.Rows {
			switch {
			case r.ID == killed && (r.State != "unreachable" || r.Title == ""):
				return fmt.Errorf("row %s: state %q, title %q; want unreachable and why", r.ID, r.State, r.Title)
			case r.ID != killed && (r.Commit == "–" || r.Title != ""):
				return fmt.Errorf("row %s: commit %q, title %q; want its stats", r.ID, r.Commit, r.Title)
			}
		}
		return nil
	})
	t.Logf("killed %s; the page says: %+v", killed, got.Rows)
}

// TestDashboardSaysWhenDenied serves a node's page through a proxy that
// answers the page's data requests as a node with --auth-file answers a
// browser without a credential (401 unauthenticated), then as one whose
// credential may not read the leases (403 forbidden): the page says so in
// words, and shows what it may read.
func TestDashboardSaysWhenDenied(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := c.Leader(ctx); err != nil {
		t.Fatal(err)
	}
	ids := nodeIDs(c)
	target, err := url.Parse(c.URL(ids[0]))
	if err != nil {
		t.Fatal(err)
	}
	var mode atomic.Int32 // 0: no credential; 1: cannot read the leases
	proxy := httputil.NewSingleHostReverseProxy(target)
	deny := func(w http.ResponseWriter, status int, code, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"code":%q,"message":%q}}`+"\n", code, msg)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case !strings.HasPrefix(r.URL.Path, "/v1/"):
			proxy.ServeHTTP(w, r)
		case mode.Load() == 0:
			deny(w, http.StatusUnauthorized, "unauthenticated", "no credential")
		case r.URL.Path == "/v1/leases":
			deny(w, http.StatusForbidden, "forbidden", "role read may not list leases")
		default:
			proxy.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)

	bctx := newBrowser(t, ctx)
	if err := chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/ui/")); err != nil {
		t.Fatalf("open %s/ui/: %v", srv.URL, err)
	}
	waitPage(t, bctx, 10*time.Second, "page asks to sign in", func(s pageState) error {
		if !strings.Contains(s.Err, "sign in: this node needs a token") {
			return fmt.Errorf("error line %q, want the sign-in sentence", s.Err)
		}
		if strings.Count(s.Err, "sign in") != 1 {
			return fmt.Errorf("error line %q, want the sign-in sentence once", s.Err)
		}
		return nil
	})
	mode.Store(1)
	waitPage(t, bctx, 10*time.Second, "page shows the members and says the leases are not for it", func(s pageState) error {
		if s.Err != "your credential cannot read the leases" {
			return fmt.Errorf("error line %q, want only that the leases cannot be read", s.Err)
		}
		return allStats(ids...)(pageState{Rows: s.Rows})
	})
}
