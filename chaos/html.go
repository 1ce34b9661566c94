package chaos

import (
	"fmt"
	"html"
	"html/template"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"time"
)

// WriteHTML writes the report as a self-contained HTML page to path: the
// verdicts, a timeline of faults, the leader over time, and answers and errors
// per second, drawn as inline SVG. It needs no network and no script.
func (r *Report) WriteHTML(path string) error {
	r.number()
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write html report: %w", err)
	}
	data := struct {
		*Report
		Verdict  string
		Timeline template.HTML
		Counts   [][2]string
	}{Report: r, Verdict: "PASS", Timeline: template.HTML(r.timelineSVG())}
	if r.Failed() {
		data.Verdict = "FAIL"
	}
	c := r.Counts
	data.Counts = [][2]string{
		{"operations", fmt.Sprint(c.Total)}, {"writes", fmt.Sprint(c.Writes)}, {"reads", fmt.Sprint(c.Reads)},
		{"200 committed", fmt.Sprint(c.OK)}, {"202 accepted", fmt.Sprint(c.Accepted)}, {"409 rejected", fmt.Sprint(c.Rejected)},
		{"indeterminate", fmt.Sprint(c.Indeterminate)}, {"never learned (log decided)", fmt.Sprint(c.StillUnknown)},
		{"read errors", fmt.Sprint(c.ReadErrors)}, {"leader SIGKILLs", fmt.Sprint(r.LeaderKills)}, {"faults", fmt.Sprint(len(r.Faults))},
		{"power losses", fmt.Sprint(r.PowerLosses)}, {"nodes that could not restart", fmt.Sprint(r.NotRestarted)},
	}
	if l := r.Leases; l != nil {
		st := l.Stats
		data.Counts = append(data.Counts,
			[2]string{"lease grants", fmt.Sprint(st.Grants)}, [2]string{"lease renewals (fenced)", fmt.Sprintf("%d (%d)", st.Renewals, st.RenewsFenced)},
			[2]string{"fenced writes applied / refused", fmt.Sprintf("%d / %d", st.Applied, st.Refused)},
			[2]string{"paused holders (late writes, all refused)", fmt.Sprintf("%d (%d)", st.Pauses, st.LateWrites)})
	}
	if c := r.Consumers; c != nil {
		st := c.Stats
		data.Counts = append(data.Counts,
			[2]string{"consumer source entries / projected", fmt.Sprintf("%d / %d", st.Source, st.Projected)},
			[2]string{"consumer batches, offset commits (terms)", fmt.Sprintf("%d, %d (%d)", c.Batches, st.Commits, st.Terms)},
			[2]string{"consumer late writes / fenced-out entries refused", fmt.Sprintf("%d / %d", c.LateWrites, st.Refused)},
			[2]string{"paused consumers", fmt.Sprint(c.Pauses)})
	}
	if err := reportPage.Execute(f, data); err != nil {
		f.Close()
		return fmt.Errorf("write html report: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write html report: %w", err)
	}
	return nil
}

// faultColors gives each fault kind its color on the timeline.
var faultColors = map[Fault]string{
	FaultKillLeader: "#d62728", FaultKillFollower: "#ff9896", FaultPauseLeader: "#9467bd",
	FaultPartitionLeader: "#8c564b", FaultPartitionOneWay: "#c49c94", FaultRedisOutage: "#e377c2",
	FaultTermLeader: "#17becf", FaultQuorumLoss: "#000000", FaultPauseHolder: "#bcbd22",
	FaultPauseConsumer: "#7f7f7f",
}

var nodeColors = []string{"#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2"}

// timelineSVG draws faults, leaders and answers per second on one time axis.
func (r *Report) timelineSVG() string {
	const (
		width, left  = 1100.0, 110.0
		faultY, rowH = 20.0, 14.0
		chartH       = 160.0
	)
	secs := max(r.Duration.Seconds(), 1)
	x := func(t time.Time) float64 { return left + (width-left-10)*t.Sub(r.Started).Seconds()/secs }
	xs := func(s float64) float64 { return left + (width-left-10)*s/secs }

	var b strings.Builder
	// Faults: one row per kind.
	var kinds []Fault
	for _, k := range AllFaults {
		if slices.ContainsFunc(r.Faults, func(f FaultEvent) bool { return f.Kind == k }) {
			kinds = append(kinds, k)
		}
	}
	y := faultY
	for _, k := range kinds {
		fmt.Fprintf(&b, `<text x="4" y="%.1f" class="lbl">%s</text>`, y+rowH-3, html.EscapeString(string(k)))
		for _, f := range r.Faults {
			if f.Kind != k || f.Injected.IsZero() {
				continue
			}
			end := f.Recovered
			if end.IsZero() {
				end = f.Healed
			}
			w := max(x(end)-x(f.Injected), 2)
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s on %s at +%v: healed +%v, recovered +%v %s</title></rect>`,
				x(f.Injected), y, w, rowH-2, faultColors[k], html.EscapeString(string(k)), html.EscapeString(strings.Join(f.Nodes, ",")),
				f.Injected.Sub(r.Started).Round(time.Millisecond), f.Healed.Sub(r.Started).Round(time.Millisecond),
				f.Recovered.Sub(r.Started).Round(time.Millisecond), html.EscapeString(f.Err))
		}
		y += rowH
	}
	// Leader: one band, colored by node.
	y += 8
	fmt.Fprintf(&b, `<text x="4" y="%.1f" class="lbl">leader</text>`, y+rowH-3)
	colorOf := map[string]string{}
	for i, l := range r.Leaders {
		if l.Leader != "" && colorOf[l.Leader] == "" {
			colorOf[l.Leader] = nodeColors[len(colorOf)%len(nodeColors)]
		}
		end := r.Started.Add(r.Duration)
		if i+1 < len(r.Leaders) {
			end = r.Leaders[i+1].At
		}
		color, name := "#dddddd", "none"
		if l.Leader != "" {
			color, name = colorOf[l.Leader], l.Leader
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s (term %d) from +%v</title></rect>`,
			x(l.At), y, max(x(end)-x(l.At), 0.5), rowH-2, color, html.EscapeString(name), l.Term, l.At.Sub(r.Started).Round(time.Millisecond))
	}
	y = legend(&b, y+rowH, slices.Sorted(maps.Keys(colorOf)), func(id string) string { return colorOf[id] })
	y = r.leaseRows(&b, y, x)
	y = r.consumerRow(&b, y, x)

	// Answers per second, with a y axis in answers/s and ticks at a round
	// step.
	peak := 1
	for _, bk := range r.Series {
		peak = max(peak, bk.OK, bk.Accepted, bk.Rejected, bk.Reads, bk.Errors)
	}
	yStep := niceStep(peak, 4)
	yMax := ((peak + yStep - 1) / yStep) * yStep
	top := y
	base := top + chartH
	yv := func(v int) float64 { return base - chartH*float64(v)/float64(yMax) }
	fmt.Fprintf(&b, `<text x="4" y="%.1f" class="lbl">answers/s</text>`, top+chartH/2)
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999" class="yaxis"/>`, left, top, left, base)
	for v := 0; v <= yMax; v += yStep {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999"/><text x="%.1f" y="%.1f" class="lbl ytick" text-anchor="end">%d/s</text>`,
			left, yv(v), width-10, yv(v), left-4, yv(v), left, yv(v), left-6, yv(v)+4, v)
	}
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999"/>`, left, base, width-10, base)
	lines := []struct {
		name, color string
		val         func(Bucket) int
	}{
		{"200", "#2ca02c", func(b Bucket) int { return b.OK }},
		{"202", "#1f77b4", func(b Bucket) int { return b.Accepted }},
		{"409", "#ff7f0e", func(b Bucket) int { return b.Rejected }},
		{"reads", "#999999", func(b Bucket) int { return b.Reads }},
		{"errors", "#d62728", func(b Bucket) int { return b.Errors }},
	}
	for i, l := range lines {
		var pts []string
		for _, bk := range r.Series {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", xs(float64(bk.T)+0.5), yv(l.val(bk))))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`, l.color, strings.Join(pts, " "))
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="10" height="10" fill="%s"/><text x="%.1f" y="%.1f" class="lbl">%s</text>`,
			left+float64(i)*70, base+30, l.color, left+float64(i)*70+14, base+39, l.name)
	}
	// Time axis, shared by every row above: ticks in seconds since the start.
	axisY := base + 14
	step := niceStep(int(secs), 10)
	for s := 0; float64(s) <= secs; s += step {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999"/><text x="%.1f" y="%.1f" class="lbl xtick" text-anchor="middle">%ds</text>`,
			xs(float64(s)), faultY, xs(float64(s)), base, xs(float64(s)), base, xs(float64(s)), base+4, xs(float64(s)), axisY, s)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" class="lbl" text-anchor="end">time since the start (s)</text>`, width-10, base+39)
	axisY = base + 44
	return fmt.Sprintf(`<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f">%s</svg>`, width, axisY+10, b.String())
}

// niceStep returns a round step (1, 2 or 5 times a power of ten) that cuts
// 0..peak into at most about n ticks.
func niceStep(peak, n int) int {
	raw := max(float64(peak)/float64(max(n, 1)), 1)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return int(m * p)
		}
	}
	return int(10 * p)
}

// leaseRows draws one row per lease of the lease workload, from y, with its
// holders' spans colored by contender, and returns the y below them.
func (r *Report) leaseRows(b *strings.Builder, y float64, x func(time.Time) float64) float64 {
	const rowH = 14.0
	if r.Leases == nil {
		return y
	}
	ids, color := spanColors(r.Leases.Spans, func(s LeaseSpan) string { return s.Contender })
	for i, name := range r.Leases.Leases {
		fmt.Fprintf(b, `<text x="4" y="%.1f" class="lbl">lease %d</text>`, y+rowH-3, i)
		for _, s := range r.Leases.Spans {
			if s.Lease != name {
				continue
			}
			fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s holds %s with token %d from +%v to +%v</title></rect>`,
				x(s.From), y, max(x(s.To)-x(s.From), 0.5), rowH-2, color(s.Contender), html.EscapeString(s.Contender), html.EscapeString(name),
				s.Token, s.From.Sub(r.Started).Round(time.Millisecond), s.To.Sub(r.Started).Round(time.Millisecond))
		}
		y += rowH
	}
	return legend(b, y, ids, color)
}

// consumerRow draws the consumer workload's row from y: each consumer's
// terms colored by consumer, and returns the y below it.
func (r *Report) consumerRow(b *strings.Builder, y float64, x func(time.Time) float64) float64 {
	const rowH = 14.0
	if r.Consumers == nil {
		return y
	}
	ids, color := spanColors(r.Consumers.Spans, func(s ConsumerSpan) string { return s.Consumer })
	fmt.Fprintf(b, `<text x="4" y="%.1f" class="lbl">consumers</text>`, y+rowH-3)
	for _, s := range r.Consumers.Spans {
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s consumes with token %d from +%v to +%v</title></rect>`,
			x(s.From), y, max(x(s.To)-x(s.From), 2), rowH-2, color(s.Consumer), html.EscapeString(s.Consumer),
			s.Token, s.From.Sub(r.Started).Round(time.Millisecond), s.To.Sub(r.Started).Round(time.Millisecond))
	}
	y += rowH
	return legend(b, y, ids, color)
}

// spanColors returns the holders of spans (id names a span's), distinct
// and sorted, and a color of nodeColors for each.
func spanColors[S any](spans []S, id func(S) string) ([]string, func(string) string) {
	var ids []string
	for _, s := range spans {
		if !slices.Contains(ids, id(s)) {
			ids = append(ids, id(s))
		}
	}
	slices.Sort(ids)
	return ids, func(id string) string { return nodeColors[slices.Index(ids, id)%len(nodeColors)] }
}

// legend draws a legend row from y, a swatch of its color and the name of
// each of ids, and returns the y below it.
func legend(b *strings.Builder, y float64, ids []string, color func(string) string) float64 {
	const left, step, padding = 110.0, 60.0, 18.0
	for i, id := range ids {
		lx := left + float64(i)*step
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="10" height="10" fill="%s"/><text x="%.1f" y="%.1f" class="lbl">%s</text>`,
			lx, y+4, color(id), lx+14, y+13, html.EscapeString(id))
	}
	return y + padding + 8
}

var reportPage = template.Must(template.New("report").Funcs(template.FuncMap{
	"ms": ms,
	"at": func(start, t time.Time) string {
		if t.IsZero() {
			return "–"
		}
		return "+" + t.Sub(start).Round(time.Millisecond).String()
	},
	"join":       strings.Join,
	"inc":        func(i int) int { return i + 1 },
	"faultNames": faultNames,
}).Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>txlog chaos {{.Verdict}} seed {{.Seed}}</title>
<style>
body{font:14px system-ui,sans-serif;margin:24px;color:#222}
h1 .PASS{color:#2ca02c} h1 .FAIL{color:#d62728}
table{border-collapse:collapse;margin:8px 0 20px}
td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4} .lbl{font:11px system-ui,sans-serif;fill:#333}
.pass{color:#2ca02c;font-weight:bold} .fail{color:#d62728;font-weight:bold}
pre{margin:0;white-space:pre-wrap;font-size:12px}
</style></head><body>
<h1>txlog chaos: <span class="{{.Verdict}}">{{.Verdict}}</span></h1>
<p>Seed {{.Seed}} · {{.Mode}} cluster · Redis {{.Redis}} · started {{.Started.Format "2006-01-02 15:04:05"}} · ran {{ms .Duration}} · files in {{.Dir}}</p>
<h2>Checkers</h2>
<table><tr><th>#</th><th>checker</th><th>verdict</th><th>summary and evidence</th></tr>
{{range $c := .Checks}}<tr><td>{{$c.Number}}</td><td>{{$c.Name}}</td><td>{{if $c.Pass}}<span class="pass">PASS</span>{{else}}<span class="fail">FAIL</span>{{end}}</td>
<td>{{$c.Summary}}{{if $c.Evidence}}<pre>{{join $c.Evidence "\n"}}</pre>{{end}}{{range $c.Files}}<br>see {{.}}{{end}}</td></tr>
{{end}}</table>
<p id="never-injected">Fault kinds never injected: {{if .FaultsNeverInjected}}{{len .FaultsNeverInjected}} of {{len .FaultsConfigured}} configured: {{faultNames .FaultsNeverInjected}}{{else}}none (of {{len .FaultsConfigured}} configured){{end}}</p>
<h2>Timeline</h2>
{{.Timeline}}
<h2>Operations</h2>
<table>{{range .Counts}}<tr><th>{{index . 0}}</th><td>{{index . 1}}</td></tr>{{end}}</table>
<h2>Unavailability per fault</h2>
<table><tr><th>fault</th><th>count</th><th>to 200 p50</th><th>max</th><th>to 202 p50</th><th>max</th><th>new leader p50</th><th>max</th><th>recovered p50</th><th>max</th><th>failed</th></tr>
{{range .FaultStats}}<tr><td>{{.Kind}}</td><td>{{.Count}}</td><td>{{ms .To200P50}}</td><td>{{ms .To200Max}}</td><td>{{ms .To202P50}}</td><td>{{ms .To202Max}}</td><td>{{ms .ElectionP50}}</td><td>{{ms .ElectionMax}}</td><td>{{ms .RecoveryP50}}</td><td>{{ms .RecoveryMax}}</td><td>{{.Failed}}</td></tr>
{{end}}</table>
<p>"to 200" is the time from the injection until the first 200 to a write sent after it; "to 202" the same for 202.</p>
<h2>Faults</h2>
<table><tr><th>#</th><th>fault</th><th>nodes</th><th>leader</th><th>injected</th><th>healed</th><th>recovered</th><th>new leader</th><th>after</th><th>error</th></tr>
{{$s := .Started}}{{range $i, $f := .Faults}}<tr><td>{{inc $i}}</td><td>{{$f.Kind}}</td><td>{{join $f.Nodes ","}}</td><td>{{$f.Leader}}</td><td>{{at $s $f.Injected}}</td><td>{{at $s $f.Healed}}</td><td>{{at $s $f.Recovered}}</td><td>{{$f.NewLeader}}</td><td>{{ms $f.Election}}</td><td>{{$f.Err}}</td></tr>
{{end}}</table>
</body></html>
`))
