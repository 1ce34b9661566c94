package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"reflect"
	"testing"
)

// svgElements parses doc as XML and counts its elements by name and class
// ("circle.rss"); it fails the test on malformed XML.
func svgElements(t *testing.T, doc []byte) map[string]int {
	t.Helper()
	counts := map[string]int{}
	dec := xml.NewDecoder(bytes.NewReader(doc))
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return counts
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, doc)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		name := se.Name.Local
		counts[name]++
		for _, a := range se.Attr {
			if a.Name.Local == "class" {
				counts[name+"."+a.Value]++
			}
		}
	}
}

func sampleCheckpoints(n int) []checkpoint {
	var cps []checkpoint
	for i := range n {
		idx := uint64(i * 100_000)
		cp := checkpoint{LogIndex: idx, LogIndexEnd: idx + 20_000, Leader: "n1"}
		cp.Bench.TxPerSec = 2000 - float64(i)*50
		cp.Bench.Latency.P99 = 60 + float64(i)*3
		for j, id := range []string{"n1", "n2", "n3"} {
			cp.Nodes = append(cp.Nodes, nodeSample{ID: id, RSSBytes: int64(40+i*10+j) << 20, AnonBytes: int64(30+j) << 20})
		}
		cps = append(cps, cp)
	}
	return cps
}

func TestWriteSVG(t *testing.T) {
	tests := []struct {
		name        string
		checkpoints int
		reference   bool           // checkpoints past the first have a reference cluster's median
		want        map[string]int // element counts that must match
	}{
		{"eleven checkpoints", 11, false, map[string]int{"svg": 1, "circle.tput": 11, "circle.p99": 11, "circle.rss": 33, "circle.anon": 33, "polyline.rss": 3, "polyline.anon": 3}},
		{"one checkpoint", 1, false, map[string]int{"circle.tput": 1, "circle.p99": 1, "circle.rss": 3, "circle.anon": 3}},
		{"no checkpoints", 0, false, map[string]int{"svg": 1, "circle": 0, "polyline": 0}},
		{"with reference clusters", 4, true, map[string]int{"circle.tput": 4, "circle.ref": 4, "polyline.ref": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cps := sampleCheckpoints(tt.checkpoints)
			for i := 1; tt.reference && i < len(cps); i++ {
				cps[i].RefBench = &benchResult{TxPerSec: 2100}
			}
			var b bytes.Buffer
			if err := writeSVG(&b, cps); err != nil {
				t.Fatalf("writeSVG() error = %v", err)
			}
			got := svgElements(t, b.Bytes())
			for k, want := range tt.want {
				if got[k] != want {
					t.Errorf("%s elements = %d, want %d", k, got[k], want)
				}
			}
		})
	}
}

func TestWriteSVGEscapesNames(t *testing.T) {
	cps := sampleCheckpoints(2)
	for i := range cps {
		cps[i].Nodes[0].ID = `<n&1>`
	}
	var b bytes.Buffer
	if err := writeSVG(&b, cps); err != nil {
		t.Fatalf("writeSVG() error = %v", err)
	}
	svgElements(t, b.Bytes())
}

func TestNiceTicks(t *testing.T) {
	tests := []struct {
		max  float64
		want []float64
	}{
		{1_000_000, []float64{0, 200_000, 400_000, 600_000, 800_000, 1_000_000}},
		{1_020_000, []float64{0, 500_000, 1_000_000, 1_500_000}},
		{256, []float64{0, 100, 200, 300}},
		{7, []float64{0, 2, 4, 6, 8}},
		{0, []float64{0, 1}},
	}
	for _, tt := range tests {
		if got := niceTicks(tt.max); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("niceTicks(%v) = %v, want %v", tt.max, got, tt.want)
		}
	}
}

func TestCountLabel(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 0.1 * 3: "0.3", 1500: "1.5k", 200_000: "200k", 1_000_000: "1M", 64: "64"} {
		if got := countLabel(v); got != want {
			t.Errorf("countLabel(%v) = %q, want %q", v, got, want)
		}
	}
}
