package main

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func readAll(in string) ([]uint64, int, error) {
	var ids []uint64
	lines := 0
	err := readIDs(strings.NewReader(in), func() { lines++ }, func(id uint64) error {
		ids = append(ids, id)
		return nil
	})
	return ids, lines, err
}

func TestReadIDs(t *testing.T) {
	long := strings.Repeat("x", 200<<10) // longer than the reader's buffer
	for _, tc := range []struct {
		name string
		in   string
		want []uint64
		ok   bool
	}{
		{"entries and comments",
			": txlog log stream\n\nid: 7\nevent: entry\ndata: {\"index\":7}\n\n: heartbeat\n\nid: 9\nevent: entry\ndata: {}\n\n",
			[]uint64{7, 9}, true},
		{"CRLF line ends", "id: 3\r\nevent: entry\r\ndata: {}\r\n\r\n", []uint64{3}, true},
		{"a long data line", "id: 4\nevent: entry\ndata: " + long + "\n\nid: 5\nevent: entry\ndata: {}\n\n", []uint64{4, 5}, true},
		{"other event types are skipped", "id: 4\nevent: other\ndata: {}\n\nid: 5\nevent: entry\ndata: {}\n\n", []uint64{5}, true},
		{"an event with no data is none", "id: 4\nevent: entry\n\n", nil, true},
		{"a cut last event counts as none", "id: 4\nevent: entry\ndata: {}\n\nid: 5\nevent: entry\ndata: {}", []uint64{4}, true},
		{"no id", "event: entry\ndata: {}\n\n", nil, false},
		{"id not a number", "id: x1\nevent: entry\ndata: {}\n\n", nil, false},
		{"ids out of order", "id: 5\nevent: entry\ndata: {}\n\nid: 5\nevent: entry\ndata: {}\n\n", []uint64{5}, false},
		{"ids going back", "id: 5\nevent: entry\ndata: {}\n\nid: 2\nevent: entry\ndata: {}\n\n", []uint64{5}, false},
		{"id 0", "id: 0\nevent: entry\ndata: {}\n\n", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ids, _, err := readAll(tc.in)
			if (err == nil) != tc.ok || !slices.Equal(ids, tc.want) {
				t.Errorf("readIDs = %v, %v; want %v, ok %v", ids, err, tc.want, tc.ok)
			}
		})
	}
	// fn's error ends the read.
	stop := errors.New("stop")
	n := 0
	err := readIDs(strings.NewReader("id: 1\nevent: entry\ndata: {}\n\nid: 2\nevent: entry\ndata: {}\n\n"), func() {}, func(uint64) error {
		n++
		return stop
	})
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("readIDs with a failing fn = %v after %d calls; want stop after 1", err, n)
	}
	// line is called on every line, comments and blank ones included.
	if _, lines, _ := readAll(": hi\n\nid: 1\nevent: entry\ndata: {}\n\n"); lines != 6 {
		t.Errorf("line called %d times, want 6", lines)
	}
}

// FuzzReadIDs checks that readIDs never panics, and that the ids it hands on
// increase and each is a line "id: N" of the input.
func FuzzReadIDs(f *testing.F) {
	f.Add(": txlog log stream\n\nid: 7\nevent: entry\ndata: {}\n\n")
	f.Add("id: 3\r\nevent: entry\r\ndata: {}\r\n\r\n")
	f.Add("id: 5\nevent: entry\ndata: {}\n\nid: 2\nevent: entry\ndata: {}\n\n")
	f.Add("id: 18446744073709551616\nevent: entry\ndata: x\n\n")
	f.Add("event: entry\ndata: {}\n\n")
	f.Add("id:9\nevent:entry\ndata\n\n")
	f.Fuzz(func(t *testing.T, in string) {
		ids, _, _ := readAll(in)
		for i, id := range ids {
			if i > 0 && id <= ids[i-1] {
				t.Fatalf("ids %v do not increase", ids)
			}
			if id == 0 {
				t.Fatalf("id 0 handed on: %v", ids)
			}
		}
	})
}
