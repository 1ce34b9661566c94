package store

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/txid"
)

// TestRangeModel applies random puts and deletes, with the overlay flushing
// every few records and the bbolt transaction left open between Applies, and
// pages through random spans after each Apply: every page must be what a
// sorted map of the same writes gives.
func TestRangeModel(t *testing.T) {
	for _, interval := range []time.Duration{0, time.Hour} {
		t.Run(fmt.Sprintf("commit-interval-%v", interval), func(t *testing.T) {
			cfg := tinyFlush
			cfg.CommitInterval = interval
			db := openCfg(t, filepath.Join(t.TempDir(), "state.db"), cfg)
			defer db.Close()
			rng := rand.New(rand.NewPCG(1, 2))
			model := map[string]string{}
			key := func() string { return fmt.Sprintf("%c/%02d", 'a'+rng.IntN(3), rng.IntN(30)) }
			for i := uint64(1); i <= 300; i++ {
				var ops []Op
				for range 1 + rng.IntN(4) {
					k := key()
					if rng.IntN(4) == 0 {
						ops = append(ops, del(k))
						delete(model, k)
					} else {
						v := fmt.Sprintf(`"%d"`, i)
						ops = append(ops, put(k, v))
						model[k] = v
					}
				}
				// A tx with a repeated key keeps its last op only in the
				// model; drop repeats from ops so both agree.
				seen := map[string]bool{}
				var uniq []Op
				for j := len(ops) - 1; j >= 0; j-- {
					if !seen[ops[j].Key] {
						seen[ops[j].Key] = true
						uniq = append([]Op{ops[j]}, uniq...)
					}
				}
				applyOne(t, db, txEntry(i, txid.ID(i), "", uniq...))
				prefix := []string{"", "a", "b/", "b/1", "c/2", "z"}[rng.IntN(6)]
				checkRange(t, db, model, prefix, 1+rng.IntN(7), i)
			}
		})
	}
}

// checkRange pages through prefix with limit and compares with model.
func checkRange(t *testing.T, db *DB, model map[string]string, prefix string, limit int, index uint64) {
	t.Helper()
	var want []string
	for k := range model {
		if strings.HasPrefix(k, prefix) {
			want = append(want, k)
		}
	}
	slices.Sort(want)
	var got []string
	after := ""
	for {
		page, err := db.Reads().Range([]KeySpan{PrefixSpan(prefix)}, after, limit, false)
		if err != nil {
			t.Fatalf("Range(%q, %q, %d) = %v", prefix, after, limit, err)
		}
		if page.Index != index {
			t.Fatalf("Range index %d, want %d", page.Index, index)
		}
		for _, kv := range page.KVs {
			if string(kv.Value) != model[kv.Key] {
				t.Fatalf("index %d: key %q = %s, want %s", index, kv.Key, kv.Value, model[kv.Key])
			}
			got = append(got, kv.Key)
			after = kv.Key
		}
		if !page.More {
			break
		}
		if len(page.KVs) == 0 {
			t.Fatalf("Range(%q, %q): more without keys", prefix, after)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("index %d prefix %q limit %d: keys %q, want %q", index, prefix, limit, got, want)
	}
}

// TestRangeSpans: several spans, keys only, and the checker failing on a
// bad case.
func TestRangeSpans(t *testing.T) {
	db := openTest(t)
	var ops []Op
	for _, k := range []string{"a", "a/1", "a/2", "b/1", "c/1", "c/2", "d"} {
		ops = append(ops, put(k, `"`+k+`"`))
	}
	applyOne(t, db, txEntry(1, 1, "", ops...))
	page, err := db.Reads().Range([]KeySpan{PrefixSpan("a/"), PrefixSpan("c/")}, "a/1", 10, true)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, kv := range page.KVs {
		if kv.Value != nil {
			t.Errorf("keys only: %q has value %s", kv.Key, kv.Value)
		}
		keys = append(keys, kv.Key)
	}
	if want := []string{"a/2", "c/1", "c/2"}; !slices.Equal(keys, want) || page.More {
		t.Errorf("Range = %q more %v, want %q", keys, page.More, want)
	}
	page, _ = db.Reads().Range([]KeySpan{PrefixSpan("")}, "", 2, false)
	if len(page.KVs) != 2 || !page.More || page.KVs[0].Key != "a" {
		t.Errorf("Range all limit 2 = %+v", page)
	}
	// The checker fails on a model that disagrees.
	ft := &testing.T{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		checkRange(ft, db, map[string]string{"a": `"a"`, "zz": `"x"`}, "", 3, 1)
	}()
	<-done
	if !ft.Failed() {
		t.Error("checkRange passed a wrong model")
	}
}

// PrefixSpan is the span of the keys under prefix, as wire.PrefixSpan.
func PrefixSpan(prefix string) KeySpan {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return KeySpan{Start: prefix, End: string(b[:i+1])}
		}
	}
	return KeySpan{Start: prefix}
}

// TestRangeDuringApply pages while another goroutine applies entries, the
// overlay flushing every few records and the bbolt transaction left open:
// each page must be exactly the state at the index it names.
func TestRangeDuringApply(t *testing.T) {
	cfg := tinyFlush
	cfg.CommitInterval = 5 * time.Millisecond
	db := openCfg(t, filepath.Join(t.TempDir(), "state.db"), cfg)
	defer db.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 400
	entries := make([]Entry, n)
	states := make([]map[string]string, n+1) // states[i]: after index i
	model := map[string]string{}
	states[0] = map[string]string{}
	for i := 1; i <= n; i++ {
		k := fmt.Sprintf("k/%02d", rng.IntN(40))
		var op Op
		if rng.IntN(5) == 0 {
			op = del(k)
			delete(model, k)
		} else {
			v := fmt.Sprintf(`"%d"`, i)
			op = put(k, v)
			model[k] = v
		}
		entries[i-1] = txEntry(uint64(i), txid.ID(i), "", op)
		states[i] = maps.Clone(model)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, e := range entries {
			if _, err := db.Apply([]Entry{e}); err != nil {
				t.Errorf("Apply: %v", err)
				return
			}
		}
	}()
	pages := 0
	for {
		select {
		case <-done:
			if pages == 0 {
				t.Fatal("no page read during the applies")
			}
			return
		default:
		}
		page, err := db.Reads().Range([]KeySpan{PrefixSpan("k/")}, "", 100, false)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		want := states[page.Index]
		if len(page.KVs) != len(want) {
			t.Fatalf("page at %d has %d keys, want %d", page.Index, len(page.KVs), len(want))
		}
		for _, kv := range page.KVs {
			if want[kv.Key] != string(kv.Value) {
				t.Fatalf("page at %d: %s = %s, want %s", page.Index, kv.Key, kv.Value, want[kv.Key])
			}
		}
	}
}
