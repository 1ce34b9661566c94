package store

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Consumer groups are replicated state: a transaction's OpCommitOffset sets
// the group's committed offset, atomically with the transaction's other ops
// and under its Fence. An offset only moves forward: an op whose Offset is
// not greater than the group's offset rejects its transaction with a
// Conflict naming the group, unless the op has Reset, which sets any offset,
// 0 included. An op sees the effects of the ops before it in its transaction,
// so of two ops on one group the second is checked against the first.

// Consumer is a consumer group's committed offset.
type Consumer struct {
	Group  string
	Offset uint64
	Index  uint64 // the Raft index of the entry that committed it
	Time   int64  // that entry's leader-stamped time, Unix nanoseconds
}

// ErrConsumerNotFound is what Consumer returns for a group with no
// committed offset.
var ErrConsumerNotFound = fmt.Errorf("consumer group %w", ErrNotFound)

// bucketConsumers holds the consumer groups: group → encodeConsumer bytes.
// Apply creates it with the first committed OpCommitOffset, so a file
// without one (every file before consumer groups) is unchanged, and a store
// that knows no consumer groups ignores it.
var bucketConsumers = []byte("consumers")

// encodeConsumer encodes a group's state, the value of its name in the
// consumers bucket:
//
//	+---------+-------------+------------+----------+
//	| ver (1) | offset (uv) | index (uv) | time (8) |
//	+---------+-------------+------------+----------+
func encodeConsumer(c Consumer) []byte {
	b := make([]byte, 0, 1+2*binary.MaxVarintLen64+8)
	b = append(b, codecVersion)
	b = binary.AppendUvarint(b, c.Offset)
	b = binary.AppendUvarint(b, c.Index)
	return binary.BigEndian.AppendUint64(b, uint64(c.Time))
}

func decodeConsumer(group string, v []byte) (Consumer, error) {
	d := decoder{what: "consumer group", key: fmt.Sprintf("%q", group), b: v}
	d.version()
	c := Consumer{Group: group, Offset: d.uvarint("offset"), Index: d.uvarint("index")}
	c.Time = int64(d.u64("time"))
	if err := d.finish(); err != nil {
		return Consumer{}, err
	}
	return c, nil
}

// offsetWrite is a group's offset as the ops of a transaction leave it.
type offsetWrite struct {
	group  string
	offset uint64
}

// consumerBucket returns the consumers bucket, creating it when create is
// set; nil if it does not exist and create is not set.
func (a *applier) consumerBucket(create bool) (*bolt.Bucket, error) {
	if !a.consumersRead {
		a.consumers, a.consumersRead = a.btx.Bucket(bucketConsumers), true
	}
	if a.consumers != nil || !create {
		return a.consumers, nil
	}
	b, err := a.btx.CreateBucketIfNotExists(bucketConsumers)
	if err != nil {
		return nil, err
	}
	a.consumers = b
	return b, nil
}

// evaluateOffset checks an OpCommitOffset against the group's offset as the
// ops before it leave it, and adds it to a.offsets; the conflict if it does
// not move the offset forward.
func (a *applier) evaluateOffset(op Op) (*Conflict, error) {
	i := -1
	for j := range a.offsets {
		if a.offsets[j].group == op.Key {
			i = j
		}
	}
	if i < 0 {
		var cur uint64
		b, err := a.consumerBucket(false)
		if err != nil {
			return nil, err
		}
		if b != nil {
			if v := b.Get([]byte(op.Key)); v != nil {
				c, err := decodeConsumer(op.Key, v)
				if err != nil {
					return nil, err
				}
				cur = c.Offset
			}
		}
		i = len(a.offsets)
		a.offsets = append(a.offsets, offsetWrite{group: op.Key, offset: cur})
	}
	w := &a.offsets[i]
	if !op.Reset && op.Offset <= w.offset {
		return &Conflict{Group: op.Key, Expected: op.Offset, Actual: w.offset}, nil
	}
	w.offset = op.Offset
	return nil, nil
}

// commitOffsets writes the offsets evaluate left in a.offsets, committed by
// the entry at index stamped at.
func (a *applier) commitOffsets(index uint64, at int64) error {
	b, err := a.consumerBucket(true)
	if err != nil {
		return err
	}
	for _, w := range a.offsets {
		c := Consumer{Group: w.group, Offset: w.offset, Index: index, Time: at}
		if err := b.Put([]byte(w.group), encodeConsumer(c)); err != nil {
			return err
		}
	}
	return nil
}

// Consumer returns the group's committed offset as recorded by the last
// Apply (with Config.CommitInterval, in the transaction Apply left open), or
// ErrConsumerNotFound.
func (r *Reader) Consumer(group string) (Consumer, error) {
	db := r.db
	var c Consumer
	err := db.viewApplied(func(tx *bolt.Tx) (bool, error) {
		b := tx.Bucket(bucketConsumers)
		if b == nil {
			return true, ErrConsumerNotFound
		}
		v := b.Get([]byte(group))
		if v == nil {
			return true, ErrConsumerNotFound
		}
		var err error
		c, err = decodeConsumer(group, v) // copies what it keeps
		return true, err                  // an offset changes in place: read the open transaction too
	})
	return c, err
}

// Consumers returns every consumer group in name order.
func (r *Reader) Consumers() ([]Consumer, error) {
	db := r.db
	var out []Consumer
	err := db.viewApplied(func(tx *bolt.Tx) (bool, error) {
		out = out[:0]
		b := tx.Bucket(bucketConsumers)
		if b == nil {
			return true, nil
		}
		return true, b.ForEach(func(k, v []byte) error {
			c, err := decodeConsumer(string(k), v)
			if err != nil {
				return err
			}
			out = append(out, c)
			return nil
		})
	})
	return out, err
}

// MinConsumerOffset returns the lowest committed offset of all consumer
// groups, and false when there is no group. When the groups cannot be read
// it returns 0 and true: a caller that keeps the log from the offset on
// (retention) then keeps all of it.
func (r *Reader) MinConsumerOffset() (uint64, bool) {
	cs, err := r.Consumers()
	if err != nil {
		return 0, true
	}
	if len(cs) == 0 {
		return 0, false
	}
	low := cs[0].Offset
	for _, c := range cs[1:] {
		low = min(low, c.Offset)
	}
	return low, true
}
