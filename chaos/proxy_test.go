package chaos

import (
	"bufio"
	"errors"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// lineServer answers every line it reads with "echo: <line>" and records it.
type lineServer struct {
	ln   net.Listener
	mu   sync.Mutex
	seen []string
}

func startLineServer(t *testing.T) *lineServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &lineServer{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					s.mu.Lock()
					s.seen = append(s.seen, strings.TrimSpace(line))
					s.mu.Unlock()
					if _, err := c.Write([]byte("echo: " + line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return s
}

func (s *lineServer) saw(line string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.seen {
		if l == line {
			return true
		}
	}
	return false
}

type lineConn struct {
	c net.Conn
	r *bufio.Reader
}

func dialLine(t *testing.T, addr string) *lineConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &lineConn{c: c, r: bufio.NewReader(c)}
}

// ask sends line and waits up to d for its echo.
func (l *lineConn) ask(line string, d time.Duration) (string, error) {
	if _, err := l.c.Write([]byte(line + "\n")); err != nil {
		return "", err
	}
	l.c.SetReadDeadline(time.Now().Add(d))
	got, err := l.r.ReadString('\n')
	return strings.TrimSpace(got), err
}

// silence is how long a cut link must stay quiet for the test to believe it.
const silence = 300 * time.Millisecond

func TestNetworkCutAndHeal(t *testing.T) {
	srv := startLineServer(t)
	n := NewNetwork(nil)
	t.Cleanup(n.Close)
	args, err := n.DialArgs("a", map[string]string{"a": "127.0.0.1:1", "b": srv.ln.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	if len(args) != 1 || !strings.HasPrefix(args[0], "--raft-dial=a=127.0.0.1:1,b=127.0.0.1:") {
		t.Fatalf("DialArgs() = %v", args)
	}
	addr := strings.TrimPrefix(args[0], "--raft-dial=a=127.0.0.1:1,b=")

	c := dialLine(t, addr)
	if got, err := c.ask("one", 5*time.Second); err != nil || got != "echo: one" {
		t.Fatalf("through the link: %q, %v", got, err)
	}

	// Isolated: nothing reaches b, nothing comes back, until the heal, which
	// resets the connection that lived through the cut.
	n.Isolate("a")
	if got, err := c.ask("two", silence); !isTimeout(err) {
		t.Fatalf("isolated: %q, %v; want a timeout", got, err)
	}
	if srv.saw("two") {
		t.Fatal("b received a line while a was isolated")
	}
	n.Heal()
	if got, err := c.ask("three", 5*time.Second); err == nil {
		t.Fatalf("a connection cut and healed answered %q; want it reset", got)
	}
	c = dialLine(t, addr)
	if got, err := c.ask("four", 5*time.Second); err != nil || got != "echo: four" {
		t.Fatalf("after heal: %q, %v", got, err)
	}

	// Deaf a: its line reaches b, b's answer does not reach a.
	n.CutInbound("a")
	if got, err := c.ask("five", silence); !isTimeout(err) {
		t.Fatalf("a deaf: %q, %v; want a timeout", got, err)
	}
	if !srv.saw("five") {
		t.Fatal("b did not receive what deaf a sent")
	}
	n.Heal()

	// Deaf b: a's line does not reach b.
	c = dialLine(t, addr)
	n.CutInbound("b")
	if got, err := c.ask("six", silence); !isTimeout(err) {
		t.Fatalf("b deaf: %q, %v; want a timeout", got, err)
	}
	if srv.saw("six") {
		t.Fatal("deaf b received a line")
	}
	n.Heal()
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded)
}

func TestNetworkUpstreamDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String()
	ln.Close()
	n := NewNetwork(nil)
	t.Cleanup(n.Close)
	addr, err := n.Listen("a", "b", down)
	if err != nil {
		t.Fatal(err)
	}
	c := dialLine(t, addr)
	if _, err := c.ask("hello", 5*time.Second); err == nil {
		t.Fatal("a link to a dead peer answered")
	}
}
