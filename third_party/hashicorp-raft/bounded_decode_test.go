// Copyright (c) HashiCorp, Inc.
// SPDX-License-Identifier: MPL-2.0

package raft

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// The tests of txlog's patch, change 6 (PATCHES.md): what the transport's
// decoders allocate follows the bytes that arrived, not the lengths the
// bytes declared.

// str32 returns a msgpack str32 header declaring n bytes, then behind.
func str32(n uint32, behind []byte) []byte {
	b := []byte{mpStr32, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], n)
	return append(b, behind...)
}

// mpField returns a map of one field, name, whose value is the bytes v.
func mpField(name string, v []byte) []byte {
	b := []byte{0x81, 0xa0 | byte(len(name))}
	return append(append(b, name...), v...)
}

// oneEntry returns a request of one entry whose field name is the bytes v.
func oneEntry(name string, v []byte) []byte {
	return mpField("Entries", append([]byte{0x91}, mpField(name, v)...))
}

// entriesOf returns a request that declares n entries and holds one.
func entriesOf(n uint32) []byte {
	b := []byte{mpArray32, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], n)
	return mpField("Entries", append(b, mpField("Index", []byte{7})...))
}

// tenBytes is what arrives behind a declared length in these tests.
var tenBytes = []byte("0123456789")

// A declared length within its bound with ten bytes behind it ends with
// io.ErrUnexpectedEOF, one over its bound is refused when it is read, and
// neither allocates more than a few chunks, whatever it declared: before the
// patch the first case allocated 1 GiB.
func TestBoundedDecode_FastCodecDeclaredHuge(t *testing.T) {
	ext32 := []byte{mpExt32, 0x40, 0, 0, 0, 1} // 1 GiB of extension type 1
	for _, c := range []struct {
		name    string
		in      []byte
		resp    bool  // a response, not a request
		refused bool  // errFastCodec, not io.ErrUnexpectedEOF
		max     int64 // bytes allocated per decode, at most
	}{
		{"an entry's Data of 1 GiB", oneEntry("Data", str32(maxFastLen, tenBytes)), false, false, 96 << 10},
		{"an entry's Data of 200 KiB", oneEntry("Data", str32(200<<10, tenBytes)), false, false, 96 << 10},
		{"an entry's Data of 1 GiB and a byte", oneEntry("Data", str32(maxFastLen+1, tenBytes)), false, true, 8 << 10},
		{"an entry's Data of 4 GiB", oneEntry("Data", str32(1<<32-1, tenBytes)), false, true, 8 << 10},
		{"an entry's Extensions of 1 GiB", oneEntry("Extensions", str32(maxFastLen, tenBytes)), false, false, 96 << 10},
		{"an entry's Data as a bin32 of 1 GiB", oneEntry("Data", append([]byte{mpBin32, 0x40, 0, 0, 0}, tenBytes...)), false, false, 96 << 10},
		{"65536 entries", entriesOf(maxFastEntries), false, false, 128 << 10},
		{"65537 entries", entriesOf(maxFastEntries + 1), false, true, 8 << 10},
		{"4 Gi entries", entriesOf(1<<32 - 1), false, true, 8 << 10},
		{"an Addr of 1 MiB", mpField("Addr", str32(maxFastShort, tenBytes)), false, false, 96 << 10},
		{"an Addr of 1 MiB and a byte", mpField("Addr", str32(maxFastShort+1, tenBytes)), false, true, 8 << 10},
		{"an ID of 1 GiB", mpField("ID", str32(maxFastLen, tenBytes)), false, true, 8 << 10},
		{"a Leader of 1 GiB", mpField("Leader", str32(maxFastLen, tenBytes)), false, true, 8 << 10},
		{"an unknown field of 1 GiB", mpField("Zzz", str32(maxFastLen, tenBytes)), false, false, 8 << 10},
		{"an unknown extension of 1 GiB", mpField("Zzz", append(ext32, tenBytes...)), false, false, 8 << 10},
		{"an unknown field name of 1 GiB", append([]byte{0x81}, str32(maxFastLen, tenBytes)...), false, false, 8 << 10},
		{"a response's error of 1 MiB", str32(maxFastShort, tenBytes), true, false, 96 << 10},
		{"a response's error of 1 GiB", str32(maxFastLen, tenBytes), true, true, 8 << 10},
		{"a response's Addr of 1 GiB", append([]byte{0xa0}, mpField("Addr", str32(maxFastLen, tenBytes))...), true, true, 8 << 10},
	} {
		// With bufio's default buffer and with the server's.
		for _, size := range []int{4096, connReceiveBufferSize} {
			var err error
			got := bytesPerRun(4, func() {
				br := bufio.NewReaderSize(bytes.NewReader(c.in), size)
				if c.resp {
					_, err = readAppendEntriesResponse(br, new(AppendEntriesResponse))
				} else {
					err = readAppendEntriesRequest(br, new(AppendEntriesRequest))
				}
			})
			got -= uint64(size) // the bufio.Reader's buffer
			t.Logf("%s, a buffer of %d: %d bytes, %v", c.name, size, got, err)
			switch {
			case c.refused && !errors.Is(err, errFastCodec):
				t.Errorf("%s: %v, want it refused (errFastCodec)", c.name, err)
			case !c.refused && !errors.Is(err, io.ErrUnexpectedEOF):
				t.Errorf("%s: %v, want io.ErrUnexpectedEOF", c.name, err)
			}
			if int64(got) > c.max {
				t.Errorf("%s, a buffer of %d: %d bytes allocated per decode, want at most %d", c.name, size, got, c.max)
			}
		}
	}
}

// An error names the field whose value failed, also when its read moved the
// reader's buffer (the name was a view of it, and named other bytes).
func TestBoundedDecode_ErrorNamesField(t *testing.T) {
	for _, c := range []struct {
		in   []byte
		want string
	}{
		{oneEntry("Data", str32(200<<10, tenBytes)), `AppendEntriesRequest field "Entries": log field "Data": unexpected EOF`},
		{oneEntry("Zzzz", str32(200<<10, tenBytes)), `AppendEntriesRequest field "Entries": log field "Zzzz": unexpected EOF`},
		{mpField("Addr", str32(200<<10, tenBytes)), `AppendEntriesRequest field "Addr": unexpected EOF`},
	} {
		err := readAppendEntriesRequest(bufio.NewReaderSize(bytes.NewReader(c.in), connReceiveBufferSize), new(AppendEntriesRequest))
		if err == nil || err.Error() != c.want {
			t.Errorf("got %v, want %s", err, c.want)
		}
	}
}

// chunkReader returns at most n bytes a Read, as a connection may.
type chunkReader struct {
	r io.Reader
	n int
}

func (c chunkReader) Read(p []byte) (int, error) {
	if len(p) > c.n {
		p = p[:c.n]
	}
	return c.r.Read(p)
}

// Values longer than readChunk, which grow as they arrive, read back as
// go-msgpack reads them, arriving in pieces of any size, and cost at most
// four times their length (a buffer doubled up to it).
func TestBoundedDecode_FastCodecGrowing(t *testing.T) {
	sizes := []int{readChunk - 1, readChunk, readChunk + 1, 2 * readChunk, connReceiveBufferSize, connReceiveBufferSize + 1, 1<<20 + 3, 5 << 20}
	req := &AppendEntriesRequest{RPCHeader: RPCHeader{ID: []byte("n1"), Addr: bytes.Repeat([]byte("a"), maxFastShort)}, Term: 2}
	for i, n := range sizes {
		data := make([]byte, n)
		for j := range data {
			data[j] = byte(j*7 + i)
		}
		req.Entries = append(req.Entries, &Log{Index: uint64(i + 1), Term: 2, Type: LogCommand, Data: data, Extensions: data[:n/3], AppendedAt: time.Unix(1<<30, 0)})
	}
	enc := msgpackEncode(t, true, req)
	var want AppendEntriesRequest
	if err := codec.NewDecoderBytes(enc, &codec.MsgpackHandle{}).Decode(&want); err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{4096, connReceiveBufferSize} {
		for _, piece := range []int{1 << 20, 65537, 4095, 1000} {
			var got AppendEntriesRequest
			br := bufio.NewReaderSize(chunkReader{bytes.NewReader(append(enc, trailer)), piece}, size)
			if err := readAppendEntriesRequest(br, &got); err != nil {
				t.Fatalf("in pieces of %d, a buffer of %d: %v", piece, size, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("in pieces of %d, a buffer of %d: the values differ from go-msgpack's", piece, size)
			}
			checkTrailer(t, br)
		}
	}

	// An error string of maxFastShort, longer than the reader's buffer.
	long := string(bytes.Repeat([]byte("e"), maxFastShort))
	resp := &AppendEntriesResponse{Term: 3, Success: true}
	br := bufio.NewReader(chunkReader{bytes.NewReader(append(msgpackEncode(t, true, long, resp), trailer)), 1000})
	var gotResp AppendEntriesResponse
	if rpcErr, err := readAppendEntriesResponse(br, &gotResp); err != nil || rpcErr != long || gotResp.Term != 3 || !gotResp.Success {
		t.Fatalf("a long error string: %v, %d bytes, %#v", err, len(rpcErr), gotResp)
	}
	checkTrailer(t, br)

	for _, n := range []int{readChunk + 1, 1<<20 + 3} {
		in := oneEntry("Data", str32(uint32(n), make([]byte, n)))
		rd := bytes.NewReader(in)
		br := bufio.NewReader(rd)
		got := bytesPerRun(4, func() {
			rd.Reset(in)
			br.Reset(rd)
			if err := readAppendEntriesRequest(br, new(AppendEntriesRequest)); err != nil {
				t.Fatal(err)
			}
		})
		if got > uint64(4*n) {
			t.Errorf("an entry of %d bytes: %d bytes allocated per decode, want at most %d", n, got, 4*n)
		}
	}
}

// hugeMsgpackFields are the byte slices and strings of the RPCs go-msgpack
// decodes, each declared 4 GiB long with ten bytes behind.
var hugeMsgpackFields = []struct {
	name string
	in   []byte
	into func() interface{}
}{
	{"RequestVote's Candidate", mpField("Candidate", str32(1<<32-1, tenBytes)), func() interface{} { return new(RequestVoteRequest) }},
	{"RequestVote's ID", mpField("ID", str32(1<<32-1, tenBytes)), func() interface{} { return new(RequestVoteRequest) }},
	{"RequestPreVote's Addr", mpField("Addr", str32(1<<32-1, tenBytes)), func() interface{} { return new(RequestPreVoteRequest) }},
	{"InstallSnapshot's Configuration", mpField("Configuration", str32(1<<32-1, tenBytes)), func() interface{} { return new(InstallSnapshotRequest) }},
	{"InstallSnapshot's Peers as a bin32", mpField("Peers", append([]byte{mpBin32, 0xff, 0xff, 0xff, 0xff}, tenBytes...)), func() interface{} { return new(InstallSnapshotRequest) }},
	{"TimeoutNow's unknown field", mpField("Zzz", str32(1<<32-1, tenBytes)), func() interface{} { return new(TimeoutNowRequest) }},
	{"TimeoutNow's unknown array", mpField("Zzz", append([]byte{mpArray32, 0xff, 0xff, 0xff, 0xff}, tenBytes...)), func() interface{} { return new(TimeoutNowRequest) }},
	{"RequestVote's response's Peers", mpField("Peers", str32(1<<32-1, tenBytes)), func() interface{} { return new(RequestVoteResponse) }},
	{"a response's error string", str32(1<<32-1, tenBytes), func() interface{} { return new(string) }},
	{"an AppendEntries request's Entries, with go-msgpack", mpField("Entries", append([]byte{mpArray32, 0xff, 0xff, 0xff, 0xff}, tenBytes...)), func() interface{} { return new(AppendEntriesRequest) }},
}

// go-msgpack, with the transport's decodeHandle, allocates at most its
// initial 256 KiB for each field declared 4 GiB long: the bound that
// decodeHandle's comment promises.
func TestBoundedDecode_Msgpack(t *testing.T) {
	for _, c := range hugeMsgpackFields {
		var err error
		got := bytesPerRun(4, func() {
			err = codec.NewDecoder(bufio.NewReader(bytes.NewReader(c.in)), decodeHandle()).Decode(c.into())
		})
		if err == nil {
			t.Errorf("%s: no error", c.name)
		}
		t.Logf("%s: %d bytes, %v", c.name, got, err)
		if got > 320<<10 {
			t.Errorf("%s: %d bytes allocated per decode, want at most 320 KiB", c.name, got)
		}
	}
}

// Through a real transport: connections that declare 1 GiB entries (the
// fast codec) or 4 GiB fields (go-msgpack) and send ten bytes are closed at
// a small cost, and the transport still serves AppendEntries after them.
func TestBoundedDecode_Transport(t *testing.T) {
	server, err := makeTransport(t, true, "localhost:0")
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	hostile := [][]byte{
		append([]byte{rpcAppendEntries}, oneEntry("Data", str32(maxFastLen, tenBytes))...),
		append([]byte{rpcAppendEntries}, entriesOf(maxFastEntries)...),
		append([]byte{rpcAppendEntries}, oneEntry("Data", str32(1<<32-1, tenBytes))...),
	}
	for _, c := range hugeMsgpackFields[:6] {
		typ := rpcRequestVote
		switch c.into().(type) {
		case *RequestPreVoteRequest:
			typ = rpcRequestPreVote
		case *InstallSnapshotRequest:
			typ = rpcInstallSnapshot
		case *TimeoutNowRequest:
			typ = rpcTimeoutNow
		}
		hostile = append(hostile, append([]byte{typ}, c.in...))
	}
	got := bytesPerRun(1, func() {
		for i, in := range hostile {
			conn, err := net.Dial("tcp", string(server.LocalAddr()))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Write(in); err != nil {
				t.Fatal(err)
			}
			conn.(*net.TCPConn).CloseWrite()
			// The server closes the connection when the decoder fails.
			conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			if n, err := conn.Read(make([]byte, 1)); err != io.EOF {
				t.Fatalf("hostile connection %d: read %d bytes, %v; want the server to close it", i, n, err)
			}
			conn.Close()
		}
	})
	t.Logf("%d hostile connections: %d bytes", len(hostile), got)
	// Each connection also has the server's buffers (connReceiveBufferSize
	// and bufio.Writer's 4 KiB), upstream's.
	if max := uint64(len(hostile)) * (320<<10 + connReceiveBufferSize + 4096); got > max {
		t.Errorf("%d hostile connections: %d bytes allocated, want at most %d", len(hostile), got, max)
	}

	client, err := makeTransport(t, true, string(server.LocalAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	go func() {
		rpc := <-server.Consumer()
		rpc.Respond(&AppendEntriesResponse{Term: 5, Success: true}, nil)
	}()
	req := &AppendEntriesRequest{RPCHeader: RPCHeader{ID: []byte("n1"), Addr: []byte("127.0.0.1:1")}, Term: 5,
		Entries: []*Log{{Index: 1, Term: 5, Type: LogCommand, Data: []byte("after")}}}
	var resp AppendEntriesResponse
	if err := client.AppendEntries("id", server.LocalAddr(), req, &resp); err != nil || !resp.Success {
		t.Fatalf("an AppendEntries after the hostile connections: %v, %#v", err, resp)
	}
}

// FuzzFastCodecResponse feeds the response decoder arbitrary bytes (the
// seeds in testdata/fuzz/FuzzFastCodecResponse and below): it must not
// panic, and where both it and go-msgpack decode the input, they must agree.
func FuzzFastCodecResponse(f *testing.F) {
	r := rand.New(rand.NewSource(8))
	for i := 0; i < 6; i++ {
		rpcErr, resp := randomResponse(r)
		f.Add(msgpackEncode(f, true, rpcErr, resp))
	}
	f.Add(str32(maxFastShort, tenBytes))
	f.Add(append([]byte{0xa0}, mpField("Addr", str32(maxFastLen, tenBytes))...))
	f.Fuzz(func(t *testing.T, b []byte) {
		var got AppendEntriesResponse
		gotErr, err := readAppendEntriesResponse(bufio.NewReader(bytes.NewReader(b)), &got)
		if err != nil {
			return
		}
		var want AppendEntriesResponse
		var wantErr string
		dec := codec.NewDecoderBytes(b, &codec.MsgpackHandle{})
		if dec.Decode(&wantErr) != nil || dec.Decode(&want) != nil {
			return
		}
		var g, w bytes.Buffer
		gw, ww := bufio.NewWriter(&g), bufio.NewWriter(&w)
		if writeAppendEntriesResponse(gw, gotErr, &got) != nil || writeAppendEntriesResponse(ww, wantErr, &want) != nil {
			return
		}
		gw.Flush()
		ww.Flush()
		if !bytes.Equal(g.Bytes(), w.Bytes()) {
			t.Fatalf("decoded %q\n%#v\ngo-msgpack decoded %q\n%#v", gotErr, got, wantErr, want)
		}
	})
}

// FuzzBoundedDecodeMsgpack feeds the transport's go-msgpack decoder
// (decodeHandle) arbitrary bytes as each RPC it decodes, the first byte
// choosing which: an error, never a panic.
func FuzzBoundedDecodeMsgpack(f *testing.F) {
	for i, c := range hugeMsgpackFields {
		f.Add(append([]byte{byte(i)}, c.in...))
	}
	f.Add(append([]byte{0}, msgpackEncode(f, true, &RequestVoteRequest{RPCHeader: RPCHeader{ID: []byte("n1"), Addr: []byte("a:1")}, Term: 3, LastLogIndex: 9})...))
	f.Add(append([]byte{3}, msgpackEncode(f, true, &InstallSnapshotRequest{Term: 3, Configuration: []byte("c"), Size: 10})...))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		c := hugeMsgpackFields[int(b[0])%len(hugeMsgpackFields)]
		codec.NewDecoder(bufio.NewReader(bytes.NewReader(b[1:])), decodeHandle()).Decode(c.into())
	})
}

// BenchmarkBoundedDecodeLarge decodes a request of one entry of each size
// with the codec: the entries that grow as they arrive (over readChunk).
func BenchmarkBoundedDecodeLarge(b *testing.B) {
	for _, n := range []int{256 << 10, 4 << 20} {
		req := &AppendEntriesRequest{RPCHeader: RPCHeader{ID: []byte("n1"), Addr: []byte("127.0.0.1:7001")}, Term: 3,
			Entries: []*Log{{Index: 1, Term: 3, Type: LogCommand, Data: make([]byte, n), AppendedAt: time.Now()}}}
		enc := msgpackEncode(b, true, req)
		for _, size := range []int{4096, connReceiveBufferSize} { // bufio's default, the server's
			b.Run(fmt.Sprintf("%dKiB/buffer%dKiB", n>>10, size>>10), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(enc)))
				rd := bytes.NewReader(enc)
				br := bufio.NewReaderSize(rd, size)
				for i := 0; i < b.N; i++ {
					rd.Reset(enc)
					br.Reset(rd)
					if err := readAppendEntriesRequest(br, new(AppendEntriesRequest)); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
