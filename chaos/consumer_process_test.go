package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/launcher"
)

// TestConsumerProc runs two consumer processes' loops (RunConsumerProc) of
// one group against a real three-node cluster while source writes go in:
// the projection ends with every source entry once, and CheckConsumer
// passes on the applied log. A few seconds.
func TestConsumerProc(t *testing.T) {
	ctx := testCtx(t, 90*time.Second)
	c := startFakeCluster(t, ctx, launcher.ClusterConfig{Bin: needTxlogd(t)})
	cl := client.NewClient(client.ClientConfig{Endpoints: c.HTTPAddrs()})
	dir := t.TempDir()
	cfg := ConsumerProcConfig{Targets: c.HTTPAddrs(), Group: "chaos", TTL: 2 * time.Second, Sources: []string{"src/"}, Projection: "proj"}
	cctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, id := range []string{"k1", "k2"} {
		pc := cfg
		pc.ID, pc.History = id, filepath.Join(dir, id+".jsonl")
		wg.Go(func() {
			if err := RunConsumerProc(cctx, pc, slog.New(slog.DiscardHandler)); err != nil {
				t.Errorf("consumer %s: %v", id, err)
			}
		})
	}
	defer func() { stop(); wg.Wait() }()
	const n = 30
	var last uint64
	var offsets []OffsetRead
	for i := range n {
		res, err := cl.Submit(ctx, wire.TxRequest{Ops: []wire.Op{{Op: wire.OpPut, Key: fmt.Sprintf("src/%d", i%5), Value: json.RawMessage(`1`)}}}, wire.SubmitOptions{})
		if err != nil || res.Status != wire.StatusCommitted {
			t.Fatalf("source write %d: %+v, %v", i, res, err)
		}
		last = max(last, res.Index)
		if g, err := cl.Consumer(ctx, cfg.Group); err == nil && g.Lag > 0 {
			offsets = append(offsets, OffsetRead{Offset: g.Offset, Applied: g.Offset + g.Lag})
		}
	}
	var proj map[uint64]int
	err := launcher.Poll(ctx, 50*time.Millisecond, func(ctx context.Context) error {
		var err error
		if proj, err = readProjection(ctx, cl, cfg.Projection, last); err != nil {
			return err
		}
		if len(proj) < n {
			return fmt.Errorf("%d of %d entries projected", len(proj), n)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("projection: %v", err)
	}
	g, err := cl.Consumer(ctx, cfg.Group)
	if err != nil {
		t.Fatal(err)
	}
	offsets = append(offsets, OffsetRead{Offset: g.Offset, Applied: g.Offset + g.Lag})
	var log []wire.LogEntry
	for from := uint64(1); ; {
		page, err := cl.Log(ctx, from, 1000)
		if err != nil {
			t.Fatal(err)
		}
		log = append(log, page.Entries...)
		if len(page.Entries) == 0 || page.Next <= from {
			break
		}
		from = page.Next
	}
	h := ConsumerHistory{Group: cfg.Group, Lease: "consumer/" + cfg.Group, From: 1, To: last,
		Source:     func(e wire.LogEntry) bool { return writesPrefix(e, cfg.Sources) },
		Projection: proj, Offsets: offsets}
	r := CheckConsumer(h, log)
	if !r.Pass {
		t.Fatalf("CheckConsumer: %+v", r)
	}
	// A projection with an entry twice fails it.
	proj[last]++
	if r := CheckConsumer(h, log); r.Pass {
		t.Fatalf("CheckConsumer passed a projection with index %d twice", last)
	}
}

// TestConsumerProcMainFlags: the required flags.
func TestConsumerProcMainFlags(t *testing.T) {
	var b strings.Builder
	err := ConsumerProcMain(t.Context(), []string{"--group=g"}, &b)
	if err == nil || !strings.Contains(err.Error(), "are required") {
		t.Fatalf("ConsumerProcMain without flags = %v", err)
	}
}
