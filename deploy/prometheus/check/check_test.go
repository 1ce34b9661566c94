// Package check parses ../alerts.yml the way Prometheus loads it: the rule
// file format (rulefmt, with its template and duration checks) and every
// expression with the PromQL parser. It is its own module, so that
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
	"TxlogParkedOldest", "TxlogRedisBreakerOpen", "TxlogFsyncSlow", "TxlogDiskFreeLow"}

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
	seen := map[string]bool{}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			seen[r.Alert] = true
			if _, err := parser.NewParser(parser.Options{}).ParseExpr(r.Expr); err != nil {
				problems = append(problems, r.Alert+": "+err.Error())
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
	for _, p := range d.Panels {
		for _, q := range p.Targets {
			if _, err := parser.NewParser(parser.Options{}).ParseExpr(q.Expr); err != nil {
				t.Errorf("panel %q: %v", p.Title, err)
			}
		}
	}
}
