package systemtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/txlog/txlog/alert"
	"github.com/txlog/txlog/launcher"
)

// receiver is a webhook that records every event POSTed to it.
type receiver struct {
	mu     sync.Mutex
	events []alert.Event
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	var e alert.Event
	if err := json.Unmarshal(b, &e); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *receiver) snapshot() []alert.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]alert.Event(nil), r.events...)
}

// count returns how many events of name with status the receiver got, and
// the nodes that sent them.
func (r *receiver) count(name, status string) (int, []string) {
	n, nodes := 0, []string(nil)
	for _, e := range r.snapshot() {
		if e.Alert == name && e.Status == status {
			n++
			nodes = append(nodes, e.Node)
		}
	}
	return n, nodes
}

// TestAlertNoLeader: with two of three nodes stopped, the survivor (n3, so
// that the lower-voter probe decides) sends TxlogNoLeader firing once; once
// the two are back and a leader is elected, it is resolved once. No alert is
// sent twice in a row with the same status: one copy per cluster.
func TestAlertNoLeader(t *testing.T) {
	rec := &receiver{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	const noLeaderFor = 3 * time.Second
	c := startClusterWith(t, "--alert-webhook", srv.URL, "--alert-no-leader-for", noLeaderFor.String(), "--alert-disk-free-percent", "0.0001")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, id := range []string{"n1", "n2"} {
		if err := c.Stop(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	stopped := time.Now()
	waitFor := func(what string, f func() error) {
		t.Helper()
		if err := launcher.Poll(ctx, 100*time.Millisecond, func(context.Context) error { return f() }); err != nil {
			t.Fatalf("%s: %v; events %+v", what, err, rec.snapshot())
		}
	}
	waitFor("no leader firing", func() error {
		if n, _ := rec.count(alert.NoLeader, alert.Firing); n == 0 {
			return fmt.Errorf("no firing yet")
		}
		return nil
	})
	if d := time.Since(stopped); d < noLeaderFor {
		t.Fatalf("fired %s after the stop, before the %s threshold", d, noLeaderFor)
	}
	for _, id := range []string{"n1", "n2"} {
		if err := c.Restart(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	waitFor("no leader resolved", func() error {
		if n, _ := rec.count(alert.NoLeader, alert.Resolved); n == 0 {
			return fmt.Errorf("not resolved yet")
		}
		return nil
	})
	if _, err := c.Leader(ctx); err != nil {
		t.Fatal(err)
	}
	// Copies would come from nodes that were leaderless past the threshold
	// themselves: wait that long once more with a leader in place.
	quiet := time.Now().Add(noLeaderFor + 2*time.Second)
	waitFor("quiet period", func() error {
		if time.Now().Before(quiet) {
			return fmt.Errorf("waiting")
		}
		return nil
	})
	for _, st := range []string{alert.Firing, alert.Resolved} {
		if n, nodes := rec.count(alert.NoLeader, st); n != 1 || nodes[0] != "n3" {
			t.Fatalf("%s %s: %d copies from %v, want 1 from n3; events %+v", alert.NoLeader, st, n, nodes, rec.snapshot())
		}
	}
	// The dashboard's /v1/events shows the alerts n3 sent.
	resp, err := http.Get(c.URL("n3") + "/v1/events")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"kind":"alert"`) || !strings.Contains(string(b), alert.NoLeader) {
		t.Fatalf("/v1/events of n3 lacks the alert: %s", b)
	}
	last := map[string]string{}
	for _, e := range rec.snapshot() {
		k := e.Alert + fmt.Sprint(e.Labels)
		if last[k] == e.Status {
			t.Fatalf("%s %s sent twice in a row; events %+v", k, e.Status, rec.snapshot())
		}
		last[k] = e.Status
		if !strings.HasPrefix(e.Alert, "Txlog") || e.Since.IsZero() || e.Summary == "" {
			t.Fatalf("bad event %+v", e)
		}
	}
}
