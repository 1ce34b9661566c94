package node

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/txlog/txlog/api/wire"
)

// waitingServer answers every HTTP request 503 not_ready, with why, while a
// node with an empty data directory waits for its --cluster peers before it
// bootstraps (identity.awaitBootstrap): the client port answers from the
// start, and tools that start members one after another (and wait for each
// one's http.addr) do not wait for ever. handOff stops it and leaves the
// listener open, and the connections still in its backlog, for the node's
// real server.
type waitingServer struct {
	srv  *http.Server
	ln   *handoffListener
	done chan struct{} // closed when Serve returned
}

// serveWaiting serves ln with a handler that answers 503 with why(). ln must
// be a *net.TCPListener (net.Listen("tcp", …)).
func serveWaiting(ln net.Listener, why func() string) *waitingServer {
	w := &waitingServer{
		ln:   &handoffListener{Listener: ln},
		done: make(chan struct{}),
		srv: &http.Server{
			Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				status, body := wire.ErrorStatus(&wire.Error{Code: wire.CodeNotReady, Message: why()})
				rw.Header().Set("Content-Type", "application/json")
				rw.Header().Set("Connection", "close")
				rw.WriteHeader(status)
				json.NewEncoder(rw).Encode(struct {
					Error wire.ErrorBody `json:"error"`
				}{body})
			}),
			ReadHeaderTimeout: 10 * time.Second,
		},
	}
	go func() {
		defer close(w.done)
		w.srv.Serve(w.ln)
	}()
	return w
}

// handOff stops the waiting server and returns once it no longer accepts:
// the listener stays open. Its connections are closed at once, not drained
// (net/http's Shutdown waits up to its poll interval, hundreds of
// milliseconds, for a connection that has not sent its request yet): all it
// ever answers is a 503 that tells the client to come back.
func (w *waitingServer) handOff() {
	w.srv.Close()
	<-w.done
	w.ln.reopen()
}

// handoffListener is a listener whose Close only interrupts Accept (through
// an accept deadline) instead of closing the socket, so that another server
// can accept from it afterwards (reopen).
type handoffListener struct {
	net.Listener
	mu     sync.Mutex
	closed bool
}

func (l *handoffListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	l.mu.Lock()
	closed := l.closed
	l.mu.Unlock()
	if closed {
		if err == nil {
			c.Close() // accepted as the hand-off began: its client retries
		}
		return nil, net.ErrClosed
	}
	return c, err
}

func (l *handoffListener) Close() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	d, ok := l.Listener.(interface{ SetDeadline(time.Time) error })
	if !ok {
		return errors.New("waiting server: listener has no deadline")
	}
	return d.SetDeadline(time.Now())
}

// reopen clears the accept deadline Close set.
func (l *handoffListener) reopen() {
	if d, ok := l.Listener.(interface{ SetDeadline(time.Time) error }); ok {
		d.SetDeadline(time.Time{})
	}
}
