package replication

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metrics "github.com/armon/go-metrics"

	"github.com/txlog/txlog/store"
	"github.com/txlog/txlog/txid"
)

// BenchmarkCommit measures what Raft and the store cost without HTTP: three
// servers in this process on loopback TCP, each with a real store (without
// per-batch fsync, as node runs it) and its Raft log fsynced, and clients
// proposing single-op transactions with 256-byte values on the leader. It
// reports the median and 99th percentile commit latency (propose to applied on
// the leader), the commits per second, and the process's CPU time (the three
// servers' and the clients') per commit. Compare log stores and client counts
// within one run, not absolute numbers across machines:
//
//	go test -run x -bench BenchmarkCommit -benchtime 3s ./replication/
//
// append=serial is hashicorp/raft's own order (Config.SerialLeaderAppend),
// append=parallel the default.
func BenchmarkCommit(b *testing.B) {
	for _, kind := range []string{LogStoreBolt, LogStoreWAL} {
		for _, clients := range []int{1, 64} {
			for _, serial := range []bool{false, true} {
				name := fmt.Sprintf("log=%s/clients=%d/append=parallel", kind, clients)
				if serial {
					name = fmt.Sprintf("log=%s/clients=%d/append=serial", kind, clients)
				}
				b.Run(name, func(b *testing.B) {
					benchCommit(b, kind, clients, serial)
				})
			}
		}
	}
}

func benchCommit(b *testing.B, kind string, clients int, serial bool) {
	var sink *metrics.InmemSink
	if os.Getenv("TXLOG_BENCH_METRICS") != "" {
		// Raft's own timings of each stage, printed at the end.
		sink = metrics.NewInmemSink(time.Hour, time.Hour)
		cfg := metrics.DefaultConfig("")
		cfg.EnableHostname, cfg.EnableRuntimeMetrics, cfg.EnableServiceLabel = false, false, false
		if _, err := metrics.NewGlobal(cfg, sink); err != nil {
			b.Fatal(err)
		}
	}
	l := benchCluster(b, kind, serial)
	value := []byte(`"` + strings.Repeat("v", 254) + `"`)
	var (
		mu   sync.Mutex
		lats []time.Duration
		seq  uint64
	)
	next := func() []byte {
		mu.Lock()
		seq++
		n := seq
		mu.Unlock()
		payload := store.EncodeTx(store.Tx{
			ID:             txid.ID(n<<12 | 1),
			IdempotencyKey: fmt.Sprintf("bench-%d", n),
			Ops:            []store.Op{{Kind: store.OpPut, Key: fmt.Sprintf("key-%d", n%100000), Value: value}},
		})
		return store.EncodeCommand(store.Command{Kind: store.KindTx, Time: time.Now().UnixNano(), DedupWindow: time.Hour, Payload: payload})
	}
	ctx := context.Background()
	b.ResetTimer()
	cpu := cpuTime()
	var wg sync.WaitGroup
	per := (b.N + clients - 1) / clients
	for range clients {
		wg.Go(func() {
			own := make([]time.Duration, 0, per)
			for range per {
				data := next()
				start := time.Now()
				a := l.ApplyMany(ctx, [][]byte{data})[0]
				if a.Err != nil || a.Result.Err != nil {
					b.Errorf("apply: %v %v", a.Err, a.Result.Err)
					return
				}
				own = append(own, time.Since(start))
			}
			mu.Lock()
			lats = append(lats, own...)
			mu.Unlock()
		})
	}
	wg.Wait()
	cpu = cpuTime() - cpu
	b.StopTimer()
	if len(lats) == 0 {
		return
	}
	slices.Sort(lats)
	b.ReportMetric(float64(lats[len(lats)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lats[len(lats)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(len(lats))/b.Elapsed().Seconds(), "commits/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(len(lats)), "cpu-µs/commit")
	b.ReportMetric(0, "ns/op")
	if sink != nil {
		for _, iv := range sink.Data() {
			names := slices.Sorted(maps.Keys(iv.Samples))
			for _, name := range names {
				s := iv.Samples[name]
				fmt.Fprintf(os.Stderr, "%-60s n=%-7d mean=%7.3fms max=%7.3fms\n", name, s.Count, s.AggregateSample.Mean(), s.Max)
			}
		}
	}
}

// benchCluster starts three servers with real stores and returns the leader.
func benchCluster(b *testing.B, kind string, serial bool) *Raft {
	b.Helper()
	var addrs []string
	var ls []net.Listener
	for range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		ls = append(ls, ln)
		addrs = append(addrs, ln.Addr().String())
	}
	for _, ln := range ls {
		ln.Close()
	}
	var boot []Server
	for i, a := range addrs {
		boot = append(boot, Server{ID: fmt.Sprintf("n%d", i+1), Addr: a})
	}
	var rafts []*Raft
	for i, a := range addrs {
		dir := b.TempDir()
		db, err := store.Open(filepath.Join(dir, "state.db"), store.Config{NoSync: true})
		if err != nil {
			b.Fatal(err)
		}
		r, err := Open(Config{
			ID:        boot[i].ID,
			Dir:       filepath.Join(dir, "raft"),
			BindAddr:  a,
			Bootstrap: boot,
			LogStore:  kind,
			Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),

			SerialLeaderAppend: serial,
		}, db)
		if err != nil {
			b.Fatal(err)
		}
		rafts = append(rafts, r)
		b.Cleanup(func() {
			r.Close()
			db.Close()
		})
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, r := range rafts {
			if id, _ := r.Leader(); id != "" && id == r.id {
				// Wait for the leader's first barrier, so that the run measures commits only.
				if err := r.raft.Barrier(10 * time.Second).Error(); err != nil {
					b.Fatal(err)
				}
				return r
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.Fatal("no leader")
	return nil
}
