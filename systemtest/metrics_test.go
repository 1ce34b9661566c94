package systemtest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/txlog/txlog/node/parking/redistest"
)

// scrape is one parsed /metrics answer: the families by name.
type scrape map[string]*dto.MetricFamily

// scrapeMetrics GETs url (a /metrics) and parses it with Prometheus's text
// parser.
func scrapeMetrics(ctx context.Context, t *testing.T, url string) scrape {
	t.Helper()
	code, body := get(ctx, t, url)
	if code != http.StatusOK {
		t.Fatalf("GET %s = %d %.300q, want 200", url, code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	return fams
}

// value returns the value of the series of name whose labels include labels
// ("k=v" pairs): a counter's or gauge's value, a histogram's count; ok is
// false when there is no such series.
func (s scrape) value(name string, labels ...string) (v float64, ok bool) {
	f := s[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		for _, l := range labels {
			k, want, _ := strings.Cut(l, "=")
			found := false
			for _, lp := range m.GetLabel() {
				if lp.GetName() == k && lp.GetValue() == want {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		}
	}
	return 0, false
}

// must is value for a series that has to be there.
func (s scrape) must(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	v, ok := s.value(name, labels...)
	if !ok {
		t.Fatalf("/metrics has no %s{%s}", name, strings.Join(labels, ","))
	}
	return v
}

// TestMetrics scrapes /metrics of a real three-node cluster with Redis, on
// the HTTP listener and on --metrics-addr, parses it with Prometheus's text
// parser, checks the names docs/operations.md lists, and that the counters
// move with traffic: committed, rejected, duplicate and parked writes through
// a follower, the HTTP requests by route pattern, the replay of the parked
// ones, the fsyncs, the Raft indexes and a consumer group's lag.
func TestMetrics(t *testing.T) {
	redis := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := startClusterWith(t, "--redis-addr="+redis.Addr, "--metrics-addr=127.0.0.1:0")
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	follower := aFollower(c, leader)
	fURL, lURL := c.URL(follower), c.URL(leader)

	before := scrapeMetrics(ctx, t, fURL+"/metrics")
	for _, name := range []string{
		"txlog_tx_total", "txlog_tx_duration_seconds", "txlog_http_requests_total", "txlog_http_request_duration_seconds",
		"txlog_intake_unresolved", "txlog_parked_total", "txlog_replayed_total", "txlog_redis_breaker_state",
		"txlog_raft_state", "txlog_raft_term", "txlog_raft_commit_index", "txlog_raft_applied_index",
		"txlog_raft_leader_changes_total", "txlog_raft_last_contact_seconds",
		"txlog_fsync_duration_seconds", "txlog_store_bytes", "txlog_disk_free_bytes", "txlog_disk_size_bytes",
		"txlog_intake_oldest_age_seconds", "txlog_leases_held",
		"txlog_txid_conflicts_total", "txlog_txid_reissued_total", "txlog_unreadable_records_total",
		"go_goroutines", "process_resident_memory_bytes", "raft_state_follower",
	} {
		if before[name] == nil {
			t.Errorf("/metrics of %s has no %s", follower, name)
		}
	}
	for _, o := range []string{"committed", "rejected", "parked", "duplicate", "unknown", "error"} {
		before.must(t, "txlog_tx_total", "outcome="+o)
	}
	for _, l := range []string{"raft", "intake", "store"} {
		before.must(t, "txlog_fsync_duration_seconds", "log="+l)
	}
	if v := before.must(t, "txlog_raft_state"); v != 0 {
		t.Errorf("follower %s: txlog_raft_state = %v, want 0", follower, v)
	}
	before.must(t, "txlog_raft_last_contact_seconds", "peer="+leader)
	if v := before.must(t, "txlog_redis_breaker_state"); v != 0 {
		t.Errorf("txlog_redis_breaker_state = %v, want 0 (closed)", v)
	}
	if v := before.must(t, "txlog_raft_leader_changes_total"); v < 1 {
		t.Errorf("txlog_raft_leader_changes_total = %v, want >= 1", v)
	}
	if v := before.must(t, "txlog_disk_free_bytes"); v <= 0 {
		t.Errorf("txlog_disk_free_bytes = %v, want > 0", v)
	}
	if free, size := before.must(t, "txlog_disk_free_bytes"), before.must(t, "txlog_disk_size_bytes"); size < free || size <= 0 {
		t.Errorf("txlog_disk_size_bytes = %v, want > 0 and >= txlog_disk_free_bytes %v", size, free)
	}
	// Nothing is parked before the traffic: no oldest.
	if v := before.must(t, "txlog_intake_oldest_age_seconds"); v != 0 {
		t.Errorf("txlog_intake_oldest_age_seconds = %v with nothing unresolved, want 0", v)
	}
	if v := before.must(t, "txlog_store_bytes"); v <= 0 {
		t.Errorf("txlog_store_bytes = %v, want > 0", v)
	}
	ls := scrapeMetrics(ctx, t, lURL+"/metrics")
	if v := ls.must(t, "txlog_raft_state"); v != 2 {
		t.Errorf("leader %s: txlog_raft_state = %v, want 2", leader, v)
	}
	ls.must(t, "txlog_raft_last_contact_seconds", "peer="+follower)

	// Traffic through the follower: n committed, one rejected, one duplicate,
	// one parked (ack=accepted: 202, the replayer commits it).
	const n = 20
	post := func(query, body string, want int) {
		t.Helper()
		if code, b := httpDo(ctx, t, http.MethodPost, fURL+"/v1/tx"+query, body); code != want {
			t.Fatalf("POST /v1/tx%s %s = %d %s, want %d", query, body, code, b, want)
		}
	}
	// 30 s: a slow fsync on a loaded machine must not park the write (202).
	const long = "?timeout=30s"
	for i := range n {
		post(long, fmt.Sprintf(`{"ops":[{"op":"put","key":"m/%d","value":%d}]}`, i, i), http.StatusOK)
	}
	post(long, `{"ops":[{"op":"put","key":"m/0","value":0,"if_version":99}]}`, http.StatusConflict)
	post(long, `{"idempotency_key":"m-dup","ops":[{"op":"put","key":"m/dup","value":1}]}`, http.StatusOK)
	post(long, `{"idempotency_key":"m-dup","ops":[{"op":"put","key":"m/dup","value":1}]}`, http.StatusOK)
	post("?ack=accepted", `{"ops":[{"op":"put","key":"m/parked","value":1}]}`, http.StatusAccepted)
	if code, b := httpDo(ctx, t, http.MethodPost, fURL+"/v1/consumers/g1/offset", `{"offset":1}`); code != http.StatusOK {
		t.Fatalf("POST /v1/consumers/g1/offset = %d %s, want 200", code, b)
	}
	get(ctx, t, fURL+"/v1/kv/m%2F0?consistency=stale")
	get(ctx, t, fURL+"/no/such/route")

	var after scrape
	waitUntil(ctx, t, "the parked write replayed and the offset applied", func() bool {
		after = scrapeMetrics(ctx, t, fURL+"/metrics")
		v, _ := after.value("txlog_replayed_total", "result=resolved")
		_, lag := after.value("txlog_consumer_lag", "group=g1")
		return v >= 1 && lag
	})
	moved := func(name string, by float64, labels ...string) {
		t.Helper()
		b, _ := before.value(name, labels...)
		a := after.must(t, name, labels...)
		if a-b < by {
			t.Errorf("%s{%s}: %v before, %v after, want it up by >= %v", name, strings.Join(labels, ","), b, a, by)
		}
	}
	exact := func(name string, by float64, labels ...string) {
		t.Helper()
		b, _ := before.value(name, labels...)
		if a := after.must(t, name, labels...); a-b != by {
			t.Errorf("%s{%s}: %v before, %v after, want it up by %v", name, strings.Join(labels, ","), b, a, by)
		}
	}
	exact("txlog_tx_total", n+2, "outcome=committed") // with the offset's commit
	exact("txlog_tx_total", 1, "outcome=rejected")
	exact("txlog_tx_total", 1, "outcome=duplicate")
	exact("txlog_tx_total", 1, "outcome=parked")
	exact("txlog_tx_total", 0, "outcome=error")
	exact("txlog_tx_duration_seconds", n+4, "ack=quorum")
	exact("txlog_tx_duration_seconds", 1, "ack=accepted")
	exact("txlog_parked_total", 1, "store=wal")
	exact("txlog_parked_total", 1, "store=redis")
	exact("txlog_http_requests_total", n+2, "route=/v1/tx", "code=200")
	exact("txlog_http_requests_total", 1, "route=/v1/tx", "code=409")
	exact("txlog_http_requests_total", 1, "route=/v1/tx", "code=202")
	exact("txlog_http_requests_total", 1, "route=/v1/kv/{key:.+}", "code=200")
	exact("txlog_http_requests_total", 1, "route=unmatched", "code=404")
	moved("txlog_http_request_duration_seconds", n+4, "route=/v1/tx")
	moved("txlog_raft_commit_index", n+2)
	moved("txlog_raft_applied_index", n+2)
	moved("txlog_fsync_duration_seconds", 1, "log=raft")
	moved("txlog_fsync_duration_seconds", 1, "log=intake")
	exact("txlog_http_requests_total", 1, "route=/v1/consumers/{group:.+}/offset", "code=200")
	applied := after.must(t, "txlog_raft_applied_index")
	if lag := after.must(t, "txlog_consumer_lag", "group=g1"); lag < n || lag > applied-1 {
		t.Errorf("txlog_consumer_lag{group=g1} = %v, want %v..%v (the applied index minus offset 1)", lag, float64(n), applied-1)
	}
	if f := after["txlog_http_requests_total"]; f != nil {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "route" && strings.Contains(l.GetValue(), "no/such") {
					t.Errorf("route label %q: a raw path, want the pattern", l.GetValue())
				}
			}
		}
	}

	// --metrics-addr serves the same registry on its own listener.
	b, err := os.ReadFile(filepath.Join(c.Dir(), follower, "metrics.addr"))
	if err != nil {
		t.Fatal(err)
	}
	side := scrapeMetrics(ctx, t, "http://"+strings.TrimSpace(string(b))+"/metrics")
	if v := side.must(t, "txlog_tx_total", "outcome=committed"); v < after.must(t, "txlog_tx_total", "outcome=committed") {
		t.Errorf("--metrics-addr: txlog_tx_total{committed} = %v, below the HTTP listener's", v)
	}
	if code, _ := get(ctx, t, "http://"+strings.TrimSpace(string(b))+"/v1/cluster"); code != http.StatusNotFound {
		t.Errorf("--metrics-addr GET /v1/cluster = %d, want 404 (it serves /metrics alone)", code)
	}
}
