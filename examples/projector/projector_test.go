package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/launcher"
	"github.com/txlog/txlog/launcher/launchertest"
)

const (
	testGroup = "projector"
	testTTL   = 2 * time.Second
	// testWork is long enough that the test can SIGKILL or SIGSTOP a
	// projector between computing a batch and committing it.
	testWork = time.Second
	// consuming is what a projector logs when it gains the group's lease
	// (package consumer's record, with the token).
	consuming = "consuming"
)

func TestDeltas(t *testing.T) {
	tr := func(i uint64, status, v string) wire.LogEntry {
		return wire.LogEntry{Index: i, Status: status, Ops: []wire.Op{{Op: wire.OpPut, Key: TransferPrefix + strconv.FormatUint(i, 10), Value: json.RawMessage(v)}}}
	}
	got := Deltas([]wire.LogEntry{
		tr(2, wire.StatusCommitted, `{"from":"a","to":"b","amount":5}`),
		tr(3, wire.StatusRejected, `{"from":"a","to":"b","amount":100}`),
		tr(4, wire.StatusCommitted, `{"from":"b","to":"c","amount":2}`),
		tr(5, wire.StatusCommitted, `"not a transfer"`),
		{Index: 6, Status: wire.StatusCommitted, Ops: []wire.Op{{Op: wire.OpPut, Key: "other", Value: json.RawMessage(`{"from":"a","to":"b","amount":1}`)}}},
	})
	want := map[string]int64{"a": -5, "b": 3, "c": 2}
	if !maps.Equal(got, want) {
		t.Fatalf("Deltas = %v, want %v", got, want)
	}
}

// inWork tells whether p's last record is a computed batch: it is between
// processing and commit.
func inWork(t *testing.T, p *launcher.Process) bool {
	ls := launchertest.ReadLog[launchertest.LogRecord](t, p)
	return len(ls) > 0 && ls[len(ls)-1].Msg == "batch"
}

// TestProjectorExact runs three projectors against a real three-node
// cluster while transfers are written, SIGKILLs the holder between computing
// a batch and committing it, SIGSTOPs the next holder there past its lease's
// TTL and resumes it after a third took over; then the balance table must
// be exactly the sum of the transfers.
func TestProjectorExact(t *testing.T) {
	txlogd, bin := launchertest.BuildWithTxlogd(t, "projector")
	c := launchertest.StartCluster(t, launcher.ClusterConfig{Bin: txlogd})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var ps []*launcher.Process
	for _, id := range []string{"p1", "p2", "p3"} {
		p := launchertest.StartProcess(t, launcher.ProcessConfig{ID: id, Bin: bin,
			Args: []string{"--targets", strings.Join(c.HTTPAddrs(), ","), "--group", testGroup, "--ttl", testTTL.String(),
				"--work", testWork.String(), "--batch", "5", "--id", id}})
		ps = append(ps, p)
	}

	cl := client.NewClient(client.ClientConfig{Endpoints: c.HTTPAddrs()})
	want := map[string]int64{}
	var last uint64
	accounts := []string{"alice", "bob", "carol", "dave"}
	n := 0
	transfer := func() {
		t.Helper()
		tr := Transfer{From: accounts[n%4], To: accounts[(n+1+n/4)%4], Amount: int64(n + 1)}
		if tr.From == tr.To {
			tr.To = accounts[(n+2)%4]
		}
		v, _ := json.Marshal(tr)
		res, err := cl.Submit(ctx, wire.TxRequest{Ops: []wire.Op{{Op: wire.OpPut, Key: fmt.Sprintf("%s%d", TransferPrefix, n), Value: v}}}, wire.SubmitOptions{})
		if err != nil || res.Status != wire.StatusCommitted {
			t.Fatalf("transfer %d: %+v, %v", n, res, err)
		}
		want[tr.From] -= tr.Amount
		want[tr.To] += tr.Amount
		last = max(last, res.Index)
		n++
	}
	for range 20 {
		transfer()
	}

	// 1. SIGKILL the holder between computing a batch and its commit.
	var first *launcher.Process
	var firstToken uint64
	launchertest.WaitFor(ctx, t, "a holder in a batch's work", func() bool {
		first, firstToken = launchertest.Holder(t, ps, consuming)
		return first != nil && inWork(t, first)
	})
	if err := first.Kill(); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		transfer()
	}

	// 2. SIGSTOP the next holder in a batch's work, past its TTL.
	var second *launcher.Process
	var secondToken uint64
	launchertest.WaitFor(ctx, t, "a second holder in a batch's work", func() bool {
		second, secondToken = launchertest.Holder(t, ps, consuming)
		return second != first && secondToken > firstToken && inWork(t, second)
	})
	if err := second.Pause(); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		transfer()
	}
	launchertest.WaitFor(ctx, t, "a third holder", func() bool {
		p, token := launchertest.Holder(t, ps, consuming)
		return p != nil && p != second && token > secondToken
	})
	if err := second.Resume(); err != nil {
		t.Fatal(err)
	}
	launchertest.WaitFor(ctx, t, "the resumed projector losing its lease", func() bool {
		_, ok := launchertest.Last(launchertest.ReadLog[launchertest.LogRecord](t, second), "lease lost")
		return ok
	})
	for range 10 {
		transfer()
	}

	// 3. The projection catches up, exactly.
	launchertest.WaitFor(ctx, t, fmt.Sprintf("the group's offset past %d", last), func() bool {
		g, err := cl.Consumer(ctx, testGroup)
		return err == nil && g.Offset >= last
	})
	got := map[string]int64{}
	for _, a := range accounts {
		kv, err := cl.Get(ctx, BalancePrefix+a, wire.ReadOptions{})
		if err != nil {
			t.Fatalf("balance of %s: %v", a, err)
		}
		b, err := strconv.ParseInt(string(kv.Value), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		got[a] = b
	}
	if !maps.Equal(got, want) {
		t.Fatalf("balances %v, want %v (from %d transfers)", got, want, n)
	}
	t.Logf("%d transfers projected exactly through a SIGKILL of %s and a SIGSTOP of %s", n, first.ID(), second.ID())
}
