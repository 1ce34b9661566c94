package bbolt

import (
	"bytes"
	"encoding/binary"
	"math/rand"
	"path/filepath"
	"sort"
	"testing"

	"go.etcd.io/bbolt/errors"
)

// TestPutTail checks txlog's PutTail and LookupTail against a model: random
// keys, mostly growing as a log's do and sometimes not, with Puts and deletes
// between them, over several transactions. LookupTail agrees with Get
// whenever it answers, and after each commit the bucket holds exactly the
// model's keys and values in order and tx.Check finds nothing.
func TestPutTail(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rng := rand.New(rand.NewSource(1))
	model := map[string]string{}
	var next uint64 = 1 << 20
	key := func() []byte {
		k := make([]byte, 8)
		switch r := rng.Intn(100); {
		case r < 80: // growing
			next += uint64(1 + rng.Intn(3))
			binary.BigEndian.PutUint64(k, next)
		case r < 95: // a little behind the tail, inside the last leaf mostly
			binary.BigEndian.PutUint64(k, next-uint64(rng.Intn(200)))
		default: // anywhere
			binary.BigEndian.PutUint64(k, uint64(rng.Intn(int(next))))
		}
		return k
	}
	tails, lookups := 0, 0
	for round := 0; round < 40; round++ {
		err := db.Update(func(tx *Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("log"))
			if err != nil {
				return err
			}
			for i := 0; i < 500; i++ {
				k := key()
				v := bytes.Repeat([]byte{byte(i)}, rng.Intn(300))
				switch r := rng.Intn(100); {
				case r < 85:
					if err := b.PutTail(k, v); err != nil {
						return err
					}
					model[string(k)] = string(v)
				case r < 92:
					if err := b.Put(k, v); err != nil {
						return err
					}
					model[string(k)] = string(v)
				default: // delete a key that exists, often the last one
					keys := sortedKeys(model)
					if len(keys) == 0 {
						continue
					}
					d := keys[len(keys)-1]
					if rng.Intn(2) == 0 {
						d = keys[rng.Intn(len(keys))]
					}
					if err := b.Delete([]byte(d)); err != nil {
						return err
					}
					delete(model, d)
				}
				if b.tail != nil {
					tails++
				}
				// LookupTail agrees with Get whenever it answers.
				for _, q := range [][]byte{key(), key()} {
					if v, ok := b.LookupTail(q); ok {
						lookups++
						if w := b.Get(q); !bytes.Equal(v, w) || (v == nil) != (w == nil) {
							t.Fatalf("LookupTail(%x) = %x, Get = %x", q, v, w)
						}
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		err = db.View(func(tx *Tx) error {
			for cerr := range tx.Check() {
				t.Errorf("round %d: check: %v", round, cerr)
			}
			want := sortedKeys(model)
			i := 0
			c := tx.Bucket([]byte("log")).Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				if i >= len(want) || string(k) != want[i] {
					t.Fatalf("round %d: key %d is %x, want %x", round, i, k, want[min(i, len(want)-1)])
				}
				if string(v) != model[want[i]] {
					t.Fatalf("round %d: value of %x differs", round, k)
				}
				i++
			}
			if i != len(want) {
				t.Fatalf("round %d: %d keys, want %d", round, i, len(want))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if tails == 0 || lookups == 0 {
		t.Fatalf("PutTail found the last leaf %d times, LookupTail answered %d times", tails, lookups)
	}
	if len(model) < 10000 {
		t.Fatalf("only %d keys: the tree is too small to have branches", len(model))
	}
}

// TestPutTailBucketValue: PutTail refuses a key that names a nested bucket,
// on the search from the root and in the last leaf alike.
func TestPutTailBucketValue(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *Tx) error {
		b, err := tx.CreateBucket([]byte("b"))
		if err != nil {
			return err
		}
		if _, err := b.CreateBucket([]byte("m")); err != nil {
			return err
		}
		if err := b.PutTail([]byte("m"), []byte("x")); err != errors.ErrIncompatibleValue {
			t.Errorf("PutTail over a bucket from the root: %v", err)
		}
		for _, k := range []string{"a", "n", "z"} {
			if err := b.PutTail([]byte(k), []byte("x")); err != nil {
				return err
			}
		}
		if b.tail == nil {
			t.Fatal("no last leaf after PutTail")
		}
		if err := b.PutTail([]byte("m"), []byte("x")); err != errors.ErrIncompatibleValue {
			t.Errorf("PutTail over a bucket in the last leaf: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
