package api

import (
	"net"
	"sync"
	"time"
)

// msgWriter writes a propose stream's messages to its connection from many
// goroutines, in as few system calls as the load allows. A goroutine that
// finds no write in progress writes its message at once, itself; messages that
// arrive while a write is in progress are appended to a buffer, and the writing
// goroutine writes the whole buffer next, in one call, before it returns. So a
// lone message waits for nothing, and under load a commit that answers many
// requests at once costs a write or two rather than one per answer. Messages
// go out whole, in the order they were handed over.
//
// The first failed write fails the writer: the messages waiting are dropped,
// and every later write returns the same error without writing.
type msgWriter struct {
	conn net.Conn

	mu      sync.Mutex
	writing bool      // a goroutine is writing, and will write buf after
	buf     []byte    // the messages handed over during the write in progress
	spare   []byte    // a written buffer, for buf to reuse
	dl      time.Time // the latest deadline the messages in buf asked for
	err     error     // the failed write's error
}

// maxSpareBytes bounds the buffer a msgWriter keeps for reuse.
const maxSpareBytes = 1 << 20

// write writes msg, or hands it to the goroutine writing, which writes it
// before its own write returns. The write that carries msg ends by deadline at
// the latest (or by a later one that another message asked for). It returns the
// error of the write it made itself, or the writer's error if it had failed
// before: nil for a message handed over, which is dropped if that write fails.
// msg may be reused once write returns.
func (w *msgWriter) write(msg []byte, deadline time.Time) error {
	w.mu.Lock()
	if w.err != nil {
		err := w.err
		w.mu.Unlock()
		return err
	}
	if w.writing {
		w.buf = append(w.buf, msg...)
		if deadline.After(w.dl) {
			w.dl = deadline
		}
		w.mu.Unlock()
		return nil
	}
	w.writing = true
	w.mu.Unlock()
	return w.writeLoop(msg, deadline)
}

// tryWrite writes msg as write does if no write is in progress, and reports
// whether it did: a message that must not wait behind a write (a ping, whose
// timing means something) is left out rather than queued.
func (w *msgWriter) tryWrite(msg []byte, deadline time.Time) (bool, error) {
	w.mu.Lock()
	if w.err != nil {
		err := w.err
		w.mu.Unlock()
		return false, err
	}
	if w.writing {
		w.mu.Unlock()
		return false, nil
	}
	w.writing = true
	w.mu.Unlock()
	return true, w.writeLoop(msg, deadline)
}

// writeLoop writes out, then whatever was handed over meanwhile, until
// nothing is left. The caller has set w.writing.
func (w *msgWriter) writeLoop(out []byte, dl time.Time) error {
	owned := false // out is one of w's buffers, not the caller's message
	for {
		_ = w.conn.SetWriteDeadline(dl)
		_, err := w.conn.Write(out)
		w.mu.Lock()
		if owned && cap(out) <= maxSpareBytes {
			w.spare = out[:0]
		}
		if err != nil {
			w.err, w.writing, w.buf, w.spare = err, false, nil, nil
			w.mu.Unlock()
			return err
		}
		if len(w.buf) == 0 {
			w.writing = false
			w.mu.Unlock()
			return nil
		}
		out, dl, owned = w.buf, w.dl, true
		w.buf, w.spare, w.dl = w.spare, nil, time.Time{}
		w.mu.Unlock()
	}
}
