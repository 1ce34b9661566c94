package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/txlog/txlog/api/wire"
)

// readIDs reads the Server-Sent Events of GET /v1/log/stream from r and calls
// fn with the id (the Raft index) of each entry event (events of other types
// are skipped, as client.Follow skips them), without decoding its
// data: the subscribers of the bench share the machine with the nodes, and
// what they spend decoding JSON the nodes do not get. line is called on every
// line, comments included. The ids must increase; an entry event without a
// numeric id, or with one not above the last, is an error. It returns fn's
// error, that error, or the one that ended r (nil at EOF).
func readIDs(r io.Reader, line func(), fn func(id uint64) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var (
		id, event []byte
		hasID     bool
		hasData   bool
		last      uint64
	)
	for {
		l, err := br.ReadSlice('\n')
		long := errors.Is(err, bufio.ErrBufferFull)
		if err != nil && !long {
			if errors.Is(err, io.EOF) {
				return nil // a line cut short counts as none
			}
			return err
		}
		head := l
		if long {
			// A long line (a big entry's data): only its field name
			// matters. Skip the rest of it.
			head = bytes.Clone(l)
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			if err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
		} else {
			head = bytes.TrimSuffix(head[:len(head)-1], []byte("\r"))
		}
		line()
		if len(head) == 0 { // the end of an event
			if hasData && string(event) == wire.LogEventEntry {
				if !hasID {
					return errors.New("log stream: an entry event without an id")
				}
				n, err := strconv.ParseUint(string(id), 10, 64)
				if err != nil {
					return fmt.Errorf("log stream: event id %q: not an index", id)
				}
				if n <= last {
					return fmt.Errorf("log stream: event id %d after %d: out of order", n, last)
				}
				if err := fn(n); err != nil {
					return err
				}
				last = n
			}
			id, event, hasID, hasData = id[:0], event[:0], false, false
			continue
		}
		if head[0] == ':' {
			continue // a comment: the greeting or the heartbeat
		}
		name, value, _ := bytes.Cut(head, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(name) {
		case "id":
			id, hasID = append(id[:0], value...), true
		case "event":
			event = append(event[:0], value...)
		case "data":
			hasData = true
		}
	}
}
