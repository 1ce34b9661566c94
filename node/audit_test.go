package node

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/auth"
)

// TestAuditRecord: n.audit returns at once, and the record is then an
// entry of the log, a put under auth.AuditPrefix of the record as JSON,
// readable by key; the keys sort in the order the records were made (the
// log's order may differ: each record is its own write).
func TestAuditRecord(t *testing.T) {
	n := oneNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	at := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	recs := []wire.AuditRecord{
		{Who: "ops", Role: "admin", Via: "token", Action: "DELETE /v1/cluster/nodes/n3", From: "127.0.0.1:5000", At: at, Status: 200},
		{Who: "ops", Role: "admin", Via: "cert", Action: "POST /v1/cluster/transfer", From: "127.0.0.1:5001", At: at.Add(time.Second), Status: 503},
	}
	for _, r := range recs {
		start := time.Now()
		n.audit(r)
		if took := time.Since(start); took > time.Second {
			t.Fatalf("audit() took %v, want it to return at once", took)
		}
	}
	var got []wire.AuditRecord
	for {
		byKey := map[string]wire.AuditRecord{}
		page, err := n.Log(ctx, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Entries {
			for _, op := range e.Ops {
				if !strings.HasPrefix(op.Key, auth.AuditPrefix) {
					continue
				}
				if e.Status != wire.StatusCommitted || op.Op != wire.OpPut {
					t.Fatalf("audit entry %+v, want a committed put", e)
				}
				var r wire.AuditRecord
				if err := json.Unmarshal(op.Value, &r); err != nil {
					t.Fatalf("audit value %s: %v", op.Value, err)
				}
				kv, err := n.Get(ctx, op.Key, wire.ReadOptions{})
				if err != nil || string(kv.Value) != string(op.Value) {
					t.Fatalf("Get(%s) = %s, %v; want the record", op.Key, kv.Value, err)
				}
				byKey[op.Key] = r
			}
		}
		if len(byKey) == len(recs) {
			for _, k := range slices.Sorted(maps.Keys(byKey)) {
				got = append(got, byKey[k])
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("audit records in the log: %+v, want %d", byKey, len(recs))
		}
		time.Sleep(10 * time.Millisecond) // polling the log
	}
	for i, r := range recs {
		r.Node = "n1" // filled in by the node
		if !got[i].At.Equal(r.At) {
			t.Fatalf("record %d At = %v, want %v", i, got[i].At, r.At)
		}
		got[i].At = r.At
		if got[i] != r {
			t.Fatalf("record %d = %+v, want %+v", i, got[i], r)
		}
	}
	if c := testutil.ToFloat64(n.met.audits.WithLabelValues(auditCommitted)); c != 2 {
		t.Fatalf("txlog_audit_records_total{result=committed} = %v, want 2", c)
	}
}

// TestAuditNoNumber: a node that cannot write (no txid node number yet)
// counts the record as an error instead of writing it.
func TestAuditNoNumber(t *testing.T) {
	n := oneNode(t)
	num := n.mem.number.Swap(0)
	defer n.mem.number.Store(num)
	n.audit(wire.AuditRecord{Who: "ops", Action: "POST /v1/cluster/transfer"})
	if c := testutil.ToFloat64(n.met.audits.WithLabelValues(auditError)); c != 1 {
		t.Fatalf("txlog_audit_records_total{result=error} = %v, want 1", c)
	}
}

// TestOpenAuth: no --auth-file is auth off (a nil Authenticator, not an
// interface holding a nil File); a bad file fails the node's start.
func TestOpenAuth(t *testing.T) {
	f, err := openAuth(Config{}, nil, nil)
	if f != nil || err != nil || authenticator(f) != nil {
		t.Fatalf("openAuth() without a file = %v, %v, authenticator %v; want all nil", f, err, authenticator(f))
	}
	path := t.TempDir() + "/auth"
	if err := writeFileAtomic(path, []byte("cert:ops root ops\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := openAuth(Config{AuthFile: path}, nil, nil); err == nil || !strings.Contains(err.Error(), "--auth-file") || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("openAuth(a bad file) = %v, want --auth-file line 1 refused", err)
	}
	if err := writeFileAtomic(path, []byte(auth.Line(auth.HashToken("t"), auth.RoleAdmin, "ops", nil)+"\n")); err != nil {
		t.Fatal(err)
	}
	f, err = openAuth(Config{AuthFile: path}, nil, nil)
	if err != nil || authenticator(f) == nil {
		t.Fatalf("openAuth() = %v, %v", f, err)
	}
	f.Close()
}
