package systemtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/launcher"
)

// screenshotEnv names a file that TestDashboardFollowsFailover also writes its
// screenshot to (docs/img/dashboard.png is one).
const screenshotEnv = "TXLOG_SCREENSHOT"

// dashboardView is what the page shows, read from its DOM.
type dashboardView struct {
	Leader  string   `json:"leader"`
	Members []string `json:"members"` // the member rows' IDs
	Events  []string `json:"events"`  // the leader_change events' text, newest first
	// Consumers are the consumer groups shown; nil while the panel is hidden.
	Consumers []string `json:"consumers"`
	// Overflow is the page's width beyond the window's (a phone-sized window
	// must not scroll sideways; wide tables scroll inside their panels).
	Overflow int `json:"overflow"`
}

const readView = `JSON.stringify({
  leader: document.getElementById("leader").textContent,
  members: [...document.querySelectorAll("#members tr")].map(r => r.dataset.id),
  events: [...document.querySelectorAll('#events li[data-kind="leader_change"]')].map(li => li.textContent),
  consumers: document.getElementById("consumers-panel").hidden ? null :
    [...document.querySelectorAll("#consumers tr")].map(r => r.firstChild.textContent),
  overflow: document.documentElement.scrollWidth - window.innerWidth,
})`

// TestDashboardFollowsFailover opens a follower's /ui/ in a headless Chromium,
// checks that it names the leader (and a consumer group), SIGKILLs the leader and checks that within
// 10 s the page shows the new leader and the leader change among its events.
// Chromium is Debian's chromium package (scripts/test.sh installs it); without
// it the test fails.
func TestDashboardFollowsFailover(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	follower := aFollower(c, leader)
	// Something for the write and lease panels to show: writes through the
	// two followers (they outlive the kill) for as long as the test runs.
	cl := client.NewClient(client.ClientConfig{Endpoints: c.HTTPAddrs(), Timeout: 5 * time.Second})
	if _, err := cl.AcquireLease(ctx, "scheduler", "worker-1", time.Minute); err != nil {
		t.Fatalf("AcquireLease: %v", err)
	}
	if _, err := cl.CommitOffset(ctx, "billing", 10, nil); err != nil {
		t.Fatalf("CommitOffset: %v", err)
	}
	stop := make(chan struct{})
	var writers sync.WaitGroup
	defer writers.Wait()
	defer close(stop)
	for _, p := range c.Nodes() {
		if p.ID() == leader {
			continue
		}
		wc := client.NewClient(client.ClientConfig{Endpoints: []string{c.URL(p.ID())}, Timeout: 2 * time.Second})
		writers.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				tx := wire.TxRequest{Ops: []wire.Op{{Op: "put", Key: fmt.Sprintf("ui/%s/%d", p.ID(), i%100), Value: json.RawMessage(`1`)}}}
				wc.Submit(ctx, tx, wire.SubmitOptions{Timeout: time.Second}) // failures during the failover are expected
			}
		})
	}

	bctx := newBrowser(t, ctx)
	page := c.URL(follower) + "/ui/"
	if err := chromedp.Do(bctx, chromedp.Navigate(page)); err != nil {
		t.Fatalf("open %s: %v", page, err)
	}
	view := func(ctx context.Context) (dashboardView, error) {
		var v dashboardView
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](readView))
		if err != nil {
			return v, err
		}
		return v, json.Unmarshal([]byte(s), &v)
	}
	wait := func(d time.Duration, what string, ok func(dashboardView) error) dashboardView {
		t.Helper()
		wctx, wcancel := context.WithTimeout(bctx, d)
		defer wcancel()
		var last dashboardView
		var lastErr error
		err := launcher.Poll(wctx, 100*time.Millisecond, func(ctx context.Context) error {
			last, lastErr = view(ctx)
			if lastErr != nil {
				return lastErr
			}
			lastErr = ok(last)
			return lastErr
		})
		if err != nil {
			t.Fatalf("%s within %v: %v (page shows %+v)", what, d, lastErr, last)
		}
		return last
	}

	// 30 s: the first render in Chromium, and an election then the page's next
	// poll, on a loaded machine.
	wait(30*time.Second, "page names the leader", func(v dashboardView) error {
		if v.Leader != leader {
			return fmt.Errorf("leader %q, want %q", v.Leader, leader)
		}
		if len(v.Members) != 3 {
			return fmt.Errorf("%d member rows, want 3", len(v.Members))
		}
		if !slices.Equal(v.Consumers, []string{"billing"}) {
			return fmt.Errorf("consumer groups %q, want billing", v.Consumers)
		}
		return nil
	})

	if err := c.Kill(leader); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	var newLeader string
	got := wait(30*time.Second, "page shows the new leader and the leader change", func(v dashboardView) error {
		if v.Leader == leader || !slices.Contains(v.Members, v.Leader) {
			return fmt.Errorf("leader %q, want a member other than %s", v.Leader, leader)
		}
		if len(v.Events) == 0 || !containsWord(v.Events[0], v.Leader) {
			return fmt.Errorf("newest leader change %q, want one naming %s", v.Events, v.Leader)
		}
		newLeader = v.Leader
		return nil
	})
	t.Logf("page showed leader %s %v after the kill; events %q", newLeader, time.Since(killed).Round(time.Millisecond), got.Events)
	// The cluster agrees (a second election meanwhile moves both: the page
	// follows it too).
	wait(30*time.Second, "page and cluster agree on the leader", func(v dashboardView) error {
		if agreed, err := c.Leader(ctx); err != nil || agreed != v.Leader {
			return fmt.Errorf("cluster's leader = %q, %v; the page shows %q", agreed, err, v.Leader)
		}
		return nil
	})

	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100)) // 100: PNG
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	dst := []string{filepath.Join(t.TempDir(), "dashboard.png")}
	if p := os.Getenv(screenshotEnv); p != "" {
		dst = append(dst, p)
	}
	for _, p := range dst {
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatalf("save screenshot: %v", err)
		}
		t.Logf("screenshot: %s (%d bytes)", p, len(png))
	}

	// The follower's samples counted the writes it answered.
	if err := launcher.Poll(ctx, 200*time.Millisecond, func(ctx context.Context) error {
		return checkStats(ctx, c.URL(follower)+"/v1/stats")
	}); err != nil {
		t.Fatalf("GET /v1/stats of %s: %v", follower, err)
	}

	// A phone-sized window: the page must not scroll sideways.
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	wait(5*time.Second, "page fits a 390 px window", func(v dashboardView) error {
		if v.Overflow > 0 {
			return fmt.Errorf("page is %d px wider than the window", v.Overflow)
		}
		return nil
	})
}

// checkStats reads a node's /v1/stats and checks that it has no CORS header
// and a sample with writes and latencies.
func checkStats(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if got := resp.Header.Get("Access-Control-Allow-Origin"); resp.StatusCode != 200 || got != "" {
		return fmt.Errorf("status %d, Access-Control-Allow-Origin %q; want 200 and none (the page reads /v1/stats/members)", resp.StatusCode, got)
	}
	var st struct {
		Samples []struct {
			WritesPerSec float64 `json:"writes_per_sec"`
			Requests     uint64  `json:"requests"`
			P50Ms        float64 `json:"p50_ms"`
			P99Ms        float64 `json:"p99_ms"`
		} `json:"samples"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return err
	}
	for _, s := range st.Samples {
		if s.Requests > 0 && s.WritesPerSec > 0 && s.P50Ms > 0 && s.P99Ms >= s.P50Ms {
			return nil
		}
	}
	return fmt.Errorf("no sample with writes and p50 <= p99 in %+v", st.Samples)
}

// containsWord reports whether s has w as a whole word (n1 is not in n10).
func containsWord(s, w string) bool {
	for i := 0; i+len(w) <= len(s); i++ {
		if s[i:i+len(w)] == w && (i == 0 || !isWordByte(s[i-1])) && (i+len(w) == len(s) || !isWordByte(s[i+len(w)])) {
			return true
		}
	}
	return false
}

func isWordByte(b byte) bool {
	return b == '-' || b == '_' || '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
}
