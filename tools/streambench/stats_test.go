package main

import (
	"math"
	"slices"
	"testing"
	"time"
)

func TestParseCounts(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		ok   bool
	}{
		{"0,1,0,10,0,100,0", []int{0, 1, 0, 10, 0, 100, 0}, true},
		{" 0 , 5 ", []int{0, 5}, true},
		{"1,0", []int{1, 0}, true},
		{"0,0", nil, false},     // no run with subscribers
		{"1,10", nil, false},    // no baseline
		{"0,-1", nil, false},    // negative
		{"0,x", nil, false},     // not a number
		{"0,,1", nil, false},    // empty field
		{"0,10001", nil, false}, // above the bound
		{"0,1.5", nil, false},   // not whole
		{"", nil, false},        // nothing
		{"0,1,0,10,0", []int{0, 1, 0, 10, 0}, true},
	} {
		got, err := parseCounts(tc.in, 10_000)
		if (err == nil) != tc.ok || tc.ok && !slices.Equal(got, tc.want) {
			t.Errorf("parseCounts(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestFractions(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name string
		subs []int
		tput []float64
		want []float64
	}{
		{"alternating: the mean of both neighbours",
			[]int{0, 1, 0, 10, 0}, []float64{1000, 900, 800, 600, 1200},
			[]float64{nan, 1, nan, 0.6, nan}},
		{"the last run: only the baseline before",
			[]int{0, 1, 0, 10}, []float64{1000, 500, 2000, 1000},
			[]float64{nan, 500.0 / 1500, nan, 0.5}},
		{"first run has subscribers: only the baseline after",
			[]int{10, 0}, []float64{300, 600},
			[]float64{0.5, nan}},
		{"the nearest baselines, not the others",
			[]int{0, 0, 1, 1, 0, 0}, []float64{1, 100, 50, 150, 200, 1},
			[]float64{nan, nan, 50.0 / 150, 1, nan, nan}},
		{"no baseline", []int{1, 10}, []float64{5, 5}, []float64{nan, nan}},
		{"baselines that measured nothing", []int{0, 1, 0}, []float64{0, 5, 0}, []float64{nan, nan, nan}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := fractions(tc.subs, tc.tput)
			if len(got) != len(tc.want) {
				t.Fatalf("fractions = %v, want %v", got, tc.want)
			}
			for i := range got {
				if math.IsNaN(tc.want[i]) != math.IsNaN(got[i]) || !math.IsNaN(got[i]) && math.Abs(got[i]-tc.want[i]) > 1e-9 {
					t.Errorf("fractions[%d] = %v, want %v (all: %v)", i, got[i], tc.want[i], got)
				}
			}
		})
	}
}

func TestPercentile(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		var d []time.Duration
		for _, n := range ns {
			d = append(d, time.Duration(n)*time.Millisecond)
		}
		return d
	}
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond // 1..100ms
	}
	for _, tc := range []struct {
		name string
		d    []time.Duration
		p    float64
		want time.Duration
	}{
		{"empty", nil, 99, 0},
		{"one", ms(7), 50, 7 * time.Millisecond},
		{"one, p99", ms(7), 99, 7 * time.Millisecond},
		{"p50 of 1..100 is the 50th", hundred, 50, 50 * time.Millisecond},
		{"p99 of 1..100 is the 99th, not the max", hundred, 99, 99 * time.Millisecond},
		{"p100 is the max", hundred, 100, 100 * time.Millisecond},
		{"p50 of two is the lower", ms(1, 9), 50, time.Millisecond},
		{"p99 of ten is the max", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 99, 10 * time.Millisecond},
		{"negative delays sort first", ms(-3, -1, 2, 4), 50, -time.Millisecond},
	} {
		if got := percentile(tc.d, tc.p); got != tc.want {
			t.Errorf("%s: percentile(%v, %v) = %v, want %v", tc.name, tc.d, tc.p, got, tc.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	d := []time.Duration{5, -2, 3, -7, 0, 1000}
	s := summarize(d)
	if s.n != 6 || s.negative != 2 || s.p50 != 0 || s.p99 != 1000 || s.max != 1000 {
		t.Errorf("summarize = %+v; want n 6, negative 2, p50 0, p99 1000, max 1000", s)
	}
	if !slices.IsSorted(d) {
		t.Errorf("summarize left %v unsorted", d)
	}
	if s := summarize(nil); s != (delaySummary{}) {
		t.Errorf("summarize(nil) = %+v, want zero", s)
	}
}
