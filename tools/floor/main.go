// Command floor measures what no replicated log on this machine can beat: the
// latency of one durable write in a directory and of one round trip over
// loopback. It reports medians and 99th percentiles of:
//
//	fdatasync     write 4 KiB at the end of a file, then fdatasync
//	overwrite     write 4 KiB over the start of a file, then fdatasync
//	bbolt         one bbolt transaction that puts a 300-byte value, committed
//	raft-boltdb   one raft-boltdb StoreLogs of a 300-byte entry (a Raft append)
//	raft-wal      the same append with hashicorp/raft-wal, for comparison
//	raft-wal-x3   the same in three raft-wal logs at once, as the three nodes
//	              of a local cluster append on one disk (every append counts)
//	tcp           one byte there and back over 127.0.0.1
//	http          a 300-byte POST and its empty 200 over a keep-alive connection
//
// Usage:
//
//	floor [--dir DIR] [--n 200] [--rtt-n 2000] [--json]
//
// Run it in the directory the nodes keep their data in: the disk, its file
// system and its write cache decide the first four.
package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	raftwal "github.com/hashicorp/raft-wal"
	bolt "go.etcd.io/bbolt"
)

// payloadBytes is the size of the value and of the Raft entry: about what one
// single-op transaction with a 256-byte value takes.
const payloadBytes = 300

// stat is the result of one measurement, in microseconds.
type stat struct {
	Name string  `json:"name"`
	N    int     `json:"n"`
	P50  float64 `json:"p50_us"`
	P99  float64 `json:"p99_us"`
}

func main() {
	dir := flag.String("dir", ".", "directory to measure the disk in (a temporary directory is made inside it)")
	n := flag.Int("n", 200, "durable writes per disk measurement")
	rttN := flag.Int("rtt-n", 2000, "round trips per network measurement")
	asJSON := flag.Bool("json", false, "print the results as JSON")
	flag.Parse()
	if err := run(*dir, *n, *rttN, *asJSON, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

func run(dir string, n, rttN int, asJSON bool, w io.Writer) error {
	if n < 1 || rttN < 1 {
		return fmt.Errorf("--n %d, --rtt-n %d: want at least 1", n, rttN)
	}
	tmp, err := os.MkdirTemp(dir, "floor-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	measures := []struct {
		name string
		n    int
		f    func(dir string, n int) ([]time.Duration, error)
	}{
		{"fdatasync", n, appendSync},
		{"overwrite", n, overwriteSync},
		{"bbolt", n, boltCommit},
		{"raft-boltdb", n, raftAppend},
		{"raft-wal", n, raftWALAppend},
		{"raft-wal-x3", n, raftWALAppend3},
		{"tcp", rttN, tcpRoundTrip},
		{"http", rttN, httpRoundTrip},
	}
	var stats []stat
	for _, m := range measures {
		d, err := m.f(tmp, m.n)
		if err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		stats = append(stats, summarize(m.name, d))
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(stats)
	}
	fmt.Fprintf(w, "%-12s %8s %10s %10s\n", "floor", "n", "p50", "p99")
	for _, s := range stats {
		fmt.Fprintf(w, "%-12s %8d %8.0fµs %8.0fµs\n", s.Name, s.N, s.P50, s.P99)
	}
	return nil
}

func summarize(name string, d []time.Duration) stat {
	slices.Sort(d)
	us := func(p float64) float64 {
		i := min(int(p*float64(len(d))), len(d)-1)
		return float64(d[i]) / float64(time.Microsecond)
	}
	return stat{Name: name, N: len(d), P50: us(0.5), P99: us(0.99)}
}

// timeEach runs f n times and returns how long each call took.
func timeEach(n int, f func(i int) error) ([]time.Duration, error) {
	d := make([]time.Duration, 0, n)
	for i := range n {
		start := time.Now()
		if err := f(i); err != nil {
			return nil, err
		}
		d = append(d, time.Since(start))
	}
	return d, nil
}

// appendSync appends 4 KiB and fdatasyncs, as a log does: the file grows, so
// its size goes to disk too.
func appendSync(dir string, n int) ([]time.Duration, error) {
	f, err := os.Create(filepath.Join(dir, "append"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := bytes.Repeat([]byte{'x'}, 4096)
	return timeEach(n, func(int) error {
		if _, err := f.Write(buf); err != nil {
			return err
		}
		return fdatasync(f)
	})
}

// overwriteSync overwrites the first 4 KiB of a file and fdatasyncs: no size
// change, data only.
func overwriteSync(dir string, n int) ([]time.Duration, error) {
	f, err := os.Create(filepath.Join(dir, "overwrite"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := bytes.Repeat([]byte{'y'}, 4096)
	if _, err := f.Write(buf); err != nil {
		return nil, err
	}
	if err := f.Sync(); err != nil {
		return nil, err
	}
	return timeEach(n, func(int) error {
		if _, err := f.WriteAt(buf, 0); err != nil {
			return err
		}
		return fdatasync(f)
	})
}

// boltCommit commits one bbolt transaction with one put per call, with the
// options store.DB uses.
func boltCommit(dir string, n int) ([]time.Duration, error) {
	db, err := bolt.Open(filepath.Join(dir, "bolt.db"), 0o600, &bolt.Options{
		FreelistType:   bolt.FreelistMapType,
		NoFreelistSync: true,
	})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	val := bytes.Repeat([]byte{'v'}, payloadBytes)
	return timeEach(n, func(i int) error {
		return db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("kv"))
			if err != nil {
				return err
			}
			return b.Put(binary.BigEndian.AppendUint64(nil, uint64(i)), val)
		})
	})
}

// raftAppend stores one Raft log entry per call in raft-boltdb, as
// replication does on the leader and on every follower before it answers.
func raftAppend(dir string, n int) ([]time.Duration, error) {
	store, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db")})
	if err != nil {
		return nil, err
	}
	defer store.Close()
	return timeAppends(store, n)
}

// timeAppends times n appends of one payloadBytes entry each to store.
func timeAppends(store raft.LogStore, n int) ([]time.Duration, error) {
	data := bytes.Repeat([]byte{'r'}, payloadBytes)
	return timeEach(n, func(i int) error {
		return store.StoreLogs([]*raft.Log{{Index: uint64(i + 1), Term: 1, Type: raft.LogCommand, Data: data}})
	})
}

// raftWALAppend is raftAppend with hashicorp/raft-wal, a segment-file log
// store that appends with one write and one fdatasync.
func raftWALAppend(dir string, n int) ([]time.Duration, error) {
	walDir := filepath.Join(dir, "raft-wal")
	if err := os.Mkdir(walDir, 0o755); err != nil {
		return nil, err
	}
	store, err := raftwal.Open(walDir)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	return timeAppends(store, n)
}

// raftWALAppend3 runs raftWALAppend in three logs at once and returns the
// latencies of all their appends. The three nodes of a local cluster share
// one disk, and a disk takes its cache flushes one after the other: when they
// overlap, each fsync waits for the others', and a cluster's own appends take
// longer than raft-wal alone says.
func raftWALAppend3(dir string, n int) ([]time.Duration, error) {
	var wg sync.WaitGroup
	got := make([][]time.Duration, 3)
	errs := make([]error, 3)
	for i := range 3 {
		d := filepath.Join(dir, fmt.Sprintf("x3-%d", i))
		if err := os.Mkdir(d, 0o755); err != nil {
			return nil, err
		}
		wg.Go(func() { got[i], errs[i] = raftWALAppend(d, n) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return slices.Concat(got...), nil
}

// tcpRoundTrip sends one byte to an echo server over loopback and waits for it.
func tcpRoundTrip(_ string, n int) ([]time.Duration, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(c, c)
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		return nil, err
	}
	defer c.Close()
	b := []byte{1}
	return timeEach(n, func(int) error {
		if _, err := c.Write(b); err != nil {
			return err
		}
		_, err := io.ReadFull(c, b)
		return err
	})
}

// httpRoundTrip posts 300 bytes to an empty net/http handler over a
// keep-alive loopback connection.
func httpRoundTrip(_ string, n int) ([]time.Duration, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte("{}"))
	})}
	go srv.Serve(l)
	defer srv.Shutdown(context.Background())
	url := "http://" + l.Addr().String() + "/"
	body := bytes.Repeat([]byte{'h'}, payloadBytes)
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	return timeEach(n, func(int) error {
		resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		return resp.Body.Close()
	})
}
