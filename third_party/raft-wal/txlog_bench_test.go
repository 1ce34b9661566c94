// Copyright (c) HashiCorp, Inc
// SPDX-License-Identifier: MPL-2.0

package wal

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// BenchmarkStoreLogsTxlog appends batches of 16 entries of 400 bytes, about
// what a txlog node's Raft log gets at 64 clients (an AppendEntries request
// there carries about 13 entries), and reports the allocations per entry. Run it
// with -benchtime 2000x; the dir's fsyncs make most of the time per batch.
func BenchmarkStoreLogsTxlog(b *testing.B) {
	w, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	data := make([]byte, 400)
	batch := make([]*raft.Log, 16)
	for i := range batch {
		batch[i] = &raft.Log{Term: 3, Type: raft.LogCommand, Data: data, AppendedAt: time.Now()}
	}
	idx := uint64(1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, l := range batch {
			l.Index = idx
			idx++
		}
		if err := w.StoreLogs(batch); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
}
