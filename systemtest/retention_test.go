package systemtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
)

// TestLogRetention runs a cluster with --log-retention 1000, the shortest
// dedup window (1m) and a kv flush every 200 records (no record after the
// last flush goes), overwrites 20 keys about 40 times a second until every
// node's log has dropped its first records (a record goes about two dedup
// windows after it was written: store/retain.go), and checks that every node
// then serves every key's last value and version, a key written once at the
// start included, and that each log now starts past old's record.
func TestLogRetention(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	c := startClusterWith(t, "--log-retention=1000", "--dedup-window=1m", "--store-kv-flush-records=200")
	cl := client.NewClient(client.ClientConfig{Endpoints: c.HTTPAddrs()})
	type state struct {
		value   string
		version uint64
	}
	want := map[string]state{}
	put := func(key, value string) {
		t.Helper()
		// 30 s: a slow fsync on a loaded machine must not park the write (202).
		res, err := cl.Submit(ctx, wire.TxRequest{Ops: []wire.Op{{Op: "put", Key: key, Value: json.RawMessage(value)}}}, wire.SubmitOptions{Timeout: 30 * time.Second})
		if err != nil || res.Status != wire.StatusCommitted {
			t.Fatalf("Submit(put %s) = %+v, %v", key, res, err)
		}
		want[key] = state{value, res.Versions[key]}
	}
	put("old", `"first"`)

	firstIndex := func(base string) uint64 {
		lc := client.NewClient(client.ClientConfig{Endpoints: []string{base}})
		page, err := lc.Log(ctx, 1, 1)
		if ce, ok := errors.AsType[*wire.CompactedError](err); ok {
			// 410 compacted: the records below ce.FirstIndex were dropped.
			page, err = lc.Log(ctx, ce.FirstIndex, 1)
		}
		if err != nil || len(page.Entries) == 0 {
			return 0
		}
		return page.Entries[0].Index
	}
	// The log's first record is old's: the entries before it (the
	// configuration, the nodes' registrations) have no log record.
	oldAt := uint64(0)
	for _, base := range c.HTTPAddrs() {
		waitUntil(ctx, t, base+" serving the first record", func() bool { return firstIndex(base) > 0 })
		oldAt = max(oldAt, firstIndex(base))
	}
	moved := func() bool {
		for _, base := range c.HTTPAddrs() {
			if firstIndex(base) <= oldAt {
				return false
			}
		}
		return true
	}
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	n := 0
	for !moved() {
		for range 4 { // check the logs every 4 writes
			select {
			case <-ctx.Done():
				t.Fatalf("after %d overwrites no log moved on every node: %v", n, ctx.Err())
			case <-tick.C:
			}
			put(fmt.Sprintf("k/%d", n%20), fmt.Sprint(n))
			n++
		}
	}
	t.Logf("every log dropped its first records after %d overwrites", n)
	for range 50 { // and a few more after
		put(fmt.Sprintf("k/%d", n%20), fmt.Sprint(n))
		n++
	}
	last := lastIndex(ctx, t, c)
	for _, base := range c.HTTPAddrs() {
		waitUntil(ctx, t, base+" applying index "+fmt.Sprint(last), func() bool {
			st, err := cl.ClusterFrom(ctx, base)
			return err == nil && st.AppliedIndex >= last
		})
		for k, w := range want {
			kv, err := cl.GetFrom(ctx, base, k, wire.ReadOptions{Consistency: wire.ConsistencyStale})
			if err != nil || string(kv.Value) != w.value || kv.Version != w.version {
				t.Fatalf("stale read of %s on %s = %+v, %v; want %s version %d", k, base, kv, err, w.value, w.version)
			}
		}
		f := firstIndex(base)
		t.Logf("%s: log starts at %d of %d", base, f, last)
		if f <= oldAt {
			t.Fatalf("%s: log starts at %d, want past old's record at %d", base, f, oldAt)
		}
	}
	kv, err := cl.Get(ctx, "old", wire.ReadOptions{})
	if err != nil || string(kv.Value) != `"first"` || kv.Version != 1 {
		t.Fatalf("linearizable read of old = %+v, %v; want its first value, version 1", kv, err)
	}
}
