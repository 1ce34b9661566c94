// Copyright (c) HashiCorp, Inc
// SPDX-License-Identifier: MPL-2.0

package wal

// Tests of txlog's patch (PATCHES.md): StoreLogs encodes a batch into one
// reused buffer, and BinaryCodec.appendEncode writes what Encode writes.

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
)

// randomLog returns a log with index i whose fields, the time's zone among
// them, vary with rng; size bounds its Data.
func randomLog(rng *rand.Rand, i uint64, size int) *raft.Log {
	l := &raft.Log{
		Index: i,
		Term:  uint64(rng.Intn(1 << 20)),
		Type:  raft.LogType(rng.Intn(7)),
	}
	if n := rng.Intn(size + 1); n > 0 || rng.Intn(2) == 0 {
		l.Data = make([]byte, n)
		rng.Read(l.Data)
	}
	if rng.Intn(3) == 0 {
		l.Extensions = make([]byte, rng.Intn(40))
		rng.Read(l.Extensions)
	}
	switch rng.Intn(4) {
	case 0: // the zero time
	case 1:
		l.AppendedAt = time.Unix(rng.Int63n(1<<34), rng.Int63n(1e9))
	case 2:
		l.AppendedAt = time.Unix(rng.Int63n(1<<34), rng.Int63n(1e9)).In(time.FixedZone("x", 60*(rng.Intn(1440)-720)))
	default:
		l.AppendedAt = time.Now() // with a monotonic reading, which neither encodes
	}
	return l
}

func TestAppendEncodeMatchesEncode(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	c := &BinaryCodec{}
	prefix := []byte("before")
	for i := 0; i < 2000; i++ {
		l := randomLog(rng, uint64(i+1), 600)
		var want bytes.Buffer
		require.NoError(t, c.Encode(l, &want))
		got, err := c.appendEncode(append([]byte(nil), prefix...), l)
		require.NoError(t, err)
		require.Equal(t, prefix, got[:len(prefix)], "appendEncode changed what was before")
		require.Equal(t, want.Bytes(), got[len(prefix):], "log %d", i)

		var back raft.Log
		require.NoError(t, c.Decode(got[len(prefix):], &back))
		require.Equal(t, l.Index, back.Index)
		require.True(t, bytes.Equal(l.Data, back.Data))
		require.True(t, l.AppendedAt.Equal(back.AppendedAt))
	}
	// A zone offset in seconds takes the time's second format: the same too.
	l := &raft.Log{Index: 1, AppendedAt: time.Unix(0, 0).In(time.FixedZone("odd", 30))}
	var want bytes.Buffer
	require.NoError(t, c.Encode(l, &want))
	got, err := c.appendEncode(nil, l)
	require.NoError(t, err)
	require.Equal(t, want.Bytes(), got)
}

// wrappedCodec is BinaryCodec under an external ID, so that StoreLogs takes
// the path of a codec it does not know.
type wrappedCodec struct{ BinaryCodec }

func (wrappedCodec) ID() uint64 { return FirstExternalCodecID + 7 }

// TestStoreLogsReusedBuffer appends batches of many sizes, a few of them over
// maxKeptEncBuf, and reads every log back before and after reopening: each
// entry's bytes must be its own, whatever the buffer held before.
func TestStoreLogsReusedBuffer(t *testing.T) {
	for _, codec := range []Codec{&BinaryCodec{}, &wrappedCodec{}} {
		t.Run(fmt.Sprintf("codec%d", codec.ID()), func(t *testing.T) {
			dir := t.TempDir()
			opts := []walOpt{WithSegmentSize(512 << 10)}
			if codec.ID() != CodecBinaryV1 {
				opts = append(opts, WithCodec(codec))
			}
			w, err := Open(dir, opts...)
			require.NoError(t, err)

			rng := rand.New(rand.NewSource(int64(codec.ID()) + 2))
			var all []*raft.Log
			next := uint64(1)
			for batch := 0; batch < 300; batch++ {
				n, size := 1+rng.Intn(40), 300
				switch {
				case batch%97 == 50:
					n, size = 3, maxKeptEncBuf/2 // the buffer grows past the kept size
				case batch%5 == 0:
					size = 4
				}
				logs := make([]*raft.Log, n)
				for i := range logs {
					logs[i] = randomLog(rng, next, size)
					next++
				}
				require.NoError(t, w.StoreLogs(logs))
				all = append(all, logs...)
			}
			check := func(w *WAL) {
				t.Helper()
				for _, want := range all {
					var got raft.Log
					require.NoError(t, w.GetLog(want.Index, &got))
					require.Equal(t, want.Term, got.Term, "index %d", want.Index)
					require.Equal(t, want.Type, got.Type, "index %d", want.Index)
					require.True(t, bytes.Equal(want.Data, got.Data), "index %d: data", want.Index)
					require.True(t, bytes.Equal(want.Extensions, got.Extensions), "index %d: extensions", want.Index)
					require.True(t, want.AppendedAt.Equal(got.AppendedAt), "index %d: time", want.Index)
				}
			}
			check(w)

			// A batch that does not follow the last index is refused and
			// leaves the log as it was.
			require.Error(t, w.StoreLogs([]*raft.Log{randomLog(rng, next+1, 10)}))
			last, err := w.LastIndex()
			require.NoError(t, err)
			require.Equal(t, next-1, last)

			require.NoError(t, w.Close())
			if codec.ID() != CodecBinaryV1 {
				return // upstream reopens segments of its own codec only
			}
			w, err = Open(dir, opts...)
			require.NoError(t, err)
			defer w.Close()
			check(w)
		})
	}
}
