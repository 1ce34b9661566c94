package node

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	bolt "go.etcd.io/bbolt"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/store"
	"github.com/txlog/txlog/txid"
)

// storeReads is an api.Backend that answers the log and the keys from a
// store through lookups, as a node does; any other call panics.
type storeReads struct {
	api.Backend
	l *lookups
}

func (b storeReads) Log(ctx context.Context, from uint64, limit int) (wire.LogPage, error) {
	return b.l.Log(ctx, from, limit)
}

func (b storeReads) Get(_ context.Context, key string, _ wire.ReadOptions) (wire.KV, error) {
	return b.l.get(key)
}

// TestUnreadableRecordsAnswered writes, with bbolt, a record that does not
// decode into a copy of a store that also holds values that are not JSON:
// GET /v1/log (paged, and as a long poll), the SSE stream and GET /v1/kv all
// answer 200, the bad record and values raw and marked, and count them.
func TestUnreadableRecordsAnswered(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := store.Open(path, store.Config{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	values := []string{`"A"`, `"B"`, `not json`, "\xff\xfe", `{"e":1}`} // keys a..e at indexes 1..5
	var entries []store.Entry
	for i, v := range values {
		tx := store.Tx{ID: txid.ID(i + 1), Ops: []store.Op{{Kind: store.OpPut, Key: string(rune('a' + i)), Value: []byte(v)}}}
		c := store.Command{Kind: store.KindTx, Time: time.Now().UnixNano(), Payload: store.EncodeTx(tx)}
		entries = append(entries, store.Entry{Index: uint64(i + 1), Term: 1, Data: store.EncodeCommand(c)})
	}
	if _, err := db.Apply(entries); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	garbage := []byte{0xff, 0x00, 'x'}
	b, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = b.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("log")).Put(binary.BigEndian.AppendUint64(nil, 2), garbage)
	})
	if cerr := b.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	db, err = store.Open(path, store.Config{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	reg := prometheus.NewRegistry()
	srv := httptest.NewServer(api.NewServer(api.Config{Metrics: reg}, storeReads{l: &lookups{db: db}}))
	defer srv.Close()
	get := func(path string) []byte {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s = %d %s, want 200", path, resp.StatusCode, body)
		}
		return body
	}
	checkEntries := func(what string, es []wire.LogEntry, first int) {
		t.Helper()
		for j, e := range es {
			i := first + j // the index of values
			if e.Index != uint64(i+1) {
				t.Fatalf("%s: entry %d has index %d, want %d", what, j, e.Index, i+1)
			}
			var op wire.Op
			if len(e.Ops) == 1 {
				op = e.Ops[0]
			}
			switch i {
			case 1:
				if !e.Unreadable || e.Status != wire.StatusUnreadable || !bytes.Equal(e.Record, garbage) || len(e.Ops) != 0 {
					t.Fatalf("%s: entry %d = %+v, want unreadable with its record %x", what, i+1, e, garbage)
				}
			case 2:
				if op.Raw != wire.RawText || string(op.Value) != `"not json"` {
					t.Fatalf("%s: entry %d op = %+v, want the value as text, raw", what, i+1, op)
				}
			case 3:
				want := `"` + base64.StdEncoding.EncodeToString([]byte(values[3])) + `"`
				if op.Raw != wire.RawBase64 || string(op.Value) != want {
					t.Fatalf("%s: entry %d op = %+v, want the value %s, raw base64", what, i+1, op, want)
				}
			default:
				if e.Unreadable || op.Raw != "" || string(op.Value) != values[i] || e.Status != wire.StatusCommitted {
					t.Fatalf("%s: entry %d = %+v, want the value %s as it is", what, i+1, e, values[i])
				}
			}
		}
	}

	var page wire.LogPage
	if err := json.Unmarshal(get("/v1/log?from=1"), &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Entries) != 5 || page.Next != 6 {
		t.Fatalf("GET /v1/log = %d entries, next %d; want 5, next 6", len(page.Entries), page.Next)
	}
	checkEntries("GET /v1/log", page.Entries, 0)
	// One at a time with from=next, as a consumer pages: it gets past each.
	for from := uint64(1); from <= 5; {
		var p wire.LogPage
		for _, q := range []string{"", "&wait=2s"} { // the long poll answers as the page does
			if err := json.Unmarshal(get(fmt.Sprintf("/v1/log?from=%d&limit=1%s", from, q)), &p); err != nil {
				t.Fatal(err)
			}
			if len(p.Entries) != 1 || p.Next != from+1 {
				t.Fatalf("GET /v1/log?from=%d&limit=1%s = %+v, want one entry and next %d", from, q, p, from+1)
			}
			checkEntries("paged", p.Entries, int(from-1))
		}
		from = p.Next
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+wire.LogStreamPath+"?from=1", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d, want 200", wire.LogStreamPath, resp.StatusCode)
	}
	var streamed []wire.LogEntry
	sc := bufio.NewScanner(resp.Body)
	for len(streamed) < 5 && sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var e wire.LogEntry
			if err := json.Unmarshal([]byte(data), &e); err != nil {
				t.Fatalf("stream event %q: %v", data, err)
			}
			streamed = append(streamed, e)
		}
	}
	if len(streamed) != 5 {
		t.Fatalf("stream: %d events before it ended (%v), want 5", len(streamed), sc.Err())
	}
	checkEntries("stream", streamed, 0)
	cancel()

	kvs := []struct {
		key   string
		want  wire.KV
		value string
	}{
		{"a", wire.KV{Key: "a", Version: 1, Index: 1}, `"A"`},
		{"b", wire.KV{Key: "b", Version: 1, Index: 2, Unreadable: true}, `null`}, // its value is in the bad record
		{"c", wire.KV{Key: "c", Version: 1, Index: 3, Raw: wire.RawText}, `"not json"`},
		{"d", wire.KV{Key: "d", Version: 1, Index: 4, Raw: wire.RawBase64}, `"//4="`},
	}
	for _, tt := range kvs {
		var kv wire.KV
		if err := json.Unmarshal(get("/v1/kv/"+tt.key), &kv); err != nil {
			t.Fatal(err)
		}
		value := string(kv.Value)
		kv.Value = nil
		if !reflect.DeepEqual(kv, tt.want) || value != tt.value {
			t.Fatalf("GET /v1/kv/%s = %+v value %s, want %+v value %s", tt.key, kv, value, tt.want, tt.value)
		}
	}
	if n := counterValue(t, reg, "txlog_unreadable_records_total"); n < 10 {
		t.Fatalf("txlog_unreadable_records_total = %v, want one per answer that met one (at least 10)", n)
	}
}

// counterValue returns the value of the registered counter named name.
func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}
