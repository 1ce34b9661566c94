package wal

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
)

// BenchmarkAppend measures Append of 256-byte payloads with fsync on, from
// one writer and from 64 concurrent writers sharing fsyncs by group commit,
// into segments with zeros written ahead (the default) and without them
// (each sync then also writes the file's new size).
// It reports appends/s and appends/fsync (the mean group size).
func BenchmarkAppend(b *testing.B) {
	for _, bc := range []struct {
		writers  int
		prealloc int64
	}{{1, 0}, {1, -1}, {64, 0}, {64, -1}} {
		writers := bc.writers
		b.Run(fmt.Sprintf("writers=%d/zeros=%t", writers, bc.prealloc >= 0), func(b *testing.B) {
			l := openT(b, b.TempDir(), Config{PreallocBytes: bc.prealloc})
			payload := make([]byte, 256)
			ctx := context.Background()
			var n atomic.Int64
			syncs := l.w.syncs.Load() // Open's fsyncs are not the benchmark's
			b.SetBytes(int64(len(payload)))
			if writers == 1 {
				for b.Loop() {
					if _, err := l.Append(ctx, payload); err != nil {
						b.Fatal(err)
					}
					n.Add(1)
				}
			} else {
				// RunParallel starts parallelism*GOMAXPROCS goroutines.
				b.SetParallelism((writers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := l.Append(ctx, payload); err != nil {
							b.Error(err)
							return
						}
						n.Add(1)
					}
				})
				b.StopTimer()
			}
			b.ReportMetric(float64(n.Load())/b.Elapsed().Seconds(), "appends/s")
			if s := l.w.syncs.Load() - syncs; s > 0 {
				b.ReportMetric(float64(n.Load())/float64(s), "appends/fsync")
			}
		})
	}
}
