package store

// Outcome callbacks (docs/consuming.md, "Callbacks"). A transaction with a
// Notify url that Apply decides, committed or rejected, adds a delivery to the
// notify bucket in the same bbolt transaction as its outcome, so the delivery
// is replicated state: a snapshot, a restore and a reopen keep it, and every
// node holds the same ones. The leader's deliverer reads them (Deliveries),
// POSTs each, and proposes a KindNotifyDone command that removes the ones it
// is done with on every node. A duplicate changes nothing, so it adds none.

import (
	"encoding/binary"
	"fmt"

	"github.com/txlog/txlog/txid"
	bolt "go.etcd.io/bbolt"
)

// bucketNotify holds the pending deliveries: entry index (8, big endian) →
// encodeDelivery bytes. Apply creates it with the first transaction with a
// Notify url, so a plain transaction never touches it.
var bucketNotify = []byte("notify")

// Delivery is one pending callback: the outcome of the transaction decided
// at Outcome.Index, and the url to POST it to.
type Delivery struct {
	URL     string
	Outcome Outcome // without Versions and Term
}

// maxNotifyDone bounds the indexes of one KindNotifyDone command.
const maxNotifyDone = 10000

// encodeDelivery encodes a delivery (the index is its key):
//
//	+---------+----------+----------+--------------+----------+------------+------------------------------------+-------------+-----+
//	| ver (1) | txid (8) | time (8) | idemLen (uv) | idem key | status (1) | conflict (1) [| strLen | str | exp | act] | urlLen (uv) | url |
//	+---------+----------+----------+--------------+----------+------------+------------------------------------+-------------+-----+
//
// conflict is 0 (none), 1 (a key's, str the key) or 2 (a fence's, str the lease).
func encodeDelivery(url string, o Outcome) []byte {
	b := make([]byte, 0, 1+16+3+len(o.IdempotencyKey)+len(url)+4*binary.MaxVarintLen64+32)
	b = append(b, codecVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(o.TxID))
	b = binary.BigEndian.AppendUint64(b, uint64(o.Time))
	b = appendString(b, o.IdempotencyKey)
	b = append(b, byte(o.Status))
	switch c := o.Conflict; {
	case c == nil:
		b = append(b, 0)
	case c.Fence != "":
		b = append(b, 2)
		b = appendString(b, c.Fence)
		b = binary.AppendUvarint(b, c.Expected)
		b = binary.AppendUvarint(b, c.Actual)
	default:
		b = append(b, 1)
		b = appendString(b, c.Key)
		b = binary.AppendUvarint(b, c.Expected)
		b = binary.AppendUvarint(b, c.Actual)
	}
	return appendString(b, url)
}

func decodeDelivery(index uint64, v []byte) (Delivery, error) {
	d := decoder{what: "delivery", key: fmt.Sprint(index), b: v}
	d.version()
	var dl Delivery
	o := &dl.Outcome
	o.Index = index
	o.TxID = txid.ID(d.u64("txid"))
	o.Time = int64(d.u64("time"))
	o.IdempotencyKey = string(d.bytes("idempotency key", MaxIdempotencyKeyBytes))
	o.Status = Status(d.u8("status"))
	if d.err == nil && o.Status != StatusCommitted && o.Status != StatusRejected {
		d.fail("status %d", o.Status)
	}
	switch kind := d.u8("conflict"); {
	case d.err != nil || kind == 0:
	case kind == 1 || kind == 2:
		s := string(d.bytes("conflict", MaxKeyBytes))
		c := &Conflict{Expected: d.uvarint("expected")}
		c.Actual = d.uvarint("actual")
		if kind == 1 {
			c.Key = s
		} else {
			c.Fence = s
			if d.err == nil && s == "" {
				d.fail("empty conflict fence")
			}
		}
		o.Conflict = c
	default:
		d.fail("conflict kind %d", kind)
	}
	dl.URL = string(d.bytes("url", MaxNotifyURLBytes))
	if err := d.finish(); err != nil {
		return Delivery{}, err
	}
	return dl, nil
}

// EncodeNotifyDone encodes the payload of a KindNotifyDone command: the
// indexes of the deliveries to remove.
//
//	+---------+--------+-------------+-----+
//	| ver (1) | n (uv) | index0 (uv) | ... |
//	+---------+--------+-------------+-----+
func EncodeNotifyDone(indexes []uint64) []byte {
	b := make([]byte, 0, 1+binary.MaxVarintLen64*(1+len(indexes)))
	b = append(b, codecVersion)
	b = binary.AppendUvarint(b, uint64(len(indexes)))
	for _, i := range indexes {
		b = binary.AppendUvarint(b, i)
	}
	return b
}

// DecodeNotifyDone decodes EncodeNotifyDone bytes; bad input gives an error
// wrapping ErrCorrupt.
func DecodeNotifyDone(b []byte) ([]uint64, error) {
	d := decoder{what: "notify done", b: b}
	d.version()
	n := d.uvarint("count")
	if d.err == nil && (n > maxNotifyDone || n > uint64(len(d.b))) {
		d.fail("count %d", n)
	}
	var out []uint64
	for i := uint64(0); i < n && d.err == nil; i++ {
		out = append(out, d.uvarint("index"))
	}
	if err := d.finish(); err != nil {
		return nil, err
	}
	return out, nil
}

// addDelivery records the delivery of a decided transaction with a url.
func (a *applier) addDelivery(url string, o Outcome) error {
	b, err := a.btx.CreateBucketIfNotExists(bucketNotify)
	if err != nil {
		return err
	}
	return b.Put(u64Key(o.Index), encodeDelivery(url, o))
}

// applyNotifyDone removes the deliveries a KindNotifyDone command names;
// indexes with none are ignored (another leader finished them first).
func (a *applier) applyNotifyDone(c Command, indexes []uint64) (Result, error) {
	a.observe(c.Time)
	b := a.btx.Bucket(bucketNotify)
	if b == nil {
		return Result{Kind: KindNotifyDone}, nil
	}
	for _, i := range indexes {
		if err := b.Delete(u64Key(i)); err != nil {
			return Result{}, err
		}
	}
	return Result{Kind: KindNotifyDone}, nil
}

// Deliveries returns up to max pending deliveries (all if max <= 0) in index
// order, starting after index after.
func (r *Reader) Deliveries(after uint64, max int) ([]Delivery, error) {
	db := r.db
	var out []Delivery
	err := db.viewApplied(func(tx *bolt.Tx) (bool, error) {
		out = out[:0]
		b := tx.Bucket(bucketNotify)
		if b == nil {
			return true, nil
		}
		c := b.Cursor()
		for k, v := c.Seek(u64Key(after + 1)); k != nil; k, v = c.Next() {
			if len(k) != 8 {
				return true, fmt.Errorf("%w: notify key of %d bytes", ErrCorrupt, len(k))
			}
			dl, err := decodeDelivery(binary.BigEndian.Uint64(k), v)
			if err != nil {
				return true, err
			}
			out = append(out, dl)
			if max > 0 && len(out) == max {
				break
			}
		}
		return true, nil
	})
	return out, err
}
