package systemtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/txlog/txlog/launcher"
	"github.com/txlog/txlog/launcher/launchertest"
)

// newTestToken returns a random token and its auth file hash (lowercase hex
// SHA-256 of the token's bytes).
func newTestToken(t *testing.T) (token, hash string) {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	token = base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(token))
	return token, hex.EncodeToString(sum[:])
}

// startAuthCluster starts a 3-node cluster with args (an --auth-file among
// them), stopped when the test ends, and waits until every node answers GET
// /v1/cluster, asked with token, naming the same leader, and /readyz.
// (launchertest.StartCluster asks without a credential.)
func startAuthCluster(t *testing.T, token string, args ...string) *launcher.Cluster {
	t.Helper()
	c := launchCluster(t, launcher.ClusterConfig{ExtraArgs: args})
	ctx, cancel := context.WithTimeout(context.Background(), launchertest.StartTimeout)
	defer cancel()
	getJSON := func(ctx context.Context, url string, out any) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, b)
		}
		if out == nil {
			return nil
		}
		return json.Unmarshal(b, out)
	}
	err := launcher.Poll(ctx, 100*time.Millisecond, func(ctx context.Context) error {
		leaders := map[string]bool{}
		for _, p := range c.Nodes() {
			var st struct {
				LeaderID string `json:"leader_id"`
			}
			if err := getJSON(ctx, c.URL(p.ID())+"/v1/cluster", &st); err != nil {
				return err
			}
			if err := getJSON(ctx, c.URL(p.ID())+"/readyz", nil); err != nil {
				return err
			}
			leaders[st.LeaderID] = true
		}
		if len(leaders) != 1 || leaders[""] {
			return fmt.Errorf("leaders %v, want one", leaders)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("cluster with %q not ready: %v", args, err)
	}
	return c
}

// TestDashboardWithAuth starts a cluster with --auth-file (an admin token for
// the launcher, a read token named dash) and --ui-open, and checks:
//   - without a credential, /ui/ answers (--ui-open) but the page's data does
//     not (401), and the page says to sign in;
//   - a browser that sends the read token as Basic credentials sees every
//     member's stats, no error, and asks its own origin only;
//   - /v1/stats has no CORS header;
//   - a read token scoped to a/ sees the members' stats and, of the leases
//     a/job and b/job, a/job only.
func TestDashboardWithAuth(t *testing.T) {
	adminTok, adminHash := newTestToken(t)
	readTok, readHash := newTestToken(t)
	authFile := filepath.Join(t.TempDir(), "auth")
	scopedTok, scopedHash := newTestToken(t)
	lines := fmt.Sprintf("# test credentials\nsha256:%s admin launcher\nsha256:%s read dash\nsha256:%s read scoped prefix=a/\n", adminHash, readHash, scopedHash)
	if err := os.WriteFile(authFile, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startAuthCluster(t, adminTok, "--auth-file", authFile, "--ui-open")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ids := nodeIDs(c)
	served := c.URL(ids[1])

	// Plain HTTP first: what a browser without a credential gets.
	get := func(path, authz string) (int, http.Header, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, served+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if authz != "" {
			req.Header.Set("Authorization", authz)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, b
	}
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("dash:"+readTok))
	if code, _, _ := get("/ui/", ""); code != http.StatusOK {
		t.Fatalf("GET /ui/ without a credential = %d, want 200 (--ui-open)", code)
	}
	for _, path := range []string{"/v1/stats/members", "/v1/stats", "/v1/cluster", "/v1/events", "/v1/leases", "/v1/consumers"} {
		code, _, body := get(path, "")
		if code != http.StatusUnauthorized || !strings.Contains(string(body), `"unauthenticated"`) {
			t.Errorf("GET %s without a credential = %d %s, want 401 unauthenticated (--ui-open opens the page, not its data)", path, code, body)
		}
	}
	code, hdr, body := get("/v1/stats/members", "Bearer "+readTok)
	var ma struct {
		Members []struct {
			ID    string          `json:"id"`
			Stats json.RawMessage `json:"stats"`
			Error string          `json:"error"`
		} `json:"members"`
	}
	if err := json.Unmarshal(body, &ma); code != 200 || err != nil || len(ma.Members) != 3 {
		t.Fatalf("GET /v1/stats/members with the read token = %d %s (%v), want 200 and 3 members", code, body, err)
	}
	for _, m := range ma.Members {
		if m.Stats == nil || m.Error != "" {
			t.Errorf("member %s: error %q, want its stats (read over the peer link)", m.ID, m.Error)
		}
	}
	if code, hdr, _ = get("/v1/stats", basic); code != 200 || hdr.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("GET /v1/stats with Basic = %d, Access-Control-Allow-Origin %q; want 200 and none", code, hdr.Get("Access-Control-Allow-Origin"))
	}

	// A browser without a credential whose user dismisses the sign-in
	// dialog: the page loads (--ui-open) and says to sign in.
	anon := newBrowser(t, ctx)
	anonPrompts := answerBasicPrompt(t, anon, "", "")
	if err := chromedp.Do(anon, chromedp.Navigate(served+"/ui/")); err != nil {
		t.Fatal(err)
	}
	waitPage(t, anon, 10*time.Second, "page without a credential asks to sign in", func(s pageState) error {
		if !strings.Contains(s.Err, "sign in: this node needs a token") {
			return fmt.Errorf("error line %q, want the sign-in sentence", s.Err)
		}
		return nil
	})
	if p := anonPrompts(); len(p) == 0 {
		t.Errorf("the browser never asked for a credential, want a Basic prompt for the page's data")
	}

	// A browser with the read token as Basic credentials: every member's
	// stats, no error, its own origin only.
	bctx := newBrowser(t, ctx)
	requests := recordRequests(t, bctx)
	if _, err := chromedp.Call(bctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Authorization": basic}}); err != nil {
		t.Fatalf("set the Authorization header: %v", err)
	}
	if err := chromedp.Do(bctx, chromedp.Navigate(served+"/ui/")); err != nil {
		t.Fatal(err)
	}
	waitPage(t, bctx, 15*time.Second, "page with the read token shows every member's stats", allStats(ids...))
	origin, err := url.Parse(served)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range requests() {
		if u, err := url.Parse(r); err != nil || u.Host != origin.Host {
			t.Errorf("page requested %s, not of its origin %s", r, served)
		}
	}

	// A read token scoped to a/: the page shows the members' stats, no
	// error, and of the leases a/job and b/job only a/job.
	for _, name := range []string{"a/job", "b/job"} {
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, c.URL(ids[0])+"/v1/leases/"+name, strings.NewReader(`{"holder":"w1","ttl":"10m"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+adminTok)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("PUT /v1/leases/%s = %d %s", name, resp.StatusCode, b)
		}
	}
	sctx := newBrowser(t, ctx)
	scopedBasic := "Basic " + base64.StdEncoding.EncodeToString([]byte("scoped:"+scopedTok))
	if _, err := chromedp.Call(sctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Authorization": scopedBasic}}); err != nil {
		t.Fatalf("set the Authorization header: %v", err)
	}
	if err := chromedp.Do(sctx, chromedp.Navigate(served+"/ui/")); err != nil {
		t.Fatal(err)
	}
	waitPage(t, sctx, 15*time.Second, "page with the scoped token shows every member's stats", allStats(ids...))
	var leases []string
	lctx, lcancel := context.WithTimeout(ctx, 10*time.Second)
	defer lcancel()
	err = launcher.Poll(lctx, 100*time.Millisecond, func(ctx context.Context) error {
		s, err := chromedp.Run(sctx, chromedp.Evaluate[string](`JSON.stringify([...document.querySelectorAll("#leases tr")].map(r => r.cells[0].textContent))`))
		if err != nil {
			return err
		}
		if err := json.Unmarshal([]byte(s), &leases); err != nil {
			return err
		}
		if len(leases) != 1 || leases[0] != "a/job" {
			return fmt.Errorf("leases %q", leases)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("page with the token scoped to a/ shows leases %q, want a/job only: %v", leases, err)
	}
}

// answerBasicPrompt makes the tab in bctx answer the first Basic prompt
// (HTTP 401 with WWW-Authenticate: Basic) with user and password, as a person
// who types them once would, and cancel any later one (every one, with an
// empty password: a person who has no token); it returns the URLs that
// prompted.
func answerBasicPrompt(t *testing.T, bctx context.Context, user, password string) func() []string {
	t.Helper()
	var mu sync.Mutex
	var prompts []string
	if err := chromedp.Do(bctx); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Listen(bctx, func(ev any) {
		// The listener runs in the tab's loop: commands go from goroutines.
		switch e := ev.(type) {
		case *fetch.EventRequestPaused:
			go chromedp.Call(bctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: e.RequestID})
		case *fetch.EventAuthRequired:
			mu.Lock()
			prompts = append(prompts, e.Request.URL)
			first := len(prompts) == 1 && password != ""
			mu.Unlock()
			resp := &fetch.AuthChallengeResponse{Response: fetch.AuthChallengeResponseResponseCancelAuth}
			if first {
				resp = &fetch.AuthChallengeResponse{Response: fetch.AuthChallengeResponseResponseProvideCredentials, Username: user, Password: password}
			}
			go chromedp.Call(bctx, fetch.ContinueWithAuth, fetch.ContinueWithAuthParams{RequestID: e.RequestID, AuthChallengeResponse: resp})
		}
	}); err != nil {
		t.Fatal(err)
	}
	yes := true
	if _, err := chromedp.Call(bctx, fetch.Enable, fetch.EnableParams{HandleAuthRequests: &yes}); err != nil {
		t.Fatal(err)
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), prompts...)
	}
}

// TestDashboardBasicPrompt starts a cluster with --auth-file and without
// --ui-open: a browser opening /ui/ is asked for Basic credentials once; with
// the read token as the password, the page shows every member's stats and no
// error, and the browser never asks again (the node's 401s on the page's data
// routes carry the same realm, so the browser re-sends what it was given).
func TestDashboardBasicPrompt(t *testing.T) {
	adminTok, adminHash := newTestToken(t)
	readTok, readHash := newTestToken(t)
	authFile := filepath.Join(t.TempDir(), "auth")
	lines := fmt.Sprintf("sha256:%s admin launcher\nsha256:%s read dash\n", adminHash, readHash)
	if err := os.WriteFile(authFile, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startAuthCluster(t, adminTok, "--auth-file", authFile)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ids := nodeIDs(c)
	bctx := newBrowser(t, ctx)
	prompts := answerBasicPrompt(t, bctx, "dash", readTok)
	if err := chromedp.Do(bctx, chromedp.Navigate(c.URL(ids[0])+"/ui/")); err != nil {
		t.Fatal(err)
	}
	waitPage(t, bctx, 15*time.Second, "page behind the Basic prompt shows every member's stats", allStats(ids...))
	if p := prompts(); len(p) != 1 {
		t.Fatalf("the browser prompted for %q, want once, for /ui/", p)
	}
}
