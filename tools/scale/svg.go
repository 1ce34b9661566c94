package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// The plot: two panels above each other, sharing the x axis (log size).
// The top panel shows throughput (left axis) and p99 latency (right axis) of
// each measurement run; the bottom one each node's resident memory after it:
// VmRSS solid, its anonymous part (RssAnon: heap and stacks, not mapped
// files) dashed. Grey dashed lines mark the targets of issue 5.
const (
	svgWidth   = 720
	panelH     = 250 // height of one panel's plot area plus its margins
	marginL    = 70
	marginR    = 70
	marginT    = 36
	marginB    = 44
	plotW      = svgWidth - marginL - marginR
	plotH      = panelH - marginT - marginB
	colorTput  = "#1f77b4"
	colorP99   = "#d62728"
	colorGrid  = "#dddddd"
	colorGoal  = "#888888"
	pointR     = 3
	svgFontCSS = "font-family:sans-serif;font-size:12px"
)

// nodeColors are the colors of the nodes' lines in the memory panel, in
// node order, reused when there are more nodes.
var nodeColors = []string{"#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2"}

// writeSVG draws cps as a self-contained SVG document.
func writeSVG(w io.Writer, cps []checkpoint) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" style="%s">`+"\n",
		svgWidth, 2*panelH, svgWidth, 2*panelH, svgFontCSS)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")

	var xMax float64
	for _, cp := range cps {
		xMax = max(xMax, float64(cp.LogIndex), float64(cp.LogIndexEnd))
	}
	xTicks := niceTicks(xMax)
	xs := scale{max: xTicks[len(xTicks)-1], from: marginL, to: marginL + plotW}

	// Top panel: throughput and p99.
	var tputMax, p99Max float64
	for _, cp := range cps {
		tputMax = max(tputMax, cp.Bench.TxPerSec)
		if cp.RefBench != nil {
			tputMax = max(tputMax, cp.RefBench.TxPerSec)
		}
		p99Max = max(p99Max, cp.Bench.Latency.P99)
	}
	tTicks, pTicks := niceTicks(tputMax), niceTicks(p99Max)
	top := panel{b: &b, y0: 0, x: xs, xTicks: xTicks}
	ty := top.yScale(tTicks[len(tTicks)-1])
	py := top.yScale(pTicks[len(pTicks)-1])
	top.frame("throughput and p99 latency vs. log size", "tx/s", "p99 ms")
	top.leftTicks(ty, tTicks, colorTput)
	top.rightTicks(py, pTicks)
	if len(cps) > 0 && cps[0].Bench.TxPerSec > 0 {
		goal := targetThroughputRatio * cps[0].Bench.TxPerSec
		top.hline(ty.at(goal), fmt.Sprintf("%.0f%% of empty", targetThroughputRatio*100))
	}
	var tput, ref, p99 []point
	for i, cp := range cps {
		x := xs.at(float64(cp.LogIndex))
		tput = append(tput, point{x, ty.at(cp.Bench.TxPerSec)})
		p99 = append(p99, point{x, py.at(cp.Bench.Latency.P99)})
		switch {
		case cp.RefBench != nil:
			ref = append(ref, point{x, ty.at(cp.RefBench.TxPerSec)})
		case i == 0: // the empty log is its own reference
			ref = append(ref, point{x, ty.at(cp.Bench.TxPerSec)})
		}
	}
	top.series("tput", colorTput, false, tput)
	names, tcolors := []string{"tx/s", "p99 ms"}, []string{colorTput, colorP99}
	if len(ref) > 1 {
		top.series("ref", colorTput, true, ref)
		names[0] = "tx/s (dashed: empty cluster)"
	}
	top.series("p99", colorP99, false, p99)
	top.legend(names, tcolors)

	// Bottom panel: RSS per node, always tall enough to show the target.
	rssMax := float64(targetRSSBytes) / mib
	var ids []string
	for _, cp := range cps {
		for _, n := range cp.Nodes {
			rssMax = max(rssMax, float64(n.RSSBytes)/mib)
		}
		if len(cp.Nodes) > len(ids) {
			ids = ids[:0]
			for _, n := range cp.Nodes {
				ids = append(ids, n.ID)
			}
		}
	}
	rTicks := niceTicks(rssMax)
	bottom := panel{b: &b, y0: panelH, x: xs, xTicks: xTicks}
	ry := bottom.yScale(rTicks[len(rTicks)-1])
	bottom.frame("memory per node vs. log size: RSS solid, anonymous dashed", "MiB", "")
	bottom.leftTicks(ry, rTicks, "black")
	bottom.hline(ry.at(float64(targetRSSBytes)/mib), fmt.Sprintf("target %d MiB", targetRSSBytes/mib))
	var colors []string
	for i, id := range ids {
		color := nodeColors[i%len(nodeColors)]
		colors = append(colors, color)
		var rss, anon []point
		for _, cp := range cps {
			for _, n := range cp.Nodes {
				if n.ID == id {
					x := xs.at(float64(cp.LogIndexEnd))
					rss = append(rss, point{x, ry.at(float64(n.RSSBytes) / mib)})
					anon = append(anon, point{x, ry.at(float64(n.AnonBytes) / mib)})
				}
			}
		}
		bottom.series("rss", color, false, rss)
		bottom.series("anon", color, true, anon)
	}
	bottom.legend(ids, colors)

	b.WriteString("</svg>\n")
	_, err := w.Write(b.Bytes())
	return err
}

// point is a position in SVG user units.
type point struct{ x, y float64 }

// scale maps [0, max] onto [from, to].
type scale struct {
	max, from, to float64
}

func (s scale) at(v float64) float64 {
	if s.max <= 0 {
		return s.from
	}
	return s.from + (s.to-s.from)*v/s.max
}

// panel draws one plot area, its top edge at y0.
type panel struct {
	b      *bytes.Buffer
	y0     float64
	x      scale
	xTicks []float64
}

func (p panel) top() float64    { return p.y0 + marginT }
func (p panel) bottom() float64 { return p.y0 + marginT + plotH }

func (p panel) yScale(max float64) scale {
	return scale{max: max, from: p.bottom(), to: p.top()}
}

// frame draws the title, the axes, the x ticks with their grid and the axis
// labels; right is the right axis's label, "" for none.
func (p panel) frame(title, left, right string) {
	fmt.Fprintf(p.b, `<text x="%d" y="%s" font-size="14" font-weight="bold">%s</text>`+"\n",
		marginL, num(p.y0+20), esc(title))
	for _, t := range p.xTicks {
		x := p.x.at(t)
		fmt.Fprintf(p.b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s"/>`+"\n",
			num(x), num(p.top()), num(x), num(p.bottom()), colorGrid)
		fmt.Fprintf(p.b, `<text x="%s" y="%s" text-anchor="middle">%s</text>`+"\n",
			num(x), num(p.bottom()+16), esc(countLabel(t)))
	}
	fmt.Fprintf(p.b, `<rect x="%d" y="%s" width="%d" height="%d" fill="none" stroke="black"/>`+"\n",
		marginL, num(p.top()), plotW, plotH)
	fmt.Fprintf(p.b, `<text x="%d" y="%s" text-anchor="middle">log size (Raft entries ≈ transactions)</text>`+"\n",
		marginL+plotW/2, num(p.bottom()+34))
	fmt.Fprintf(p.b, `<text x="%d" y="%s" text-anchor="end">%s</text>`+"\n",
		marginL-8, num(p.top()-8), esc(left))
	if right != "" {
		fmt.Fprintf(p.b, `<text x="%d" y="%s">%s</text>`+"\n",
			marginL+plotW+8, num(p.top()-8), esc(right))
	}
}

func (p panel) leftTicks(s scale, ticks []float64, color string) {
	for _, t := range ticks {
		y := s.at(t)
		fmt.Fprintf(p.b, `<line x1="%d" y1="%s" x2="%d" y2="%s" stroke="%s"/>`+"\n",
			marginL, num(y), marginL+plotW, num(y), colorGrid)
		fmt.Fprintf(p.b, `<text x="%d" y="%s" fill="%s" text-anchor="end">%s</text>`+"\n",
			marginL-6, num(y+4), color, esc(countLabel(t)))
	}
}

func (p panel) rightTicks(s scale, ticks []float64) {
	for _, t := range ticks {
		fmt.Fprintf(p.b, `<text x="%d" y="%s" fill="%s">%s</text>`+"\n",
			marginL+plotW+6, num(s.at(t)+4), colorP99, esc(countLabel(t)))
	}
}

// hline draws a dashed horizontal line at y across the plot, labelled.
func (p panel) hline(y float64, label string) {
	if y < p.top() || y > p.bottom() {
		return
	}
	fmt.Fprintf(p.b, `<line x1="%d" y1="%s" x2="%d" y2="%s" stroke="%s" stroke-dasharray="6 4"/>`+"\n",
		marginL, num(y), marginL+plotW, num(y), colorGoal)
	fmt.Fprintf(p.b, `<text x="%d" y="%s" fill="%s" text-anchor="end">%s</text>`+"\n",
		marginL+plotW-4, num(y-4), colorGoal, esc(label))
}

// series draws a line through pts, dashed and thinner when dashed, with a
// dot of class class on each point.
func (p panel) series(class, color string, dashed bool, pts []point) {
	if len(pts) == 0 {
		return
	}
	coords := make([]string, len(pts))
	for i, q := range pts {
		coords[i] = num(q.x) + "," + num(q.y)
	}
	style, r := `stroke-width="2"`, pointR
	if dashed {
		style, r = `stroke-width="1.5" stroke-dasharray="5 3"`, pointR-1
	}
	fmt.Fprintf(p.b, `<polyline class="%s" points="%s" fill="none" stroke="%s" %s/>`+"\n",
		class, strings.Join(coords, " "), color, style)
	for _, q := range pts {
		fmt.Fprintf(p.b, `<circle class="%s" cx="%s" cy="%s" r="%d" fill="%s"/>`+"\n",
			class, num(q.x), num(q.y), r, color)
	}
}

// legend writes the names in their colors along the panel's top edge, right-aligned.
func (p panel) legend(names, colors []string) {
	x := float64(marginL + plotW)
	for i := len(names) - 1; i >= 0; i-- {
		fmt.Fprintf(p.b, `<text x="%s" y="%s" fill="%s" text-anchor="end" font-weight="bold">%s</text>`+"\n",
			num(x), num(p.y0+20), colors[i], esc(names[i]))
		x -= float64(8*len(names[i]) + 16)
	}
}

// niceTicks returns ticks 0, s, 2s, ... up to the first one at or above max,
// with s 1, 2 or 5 times a power of ten, for about five intervals. For max <= 0
// it returns 0 and 1.
func niceTicks(max float64) []float64 {
	if !(max > 0) || math.IsInf(max, 0) {
		return []float64{0, 1}
	}
	raw := max / 5
	pow := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * pow
	for _, m := range []float64{1, 2, 5} {
		if m*pow >= raw {
			step = m * pow
			break
		}
	}
	n := int(math.Ceil(max/step - 1e-9))
	ticks := make([]float64, n+1)
	for i := range ticks {
		ticks[i] = float64(i) * step
	}
	return ticks
}

// countLabel writes v shortly, to four significant digits: 1500 as 1.5k,
// 1000000 as 1M, 0.30000000000000004 as 0.3.
func countLabel(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'g', 4, 64) + "M"
	case a >= 1e3:
		return strconv.FormatFloat(v/1e3, 'g', 4, 64) + "k"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// num writes a coordinate with one decimal.
func num(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// esc escapes s for XML text.
func esc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}
