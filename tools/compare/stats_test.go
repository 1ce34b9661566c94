package main

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	// 1..100 ms, shuffled: the p50 is 50 ms and the p99 99 ms by nearest rank.
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = ms(i + 1)
	}
	rand.Shuffle(len(hundred), func(i, j int) { hundred[i], hundred[j] = hundred[j], hundred[i] })
	// A long tail: 98 fast answers and two slow ones. A p99 that averaged or
	// took the rank below would miss the tail.
	tail := make([]time.Duration, 100)
	for i := range tail {
		tail[i] = ms(1)
	}
	tail[3], tail[70] = ms(500), ms(900)
	for _, tc := range []struct {
		name    string
		lat     []time.Duration
		p       float64
		want    time.Duration
		wantOK  bool
		wantBad bool
	}{
		{name: "p50 of 1..100", lat: hundred, p: 0.5, want: ms(50), wantOK: true},
		{name: "p99 of 1..100", lat: hundred, p: 0.99, want: ms(99), wantOK: true},
		{name: "p100 of 1..100", lat: hundred, p: 1, want: ms(100), wantOK: true},
		{name: "p99 with two slow of 100", lat: tail, p: 0.99, want: ms(500), wantOK: true},
		{name: "p50 with two slow of 100", lat: tail, p: 0.5, want: ms(1), wantOK: true},
		{name: "one sample", lat: []time.Duration{ms(7)}, p: 0.99, want: ms(7), wantOK: true},
		{name: "no samples", lat: nil, p: 0.5, wantOK: false},
		{name: "p 0", lat: []time.Duration{ms(1)}, p: 0, wantOK: false},
		{name: "p above 1", lat: []time.Duration{ms(1)}, p: 1.5, wantOK: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := percentile(tc.lat, tc.p)
			if ok != tc.wantOK || got != tc.want {
				t.Fatalf("percentile(%v) = %v, %v; want %v, %v", tc.p, got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestCPUPerTx(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	before := cpuSample{11: ms(100), 12: ms(200), 13: ms(300)}
	for _, tc := range []struct {
		name    string
		before  cpuSample
		after   cpuSample
		txs     int64
		want    float64 // µs per tx
		wantErr bool
	}{
		// 400+100+500 ms over 4000 tx: 250 µs each.
		{name: "three servers", before: before, after: cpuSample{11: ms(500), 12: ms(300), 13: ms(800)}, txs: 4000, want: 250},
		{name: "idle servers", before: before, after: before, txs: 10, want: 0},
		{name: "no transactions", before: before, after: before, txs: 0, wantErr: true},
		{name: "a server missing at the end", before: before, after: cpuSample{11: ms(500), 12: ms(300), 14: ms(800)}, txs: 10, wantErr: true},
		{name: "a server more at the end", before: before, after: cpuSample{11: ms(500), 12: ms(300), 13: ms(800), 14: ms(1)}, txs: 10, wantErr: true},
		{name: "a server's time went back", before: before, after: cpuSample{11: ms(500), 12: ms(100), 13: ms(800)}, txs: 10, wantErr: true},
		{name: "no servers", before: cpuSample{}, after: cpuSample{}, txs: 10, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cpuPerTx(tc.before, tc.after, tc.txs)
			if (err != nil) != tc.wantErr {
				t.Fatalf("cpuPerTx() error = %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr && math.Abs(got-tc.want) > 1e-9 {
				t.Fatalf("cpuPerTx() = %v µs, want %v", got, tc.want)
			}
		})
	}
	if _, err := cpuPerTx(before, before, 0); !errors.Is(err, errNoTransactions) {
		t.Fatalf("cpuPerTx(0 txs) error = %v, want errNoTransactions", err)
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		name string
		xs   []float64
		want float64
	}{
		{name: "odd", xs: []float64{9, 1, 5}, want: 5},
		{name: "even", xs: []float64{4, 1, 3, 2}, want: 2.5},
		{name: "one outlier", xs: []float64{100, 101, 10000}, want: 101},
		{name: "none", xs: nil, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			xs := append([]float64(nil), tc.xs...)
			if got := median(xs); got != tc.want {
				t.Fatalf("median(%v) = %v, want %v", tc.xs, got, tc.want)
			}
			for i := range xs {
				if xs[i] != tc.xs[i] {
					t.Fatalf("median changed its input: %v, was %v", xs, tc.xs)
				}
			}
		})
	}
}
