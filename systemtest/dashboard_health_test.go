package systemtest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/node/parking/redistest"
)

// healthRow is one member row of the page, each cell by its data-col name,
// with its colour class.
type healthRow struct {
	ID           string `json:"id"`
	Reachable    string `json:"reachable"` // data-reachable: "yes" or "no"
	State        string `json:"state"`
	Term         string `json:"term"`
	Lag          string `json:"lag"`
	LagClass     string `json:"lagClass"`
	Contact      string `json:"contact"`
	ContactClass string `json:"contactClass"`
	Parked       string `json:"parked"`
	ParkedClass  string `json:"parkedClass"`
	Version      string `json:"version"`
	Uptime       string `json:"uptime"`
	Disk         string `json:"disk"`
	DiskClass    string `json:"diskClass"`
	Fsync        string `json:"fsync"`
	RaftLog      string `json:"raftlog"`
	Snapshots    string `json:"snapshots"`
}

// alertRow is one row of the page's "Alerts firing now".
type alertRow struct {
	Alert string `json:"alert"`
	Node  string `json:"node"`
	Since string `json:"since"`
	Fired string `json:"fired"`
}

// healthView is what the page's health parts show, read from its DOM.
type healthView struct {
	Verdict string      `json:"verdict"`
	Rate    string      `json:"rate"` // writes/s now, cluster-wide
	P99     string      `json:"p99"`  // "1.23 ms"
	Updated string      `json:"updated"`
	Alerts  []alertRow  `json:"alerts"`
	Rows    []healthRow `json:"rows"`
	Err     string      `json:"err"`
}

const readHealth = `JSON.stringify({
  verdict: document.getElementById("verdict").textContent,
  rate: document.getElementById("rate").textContent,
  p99: document.getElementById("p99").textContent,
  updated: document.getElementById("updated").textContent,
  alerts: [...document.querySelectorAll("#alerts tr[data-alert]")].map(r => ({
    alert: r.dataset.alert, node: r.dataset.node,
    since: r.querySelector("[data-col=since]").textContent,
    fired: r.querySelector("[data-col=fired]").textContent })),
  rows: [...document.querySelectorAll("#members tr")].map(r => {
    const c = (n) => r.querySelector("[data-col=" + n + "]") || { textContent: "", className: "" };
    return { id: r.dataset.id, reachable: r.dataset.reachable, state: c("state").textContent, term: c("term").textContent,
      lag: c("lag").textContent, lagClass: c("lag").className,
      contact: c("contact").textContent, contactClass: c("contact").className,
      parked: c("parked").textContent, parkedClass: c("parked").className,
      version: c("version").textContent, uptime: c("uptime").textContent, disk: c("disk").textContent, diskClass: c("disk").className,
      fsync: c("fsync").textContent, raftlog: c("raftlog").textContent, snapshots: c("snapshots").textContent };
  }),
  err: document.getElementById("err").textContent,
})`

// The cluster's alert bounds in TestDashboardHealth: small, so that a
// paused member's lag crosses the bound within a second of writes, and an
// unreachable member fires TxlogMemberUnreachable soon.
const (
	healthParkedMax      = 5
	healthUnreachableFor = 2 * time.Second
)

// row returns v's row of id.
func (v healthView) row(id string) (healthRow, error) {
	for _, r := range v.Rows {
		if r.ID == id {
			return r, nil
		}
	}
	return healthRow{}, fmt.Errorf("no row of %s among %d", id, len(v.Rows))
}

// checkWriting accepts a page whose cluster-wide writes/s and p99 now are
// above 0.
func checkWriting(v healthView) error {
	rate, err := strconv.ParseFloat(v.Rate, 64)
	if err != nil || rate <= 0 {
		return fmt.Errorf("writes/s %q, want > 0 while clients write", v.Rate)
	}
	p99, err := strconv.ParseFloat(strings.TrimSuffix(v.P99, " ms"), 64)
	if err != nil || p99 <= 0 || !strings.HasSuffix(v.P99, " ms") {
		return fmt.Errorf("p99 %q, want a positive number of ms while clients write", v.P99)
	}
	return nil
}

// numbered matches a cell that shows a size or a number.
var numbered = regexp.MustCompile(`^[0-9]`)

// checkLive accepts a page on which each of ids is reachable, in a Raft
// state, and shows its version, uptime, term, disk, fsync p99, Raft log
// and snapshot sizes, its disk coloured against the alert bound (the
// cluster runs without --alert-disk-free-percent: the rule's default).
func checkLive(ids ...string) func(healthView) error {
	return func(v healthView) error {
		for _, id := range ids {
			r, err := v.row(id)
			if err != nil {
				return err
			}
			if r.Reachable != "yes" || r.State != "leader" && r.State != "follower" {
				return fmt.Errorf("row %s: reachable %q, state %q; want yes and leader or follower", id, r.Reachable, r.State)
			}
			if r.Version == "" || r.Version == "–" {
				return fmt.Errorf("row %s: version %q, want one", id, r.Version)
			}
			for name, cell := range map[string]string{"uptime": r.Uptime, "term": r.Term, "disk": r.Disk, "fsync": r.Fsync, "raft log": r.RaftLog, "snapshots": r.Snapshots, "parked": r.Parked} {
				if !numbered.MatchString(cell) {
					return fmt.Errorf("row %s: %s %q, want a number", id, name, cell)
				}
			}
			if r.DiskClass != "ok" && r.DiskClass != "bad" {
				return fmt.Errorf("row %s: disk %q has class %q, want ok or bad (coloured against the default bound)", id, r.Disk, r.DiskClass)
			}
			if strings.Contains(r.Contact, "silent") || strings.Contains(r.Contact, "never") {
				return fmt.Errorf("row %s is reachable but its last contact says %q", id, r.Contact)
			}
		}
		return nil
	}
}

// silentFor matches the last contact of a member that stopped answering.
var silentFor = regexp.MustCompile(`^silent, last answer ([0-9]+) (s|min) ago`)

// checkDown accepts a page on which id is marked unreachable and its last
// contact says how long ago it last answered (never "ok"), in the bad
// colour.
func checkDown(id string) func(healthView) error {
	return func(v healthView) error {
		r, err := v.row(id)
		if err != nil {
			return err
		}
		if r.Reachable != "no" || r.State != "unreachable" {
			return fmt.Errorf("row %s: reachable %q, state %q; want no and unreachable", id, r.Reachable, r.State)
		}
		if !silentFor.MatchString(r.Contact) || r.ContactClass != "bad" {
			return fmt.Errorf("row %s: last contact %q (class %q), want %q with an age, class bad", id, r.Contact, r.ContactClass, silentFor)
		}
		if strings.Contains(r.Contact, "ok") {
			return fmt.Errorf("row %s is unreachable but its last contact says %q", id, r.Contact)
		}
		return nil
	}
}

// checkAlert accepts a page that lists alert as firing (on node, when node
// is not empty) with the time its condition began.
func checkAlert(alert, node string) func(healthView) error {
	return func(v healthView) error {
		for _, a := range v.Alerts {
			if a.Alert == alert && (node == "" || a.Node == node) {
				if a.Since == "" || a.Since == "–" {
					return fmt.Errorf("alert %s on %s: since %q, want a time", a.Alert, a.Node, a.Since)
				}
				return nil
			}
		}
		return fmt.Errorf("alerts firing %+v, want %s (node %q)", v.Alerts, alert, node)
	}
}

// lagOf parses a lag cell: "12", or "≥ 12" for a member that does not
// answer; ok is false for "–".
func lagOf(cell string) (lag int, ok bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(cell, "≥ "))
	return n, err == nil
}

// checkLagColours accepts a page whose every lag is coloured against max:
// warn above it, ok at or under it.
func checkLagColours(max int) func(healthView) error {
	return func(v healthView) error {
		if len(v.Rows) == 0 {
			return fmt.Errorf("no member rows")
		}
		for _, r := range v.Rows {
			if r.Lag == "" {
				return fmt.Errorf("row %s has no lag cell", r.ID)
			}
			lag, ok := lagOf(r.Lag)
			if !ok {
				continue // "–": not known
			}
			want := "ok"
			if lag > max {
				want = "warn"
			}
			if r.LagClass != want {
				return fmt.Errorf("row %s: lag %s has class %q, want %q (bound %d)", r.ID, r.Lag, r.LagClass, want, max)
			}
		}
		return nil
	}
}

// checkLagOver accepts a page on which id's lag is above max, coloured warn.
func checkLagOver(id string, max int) func(healthView) error {
	return func(v healthView) error {
		r, err := v.row(id)
		if err != nil {
			return err
		}
		lag, ok := lagOf(r.Lag)
		if !ok || lag <= max || r.LagClass != "warn" {
			return fmt.Errorf("row %s: lag %q class %q; want above %d, class warn", id, r.Lag, r.LagClass, max)
		}
		return nil
	}
}

// all accepts a page that every check accepts.
func all(checks ...func(healthView) error) func(healthView) error {
	return func(v healthView) error {
		for _, c := range checks {
			if err := c(v); err != nil {
				return err
			}
		}
		return nil
	}
}

// TestDashboardHealthCheckersFail feeds each checker of TestDashboardHealth
// a page that lacks what it looks for: every one must refuse it, and accept
// the good page it was made from.
func TestDashboardHealthCheckersFail(t *testing.T) {
	live := healthRow{ID: "n1", Reachable: "yes", State: "leader", Term: "3", Lag: "0", LagClass: "ok", Contact: "leader",
		Parked: "0", ParkedClass: "ok", Version: "(devel) (abc)", Uptime: "12 s", Disk: "1.0 GiB / 2.0 GiB", DiskClass: "ok", Fsync: "1.20 ms", RaftLog: "64.0 MiB", Snapshots: "0 B"}
	down := healthRow{ID: "n2", Reachable: "no", State: "unreachable", Lag: "≥ 17", LagClass: "warn", Contact: "silent, last answer 4 s ago; raft 3 s ago", ContactClass: "bad",
		Parked: "–", Version: "–", Uptime: "–", Disk: "–", Fsync: "–", RaftLog: "–", Snapshots: "–"}
	good := healthView{Rate: "250", P99: "4.10 ms", Rows: []healthRow{live, down},
		Alerts: []alertRow{{Alert: "TxlogMemberUnreachable", Node: "n1", Since: "12:00:01 (3 s ago)", Fired: "–"}}}
	checks := map[string]func(healthView) error{
		"writing":      checkWriting,
		"live":         checkLive("n1"),
		"down":         checkDown("n2"),
		"alert":        checkAlert("TxlogMemberUnreachable", "n1"),
		"lag colours":  checkLagColours(healthParkedMax),
		"lag over":     checkLagOver("n2", healthParkedMax),
		"all of those": all(checkWriting, checkDown("n2")),
	}
	for name, check := range checks {
		if err := check(good); err != nil {
			t.Errorf("%s refuses the good page: %v", name, err)
		}
	}
	with := func(f func(v *healthView)) healthView {
		v := good
		v.Rows = slices.Clone(good.Rows)
		v.Alerts = slices.Clone(good.Alerts)
		f(&v)
		return v
	}
	bad := []struct {
		check string
		page  healthView
	}{
		{"writing", with(func(v *healthView) { v.Rate = "0" })},
		{"writing", with(func(v *healthView) { v.P99 = "–" })},
		{"live", with(func(v *healthView) { v.Rows[0].Version = "–" })},
		{"live", with(func(v *healthView) { v.Rows[0].Uptime = "–" })},
		{"live", with(func(v *healthView) { v.Rows[0].DiskClass = "" })}, // disk not coloured without --alert-disk-free-percent
		{"live", with(func(v *healthView) { v.Rows[0].Reachable, v.Rows[0].State = "no", "unreachable" })},
		{"live", with(func(v *healthView) { v.Rows[0].Contact = "silent, last answer 3 s ago" })},
		{"live", with(func(v *healthView) { v.Rows = v.Rows[1:] })},
		{"down", with(func(v *healthView) { v.Rows[1].Contact = "ok" })}, // the old page's "last contact: ok"
		{"down", with(func(v *healthView) { v.Rows[1].Contact = "silent, last answer ? ago" })},
		{"down", with(func(v *healthView) { v.Rows[1].ContactClass = "" })},
		{"down", with(func(v *healthView) { v.Rows[1].Reachable, v.Rows[1].State = "yes", "follower" })},
		{"alert", with(func(v *healthView) { v.Alerts = nil })},
		{"alert", with(func(v *healthView) { v.Alerts[0].Node = "n3" })},
		{"alert", with(func(v *healthView) { v.Alerts[0].Since = "–" })},
		{"lag colours", with(func(v *healthView) { v.Rows[1].LagClass = "ok" })},
		{"lag colours", with(func(v *healthView) { v.Rows[0].Lag, v.Rows[0].LagClass = "17607", "" })}, // the old page's plain text
		{"lag colours", with(func(v *healthView) { v.Rows[0].LagClass = "warn" })},
		{"lag colours", with(func(v *healthView) { v.Rows[0].Lag = "" })},
		{"lag colours", with(func(v *healthView) { v.Rows = nil })},
		{"lag over", with(func(v *healthView) { v.Rows[1].Lag = "≥ 5" })},
		{"lag over", with(func(v *healthView) { v.Rows[1].Lag = "–" })},
		{"lag over", with(func(v *healthView) { v.Rows[1].LagClass = "bad" })},
		{"all of those", with(func(v *healthView) { v.Rows[1].Contact = "ok" })},
	}
	for _, b := range bad {
		if err := checks[b.check](b.page); err == nil {
			t.Errorf("%s accepts a bad page: %+v", b.check, b.page)
		}
	}
}

// TestDashboardHealth opens a follower's dashboard in a headless Chromium
// while clients write, and checks what it shows in four states: healthy,
// the leader SIGKILLed, the (new) leader SIGSTOPped, and Redis stopped. It saves a
// screenshot of each state in the test's artifact directory (go test
// -artifacts keeps them; the log names the files).
func TestDashboardHealth(t *testing.T) {
	redis := redistest.Start(t)
	c := startClusterWith(t, "--redis-addr="+redis.Addr,
		fmt.Sprintf("--alert-parked-max=%d", healthParkedMax), "--alert-unreachable-for="+healthUnreachableFor.String())
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ids, served := nodeIDs(c), aFollower(c, leader)

	// One writer through each node, one request at a time (so that no
	// node has more than one transaction in flight, under the parked
	// bound), for as long as the test runs; failures while a node is down
	// are expected.
	stop := make(chan struct{})
	var writers sync.WaitGroup
	defer writers.Wait()
	defer close(stop)
	for _, id := range ids {
		wc := client.NewClient(client.ClientConfig{Endpoints: []string{c.URL(id)}, Timeout: 2 * time.Second})
		writers.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				tx := wire.TxRequest{Ops: []wire.Op{{Op: "put", Key: fmt.Sprintf("health/%s/%d", id, i%100), Value: json.RawMessage(`1`)}}}
				wc.Submit(ctx, tx, wire.SubmitOptions{Timeout: time.Second})
			}
		})
	}

	bctx := newBrowser(t, ctx)
	shots := t.ArtifactDir()
	t.Logf("screenshots go to %s", shots)
	page := c.URL(served) + "/" // GET / redirects to /ui/
	if err := chromedp.Do(bctx, chromedp.Navigate(page)); err != nil {
		t.Fatalf("open %s: %v", page, err)
	}
	if loc, err := chromedp.Run(bctx, chromedp.Location()); err != nil || !strings.HasSuffix(loc, "/ui/") {
		t.Fatalf("%s led to %q (%v), want the page at /ui/", page, loc, err)
	}
	state := func(name string, d time.Duration, ok func(healthView) error) healthView {
		t.Helper()
		v := waitHealth(t, bctx, d, name, ok)
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		p := filepath.Join(shots, "dashboard-"+strings.ReplaceAll(name, " ", "-")+".png")
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: verdict %q, %s writes/s, p99 %s, %d alerts; screenshot %s", name, v.Verdict, v.Rate, v.P99, len(v.Alerts), p)
		return v
	}

	state("healthy", 30*time.Second, all(checkWriting, checkLive(ids...), checkLagColours(healthParkedMax),
		func(v healthView) error {
			if v.Verdict != "healthy" {
				return fmt.Errorf("verdict %q, want healthy", v.Verdict)
			}
			return nil
		}))

	// The leader, SIGKILLed: marked, and the new leader's alert listed.
	if err := c.Kill(leader); err != nil {
		t.Fatal(err)
	}
	var live []string
	for _, id := range ids {
		if id != leader {
			live = append(live, id)
		}
	}
	state("leader stopped", 40*time.Second, all(checkWriting, checkDown(leader), checkLive(live...), checkLagColours(healthParkedMax),
		checkAlert("TxlogMemberUnreachable", "")))
	if err := c.Restart(ctx, leader); err != nil {
		t.Fatal(err)
	}
	waitHealth(t, bctx, 40*time.Second, "restarted member back", checkLive(ids...))

	// The leader paused, seen from another member's page: reads that wait
	// for a leader hold up no part of the page. Its lag grows past the
	// bound while the others write.
	paused, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if paused == served {
		served = leader // the restarted one, a follower now
		if err := chromedp.Do(bctx, chromedp.Navigate(c.URL(served)+"/ui/")); err != nil {
			t.Fatal(err)
		}
		waitHealth(t, bctx, 20*time.Second, "page of "+served, checkLive(ids...))
	}
	if err := c.Node(paused).Pause(); err != nil {
		t.Fatal(err)
	}
	var others []string
	for _, id := range ids {
		if id != paused {
			others = append(others, id)
		}
	}
	state("one node paused", 40*time.Second, all(checkDown(paused), checkLive(others...), checkLagOver(paused, healthParkedMax), checkLagColours(healthParkedMax)))
	// A page opened now loads without waiting for the paused member, and
	// keeps refreshing.
	start := time.Now()
	if err := chromedp.Do(bctx, chromedp.Navigate(c.URL(served)+"/ui/")); err != nil {
		t.Fatal(err)
	}
	v := waitHealth(t, bctx, 10*time.Second, "reloaded page while a member is paused", all(checkDown(paused), checkLive(others...)))
	t.Logf("reloaded page showed every member %v after it was asked for (%s)", time.Since(start).Round(time.Millisecond), v.Updated)
	waitHealth(t, bctx, 15*time.Second, "page refreshes while a member is paused", func(w healthView) error {
		if w.Updated == v.Updated || w.Updated == "" {
			return fmt.Errorf("updated %q, as before", w.Updated)
		}
		return nil
	})
	if err := c.Node(paused).Resume(); err != nil {
		t.Fatal(err)
	}
	waitHealth(t, bctx, 40*time.Second, "paused member back", checkLive(ids...))

	// Redis stopped: the leader's breaker opens, and its alert is listed.
	redis.Stop()
	state("redis down", 40*time.Second, all(checkLive(ids...), checkAlert("TxlogRedisBreakerOpen", "")))
}

// waitHealth polls the page in bctx until ok accepts what it shows, for at
// most d.
func waitHealth(t *testing.T, bctx context.Context, d time.Duration, what string, ok func(healthView) error) healthView {
	t.Helper()
	return waitView(t, bctx, d, 200*time.Millisecond, what, readHealth, ok)
}

// TestDashboardHealthReaderFails runs readHealth and the checkers in a real
// Chromium over two hand-made pages: one marked as the dashboard marks a
// stopped member (accepted), and one as the page before it did (the row
// "unreachable" with "last contact: ok", the lag in plain text, no alert
// rows): every checker must refuse that one.
func TestDashboardHealthReaderFails(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bctx := newBrowser(t, ctx)
	page := func(row, alerts string) string {
		return `<span id="verdict">unreachable: n2</span><b id="rate">120</b><b id="p99">3.20 ms</b><span id="updated">updated now</span><span id="err"></span>
<table><tbody id="alerts">` + alerts + `</tbody></table><table><tbody id="members">` + row + `</tbody></table>`
	}
	good := page(`<tr data-id="n2" data-reachable="no"><td data-col="state" class="bad">unreachable</td><td data-col="lag" class="warn">≥ 40</td><td data-col="contact" class="bad">silent, last answer 7 s ago</td></tr>`,
		`<tr data-alert="TxlogMemberUnreachable" data-node="n1"><td data-col="since">4:06:11 PM (3 s ago)</td><td data-col="fired">–</td></tr>`)
	old := page(`<tr data-id="n2"><td>n2</td><td class="bad">unreachable</td><td>voter</td><td>–</td><td>–</td><td class="bad">40</td><td>ok</td></tr>`, ``)
	read := func(html string) healthView {
		t.Helper()
		if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Run(bctx, chromedp.Evaluate[any](`document.body.innerHTML = `+strconv.Quote(html)+`; null`)); err != nil {
			t.Fatal(err)
		}
		s, err := chromedp.Run(bctx, chromedp.Evaluate[string](readHealth))
		if err != nil {
			t.Fatal(err)
		}
		var v healthView
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	checks := map[string]func(healthView) error{
		"down":        checkDown("n2"),
		"alert":       checkAlert("TxlogMemberUnreachable", "n1"),
		"lag over":    checkLagOver("n2", healthParkedMax),
		"lag colours": checkLagColours(healthParkedMax),
		"writing":     checkWriting,
	}
	g, o := read(good), read(old)
	for name, check := range checks {
		if err := check(g); err != nil {
			t.Errorf("%s refuses the marked page: %v (read %+v)", name, err, g)
		}
		if name == "writing" {
			continue // both pages show the same rates
		}
		if err := check(o); err == nil {
			t.Errorf("%s accepts the unmarked page (read %+v)", name, o)
		}
	}
}
