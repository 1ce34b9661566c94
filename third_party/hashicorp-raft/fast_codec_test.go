// Copyright (c) HashiCorp, Inc.
// SPDX-License-Identifier: MPL-2.0

package raft

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math"
	"math/rand"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// The tests of txlog's AppendEntries codec (fast_codec.go, PATCHES.md change 2)
// hold it to go-msgpack with the transport's handles: the same bytes for every
// value, and the same values from those bytes.

func msgpackEncode(t testing.TB, timeNotBuiltin bool, vs ...interface{}) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := codec.NewEncoder(&b, &codec.MsgpackHandle{BasicHandle: codec.BasicHandle{TimeNotBuiltin: timeNotBuiltin}})
	for _, v := range vs {
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// fastCodecInts are the integers at the edges of each msgpack encoding.
var fastCodecInts = []uint64{0, 1, 127, 128, 255, 256, 65535, 65536, math.MaxUint32, math.MaxUint32 + 1, math.MaxInt64, math.MaxUint64}

func randomBytes(r *rand.Rand) []byte {
	if r.Intn(200) == 0 {
		return make([]byte, 65535+r.Intn(3)) // the str16 edge
	}
	switch r.Intn(8) {
	case 0:
		return nil
	case 1:
		return []byte{}
	case 2:
		return bytes.Repeat([]byte{byte(r.Intn(256))}, 31+r.Intn(3)) // the fixstr edge
	}
	b := make([]byte, r.Intn(600))
	r.Read(b)
	return b
}

func randomUint(r *rand.Rand) uint64 {
	if r.Intn(2) == 0 {
		return fastCodecInts[r.Intn(len(fastCodecInts))]
	}
	return r.Uint64() >> r.Intn(64)
}

func randomTime(r *rand.Rand) time.Time {
	switch r.Intn(6) {
	case 0:
		return time.Time{}
	case 1:
		return time.Unix(int64(r.Intn(1<<31)), 0) // the 4-byte timestamp
	case 2:
		return time.Unix(-int64(r.Intn(1<<40)), int64(r.Intn(1e9))) // the 12-byte one
	case 3:
		return time.Unix(int64(r.Intn(1<<34)), int64(r.Intn(1e9))).In(time.FixedZone("x", 3600*(r.Intn(25)-12)))
	case 4:
		return time.Unix(int64(r.Intn(1<<34)), 0).In(time.FixedZone("s", 17)) // seconds in the offset: MarshalBinary's version 2
	}
	return time.Now().Add(time.Duration(r.Int63n(int64(time.Hour))))
}

func randomRequest(r *rand.Rand) *AppendEntriesRequest {
	req := &AppendEntriesRequest{
		RPCHeader: RPCHeader{
			ProtocolVersion: ProtocolVersion(int64(randomUint(r)) >> r.Intn(64)),
			ID:              randomBytes(r),
			Addr:            randomBytes(r),
		},
		Term:              randomUint(r),
		Leader:            randomBytes(r),
		PrevLogEntry:      randomUint(r),
		PrevLogTerm:       randomUint(r),
		LeaderCommitIndex: randomUint(r),
	}
	if r.Intn(2) == 0 {
		req.ProtocolVersion = -req.ProtocolVersion
	}
	switch r.Intn(6) {
	case 0: // nil entries
	case 1:
		req.Entries = []*Log{}
	default:
		n := []int{1, 15, 16, 17, 64}[r.Intn(5)]
		for i := 0; i < n; i++ {
			if r.Intn(20) == 0 {
				req.Entries = append(req.Entries, nil)
				continue
			}
			req.Entries = append(req.Entries, &Log{
				Index:      randomUint(r),
				Term:       randomUint(r),
				Type:       LogType(r.Intn(256)),
				Data:       randomBytes(r),
				Extensions: randomBytes(r),
				AppendedAt: randomTime(r),
			})
		}
	}
	return req
}

// requests returns the edge cases of each length's encoding, then n random
// requests.
func requests(r *rand.Rand, n int) []*AppendEntriesRequest {
	edge := &AppendEntriesRequest{Term: 1}
	for _, size := range []int{0, 31, 32, 255, 256, 65535, 65536} {
		edge.Entries = append(edge.Entries, &Log{Index: uint64(size), Data: make([]byte, size), AppendedAt: time.Unix(1<<34, 1)})
	}
	out := []*AppendEntriesRequest{edge}
	for _, m := range []int{15, 16, 65535, 65536} {
		out = append(out, &AppendEntriesRequest{Entries: make([]*Log, m)}) // nil entries: the array's length encodings
	}
	for i := 0; i < n; i++ {
		out = append(out, randomRequest(r))
	}
	return out
}

func randomResponse(r *rand.Rand) (string, *AppendEntriesResponse) {
	errs := []string{"", "x", string(make([]byte, 40)), "unknown peer"}
	return errs[r.Intn(len(errs))], &AppendEntriesResponse{
		RPCHeader:      RPCHeader{ProtocolVersion: ProtocolVersion(r.Intn(300)), ID: randomBytes(r), Addr: randomBytes(r)},
		Term:           randomUint(r),
		LastLog:        randomUint(r),
		Success:        r.Intn(2) == 0,
		NoRetryBackoff: r.Intn(2) == 0,
	}
}

// trailer follows each encoded value in the decoding tests: the decoders must
// stop right before it, as go-msgpack's does.
const trailer = 0x77

func TestFastCodecRequestSameBytes(t *testing.T) {
	for i, req := range requests(rand.New(rand.NewSource(1)), 200) {
		for _, notBuiltin := range []bool{true, false} {
			want := msgpackEncode(t, notBuiltin, req)
			var b bytes.Buffer
			w := bufio.NewWriter(&b)
			if err := writeAppendEntriesRequest(w, req, notBuiltin); err != nil {
				t.Fatal(err)
			}
			w.Flush()
			if !bytes.Equal(b.Bytes(), want) {
				t.Fatalf("case %d (timeNotBuiltin %v): bytes differ from go-msgpack's\n got %q\nwant %q", i, notBuiltin, b.Bytes(), want)
			}
		}
	}
}

func TestFastCodecResponseSameBytes(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for i := 0; i < 200; i++ {
		msg, resp := randomResponse(r)
		want := msgpackEncode(t, true, msg, resp)
		var b bytes.Buffer
		w := bufio.NewWriter(&b)
		if err := writeAppendEntriesResponse(w, msg, resp); err != nil {
			t.Fatal(err)
		}
		w.Flush()
		if !bytes.Equal(b.Bytes(), want) {
			t.Fatalf("case %d: bytes differ from go-msgpack's\n got %q\nwant %q", i, b.Bytes(), want)
		}
	}
}

// readerOf returns a reader of b and the trailer, with a small buffer so that
// long values cross refills.
func readerOf(b []byte) *bufio.Reader {
	return bufio.NewReaderSize(io.MultiReader(bytes.NewReader(b), bytes.NewReader([]byte{trailer})), 64)
}

func checkTrailer(t *testing.T, r *bufio.Reader) {
	t.Helper()
	if b, err := r.ReadByte(); err != nil || b != trailer {
		t.Fatalf("the decoder did not stop at the end of the value: next byte %#x, %v", b, err)
	}
}

func TestFastCodecRequestSameValues(t *testing.T) {
	for i, req := range requests(rand.New(rand.NewSource(3)), 200) {
		for _, h := range []*codec.MsgpackHandle{
			{BasicHandle: codec.BasicHandle{TimeNotBuiltin: true}}, // the transport's default
			{},               // msgpackUseNewTimeFormat
			{WriteExt: true}, // binaries and the timestamp extension: no raft sender, but go-msgpack reads them
		} {
			var b bytes.Buffer
			if err := codec.NewEncoder(&b, h).Encode(req); err != nil {
				t.Fatal(err)
			}
			enc := b.Bytes()
			var want AppendEntriesRequest
			if err := codec.NewDecoderBytes(enc, &codec.MsgpackHandle{}).Decode(&want); err != nil {
				t.Fatal(err)
			}
			var got AppendEntriesRequest
			br := readerOf(enc)
			if err := readAppendEntriesRequest(br, &got); err != nil {
				t.Fatalf("case %d: %v", i, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("case %d (handle %+v): decoded\n%#v\ngo-msgpack decoded\n%#v", i, h, got, want)
			}
			checkTrailer(t, br)
		}
	}
}

func TestFastCodecResponseSameValues(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	for i := 0; i < 200; i++ {
		msg, resp := randomResponse(r)
		enc := msgpackEncode(t, true, msg, resp)
		dec := codec.NewDecoderBytes(enc, &codec.MsgpackHandle{})
		var wantMsg string
		var want AppendEntriesResponse
		if err := dec.Decode(&wantMsg); err != nil {
			t.Fatal(err)
		}
		if err := dec.Decode(&want); err != nil {
			t.Fatal(err)
		}
		var got AppendEntriesResponse
		br := readerOf(enc)
		gotMsg, err := readAppendEntriesResponse(br, &got)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if gotMsg != wantMsg || !reflect.DeepEqual(got, want) {
			t.Fatalf("case %d: decoded %q %#v, go-msgpack %q %#v", i, gotMsg, got, wantMsg, want)
		}
		checkTrailer(t, br)
	}
}

// A newer sender may add fields: the decoder skips what it does not know, of
// any type, and keeps the rest.
func TestFastCodecUnknownFields(t *testing.T) {
	type newerLog struct {
		Index  uint64
		Future map[string][]interface{}
		Data   []byte
		Zeta   float64
	}
	type newerRequest struct {
		Alpha   []interface{}
		Entries []newerLog
		Term    uint64
		Unknown map[string]interface{}
	}
	in := newerRequest{
		Alpha:   []interface{}{1, -1, "s", 1.5, true, nil, []byte("b"), map[string]interface{}{"k": []interface{}{int64(-1 << 40)}}},
		Entries: []newerLog{{Index: 7, Future: map[string][]interface{}{"a": {uint64(1 << 63), float32(2)}}, Data: []byte("d"), Zeta: 3}},
		Term:    9,
		Unknown: map[string]interface{}{"t": time.Unix(5, 6), "big": string(make([]byte, 70000))},
	}
	enc := msgpackEncode(t, true, in)
	var got AppendEntriesRequest
	br := readerOf(enc)
	if err := readAppendEntriesRequest(br, &got); err != nil {
		t.Fatal(err)
	}
	if got.Term != 9 || len(got.Entries) != 1 || got.Entries[0].Index != 7 || string(got.Entries[0].Data) != "d" {
		t.Fatalf("decoded %#v", got)
	}
	checkTrailer(t, br)
}

// Bad input is an error, never a panic or a huge allocation; a cut value is
// io.ErrUnexpectedEOF.
func TestFastCodecBadInput(t *testing.T) {
	req := randomRequest(rand.New(rand.NewSource(5)))
	for _, l := range req.Entries {
		if l != nil && len(l.Data) > 100 {
			l.Data = l.Data[:100]
		}
	}
	good := msgpackEncode(t, true, req)
	for n := 0; n < len(good); n++ {
		var req AppendEntriesRequest
		err := readAppendEntriesRequest(bufio.NewReader(bytes.NewReader(good[:n])), &req)
		if !errors.Is(err, io.ErrUnexpectedEOF) && !(n == 0 && err == io.ErrUnexpectedEOF) {
			t.Fatalf("cut at %d of %d: %v, want io.ErrUnexpectedEOF", n, len(good), err)
		}
	}
	for name, b := range map[string][]byte{
		"not a map":          {0x93, 1, 2, 3},
		"a huge array":       append([]byte{0x81, 0xa7}, append([]byte("Entries"), 0xdd, 0xff, 0xff, 0xff, 0xff)...),
		"a huge string":      append([]byte{0x81, 0xa4}, append([]byte("Addr"), 0xdb, 0xff, 0xff, 0xff, 0xff)...),
		"negative term":      append([]byte{0x81, 0xa4}, append([]byte("Term"), 0xff)...),
		"a string term":      append([]byte{0x81, 0xa4}, append([]byte("Term"), 0xa1, 'x')...),
		"a log type of 256":  append([]byte{0x81, 0xa7}, append([]byte("Entries"), 0x91, 0x81, 0xa4, 'T', 'y', 'p', 'e', 0xcd, 1, 0)...),
		"a nil field name":   {0x81, 0xc0, 0x01},
		"an unknown type":    append([]byte{0x81, 0xa3}, append([]byte("Zzz"), 0xc1)...),
		"a time of 3 bytes":  append([]byte{0x81, 0xa7}, append([]byte("Entries"), 0x91, 0x81, 0xaa, 'A', 'p', 'p', 'e', 'n', 'd', 'e', 'd', 'A', 't', 0xc4, 3, 1, 2, 3)...),
		"deeply nested skip": append(append([]byte{0x81, 0xa3}, []byte("Zzz")...), bytes.Repeat([]byte{0x91}, 100)...),
	} {
		var req AppendEntriesRequest
		err := readAppendEntriesRequest(bufio.NewReader(bytes.NewReader(b)), &req)
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// FuzzFastCodecRequest feeds the decoder arbitrary bytes (the seeds in
// testdata/fuzz/FuzzFastCodecRequest and below): it must not panic, and where
// both it and go-msgpack decode the input, they must agree.
func FuzzFastCodecRequest(f *testing.F) {
	r := rand.New(rand.NewSource(6))
	for i := 0; i < 8; i++ {
		req := randomRequest(r)
		for _, l := range req.Entries {
			if l != nil && len(l.Data) > 1000 {
				l.Data = l.Data[:1000]
			}
		}
		f.Add(msgpackEncode(f, i%2 == 0, req))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var got AppendEntriesRequest
		br := bufio.NewReader(bytes.NewReader(b))
		err := readAppendEntriesRequest(br, &got)
		if err != nil {
			return
		}
		var want AppendEntriesRequest
		dec := codec.NewDecoderBytes(b, &codec.MsgpackHandle{})
		if dec.Decode(&want) != nil {
			return
		}
		// go-msgpack reads into what the value holds; compare a round trip
		// through the encoder instead of the structs where they may differ
		// (a field given twice, a nil entry in a map key's place).
		var g, w bytes.Buffer
		gw, ww := bufio.NewWriter(&g), bufio.NewWriter(&w)
		if writeAppendEntriesRequest(gw, &got, true) != nil || writeAppendEntriesRequest(ww, &want, true) != nil {
			return
		}
		gw.Flush()
		ww.Flush()
		if !bytes.Equal(g.Bytes(), w.Bytes()) {
			t.Fatalf("decoded\n%#v\ngo-msgpack decoded\n%#v", got, want)
		}
	})
}

// BenchmarkAppendEntriesCodec encodes and decodes a request of 64 entries of
// 400 bytes, as a leader sends under load, with go-msgpack and with the codec.
func BenchmarkAppendEntriesCodec(b *testing.B) {
	req := &AppendEntriesRequest{RPCHeader: RPCHeader{ProtocolVersion: 3, ID: []byte("n1"), Addr: []byte("127.0.0.1:7001")}, Term: 3, PrevLogEntry: 1 << 20, PrevLogTerm: 3, LeaderCommitIndex: 1<<20 - 5}
	for i := 0; i < 64; i++ {
		req.Entries = append(req.Entries, &Log{Index: 1<<20 + uint64(i), Term: 3, Type: LogCommand, Data: make([]byte, 400), AppendedAt: time.Now()})
	}
	enc := msgpackEncode(b, true, req)
	b.Run("go-msgpack", func(b *testing.B) {
		b.ReportAllocs()
		w := bufio.NewWriter(io.Discard)
		e := codec.NewEncoder(w, &codec.MsgpackHandle{BasicHandle: codec.BasicHandle{TimeNotBuiltin: true}})
		rd := bytes.NewReader(enc)
		br := bufio.NewReader(rd)
		d := codec.NewDecoder(br, &codec.MsgpackHandle{})
		for i := 0; i < b.N; i++ {
			if err := e.Encode(req); err != nil {
				b.Fatal(err)
			}
			rd.Reset(enc)
			br.Reset(rd)
			var out AppendEntriesRequest
			if err := d.Decode(&out); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		w := bufio.NewWriter(io.Discard)
		rd := bytes.NewReader(enc)
		br := bufio.NewReader(rd)
		for i := 0; i < b.N; i++ {
			if err := writeAppendEntriesRequest(w, req, true); err != nil {
				b.Fatal(err)
			}
			rd.Reset(enc)
			br.Reset(rd)
			var out AppendEntriesRequest
			if err := readAppendEntriesRequest(br, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// bytesPerRun returns the bytes f allocates per run, on average over n runs.
func bytesPerRun(n int, f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := 0; i < n; i++ {
		f()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / uint64(n)
}

// Small messages take small allocations: the entries' shared blocks are sized
// by the entries left, not allocated whole for a response or a lone entry.
func TestFastCodecAllocations(t *testing.T) {
	one := &AppendEntriesRequest{RPCHeader: RPCHeader{ID: []byte("n1"), Addr: []byte("127.0.0.1:7001")}, Term: 2,
		Entries: []*Log{{Index: 9, Term: 2, Type: LogCommand, Data: make([]byte, 300), AppendedAt: time.Now()}}}
	many := &AppendEntriesRequest{RPCHeader: one.RPCHeader, Term: 2}
	for i := 0; i < 64; i++ {
		many.Entries = append(many.Entries, &Log{Index: uint64(i), Term: 2, Type: LogCommand, Data: make([]byte, 400), AppendedAt: time.Now()})
	}
	resp := msgpackEncode(t, true, "", &AppendEntriesResponse{RPCHeader: one.RPCHeader, Term: 2, LastLog: 9, Success: true})
	for _, c := range []struct {
		name    string
		enc     []byte
		decode  func(*bufio.Reader) error
		maxSize uint64
	}{
		{"a response", resp, func(r *bufio.Reader) error {
			_, err := readAppendEntriesResponse(r, new(AppendEntriesResponse))
			return err
		}, 256},
		{"one entry of 300 bytes", msgpackEncode(t, true, one), func(r *bufio.Reader) error { return readAppendEntriesRequest(r, new(AppendEntriesRequest)) }, 1024},
		{"64 entries of 400 bytes", msgpackEncode(t, true, many), func(r *bufio.Reader) error { return readAppendEntriesRequest(r, new(AppendEntriesRequest)) }, 40 << 10},
	} {
		rd := bytes.NewReader(c.enc)
		br := bufio.NewReader(rd)
		got := bytesPerRun(200, func() {
			rd.Reset(c.enc)
			br.Reset(rd)
			if err := c.decode(br); err != nil {
				t.Fatal(err)
			}
		})
		if got > c.maxSize {
			t.Errorf("%s: %d bytes allocated per decode, want at most %d", c.name, got, c.maxSize)
		}
	}
}

// Writing a request allocates nothing per entry: the entries' times go
// through the writer's own scratch bytes (a new slice per entry before).
func TestFastCodecEncodeAllocations(t *testing.T) {
	req := &AppendEntriesRequest{RPCHeader: RPCHeader{ID: []byte("n1"), Addr: []byte("127.0.0.1:7001")}, Term: 2}
	for i := 0; i < 64; i++ {
		req.Entries = append(req.Entries, &Log{Index: uint64(i), Term: 2, Type: LogCommand, Data: make([]byte, 400),
			AppendedAt: time.Unix(1<<30+int64(i), int64(i)).In(time.FixedZone("s", 17*(i%2)))})
	}
	w := bufio.NewWriterSize(io.Discard, 64<<10)
	for _, notBuiltin := range []bool{true, false} {
		allocs := testing.AllocsPerRun(100, func() {
			if err := writeAppendEntriesRequest(w, req, notBuiltin); err != nil {
				t.Fatal(err)
			}
		})
		if allocs > 1 {
			t.Errorf("timeNotBuiltin %v: %.1f allocations per request of 64 entries, want at most 1", notBuiltin, allocs)
		}
	}
}

// A transport with the codec and one with go-msgpack's reflection (an
// unpatched node) exchange AppendEntries both ways, plain and pipelined, and
// each side gets exactly what the other sent.
func TestFastCodecMixedTransports(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for _, fastServer := range []bool{true, false} {
		server, err := makeTransport(t, true, "localhost:0")
		if err != nil {
			t.Fatal(err)
		}
		client, err := makeTransport(t, true, string(server.LocalAddr()))
		if err != nil {
			t.Fatal(err)
		}
		server.reflectCodec, client.reflectCodec = !fastServer, fastServer

		reqs := requests(r, 30)[5:] // the random ones: the edge cases are large
		resps := make([]AppendEntriesResponse, len(reqs))
		for i := range resps {
			_, rp := randomResponse(r)
			resps[i] = *rp
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; i < 2*len(reqs); i++ {
				rpc := <-server.Consumer()
				got := rpc.Command.(*AppendEntriesRequest)
				j := int(got.Term) // the test numbers the requests in Term
				want := *reqs[j]
				want.Term = got.Term
				if !reflect.DeepEqual(*got, normalized(t, &want)) {
					t.Errorf("fast server %v, request %d: got\n%#v\nwant\n%#v", fastServer, j, *got, want)
				}
				rpc.Respond(&resps[j], nil)
			}
		}()
		for i, req := range reqs {
			req.Term = uint64(i)
			var resp AppendEntriesResponse
			if err := client.AppendEntries("id", server.LocalAddr(), req, &resp); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(resp, resps[i]) {
				t.Errorf("fast server %v, response %d: got %#v, want %#v", fastServer, i, resp, resps[i])
			}
		}
		pipe, err := client.AppendEntriesPipeline("id", server.LocalAddr())
		if err != nil {
			t.Fatal(err)
		}
		for _, req := range reqs {
			if _, err := pipe.AppendEntries(req, new(AppendEntriesResponse)); err != nil {
				t.Fatal(err)
			}
		}
		for i := range reqs {
			f := <-pipe.Consumer()
			if err := f.Error(); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*f.Response(), resps[i]) {
				t.Errorf("fast server %v, pipelined response %d: got %#v, want %#v", fastServer, i, *f.Response(), resps[i])
			}
		}
		<-done
		pipe.Close()
		client.Close()
		server.Close()
	}
}

// normalized returns req as it reads back from go-msgpack's bytes: times in
// the local zone and without a monotonic reading, empty slices for empty ones.
func normalized(t *testing.T, req *AppendEntriesRequest) AppendEntriesRequest {
	var out AppendEntriesRequest
	if err := codec.NewDecoderBytes(msgpackEncode(t, true, req), &codec.MsgpackHandle{}).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}
