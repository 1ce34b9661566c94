// Package check parses ../alerts.yml the way Prometheus loads it: the rule
// file format (rulefmt, with its template and duration checks) and every
// expression with the PromQL parser; every txlog_* metric the rules and the
// Grafana dashboard read must be in docs/operations.md's Metrics table. It is its own module, so that
// Prometheus's dependencies stay out of txlog's go.mod; run it with
// `cd deploy/prometheus/check && go test .`.
package check

import (
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

// wantAlerts are the rules txlogd evaluates itself (alert/rules.go).
var wantAlerts = []string{"TxlogNoLeader", "TxlogLeaderChanged", "TxlogMemberUnreachable", "TxlogParkedBacklog",
	"TxlogParkedOldest", "TxlogRedisBreakerOpen", "TxlogFsyncSlow", "TxlogDiskFreeLow", "TxlogBackupStale"}

// documented returns the metric names of docs/operations.md's Metrics table.
func documented(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile("../../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "| `txlog_"); ok {
			if name, _, ok := strings.Cut(rest, "`"); ok {
				names["txlog_"+name] = true
			}
		}
	}
	return names
}

// undocumented returns the txlog_* metrics expr reads that docs lacks (a
// histogram's _bucket, _sum and _count series count as the histogram).
func undocumented(expr parser.Expr, docs map[string]bool) []string {
	var out []string
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok || !strings.HasPrefix(vs.Name, "txlog_") {
			return nil
		}
		name := vs.Name
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(name, suf); ok && docs[base] {
				name = base
			}
		}
		if !docs[name] {
			out = append(out, vs.Name)
		}
		return nil
	})
	return out
}

func check(t *testing.T, content []byte) []string {
	t.Helper()
	groups, errs := rulefmt.Parse(content, false, model.LegacyValidation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	var problems []string
	for _, err := range errs {
		problems = append(problems, err.Error())
	}
	if groups == nil {
		return problems
	}
	seen, docs := map[string]bool{}, documented(t)
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			seen[r.Alert] = true
			expr, err := parser.NewParser(parser.Options{}).ParseExpr(r.Expr)
			if err != nil {
				problems = append(problems, r.Alert+": "+err.Error())
			} else if u := undocumented(expr, docs); len(u) > 0 {
				problems = append(problems, r.Alert+": metrics not in docs/operations.md: "+strings.Join(u, " "))
			}
			if !strings.Contains(r.Expr, "txlog_") {
				problems = append(problems, r.Alert+": uses no txlog metric")
			}
			if r.Labels["severity"] == "" {
				problems = append(problems, r.Alert+": no severity")
			}
		}
	}
	for _, a := range wantAlerts {
		if !seen[a] {
			problems = append(problems, a+": missing")
		}
	}
	return problems
}

func TestAlertsFile(t *testing.T) {
	b, err := os.ReadFile("../alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	if p := check(t, b); len(p) > 0 {
		t.Fatalf("alerts.yml:\n%s", strings.Join(p, "\n"))
	}
}

// TestCheckFailsOnBadRules: the check itself catches a broken expression, a
// bad duration and a missing rule.
func TestCheckFailsOnBadRules(t *testing.T) {
	bad := `groups:
  - name: txlog
    rules:
      - alert: TxlogNoLeader
        expr: max by (job) (txlog_raft_state < 2
        for: 5 seconds
        labels: {severity: critical}
`
	p := check(t, []byte(bad))
	parseErr := false
	for _, s := range p {
		parseErr = parseErr || !strings.HasSuffix(s, ": missing")
	}
	if !parseErr || len(p) < 2 {
		t.Fatalf("problems %v, want a parse error and missing rules", p)
	}
	// A metric txlogd does not document (a misspelt gauge).
	typo := `groups:
  - name: txlog
    rules:
      - alert: TxlogDiskFreeLow
        expr: txlog_disk_free_bytes / txlog_disk_sise_bytes < 0.10
        labels: {severity: critical}
`
	found := false
	for _, s := range check(t, []byte(typo)) {
		found = found || strings.Contains(s, "not in docs/operations.md: txlog_disk_sise_bytes")
	}
	if !found {
		t.Fatalf("problems %v, want txlog_disk_sise_bytes not documented", check(t, []byte(typo)))
	}
}

// TestDashboardQueries parses every query of ../../grafana/txlog.json.
func TestDashboardQueries(t *testing.T) {
	b, err := os.ReadFile("../../grafana/txlog.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Panels) == 0 {
		t.Fatal("no panels")
	}
	docs := documented(t)
	for _, p := range d.Panels {
		for _, q := range p.Targets {
			expr, err := parser.NewParser(parser.Options{}).ParseExpr(q.Expr)
			if err != nil {
				t.Errorf("panel %q: %v", p.Title, err)
			} else if u := undocumented(expr, docs); len(u) > 0 {
				t.Errorf("panel %q: metrics not in docs/operations.md: %v", p.Title, u)
			}
		}
	}
}
