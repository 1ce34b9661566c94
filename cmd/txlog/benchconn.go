package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Bench HTTP clients (--http-client).
const (
	benchHTTPRaw = "raw"      // rawClient: one keep-alive connection per target, on the client's goroutine
	benchHTTPStd = "net/http" // http.Client with its Transport
)

// rawClient is one bench client's keep-alive HTTP/1.1 connections, one per
// target, each written and read on the client's own goroutine. A load
// generator shares the two cores with the nodes it measures, so what it spends
// per request is taken from them: http.Client's Transport runs two goroutines
// per connection and hands every request and answer between them and the
// caller. The bytes on the wire are the same requests; answers are parsed by
// http.ReadResponse (any framing the server chooses, chunked included).
//
// An https target's connection is wrapped with tls.Client (handshaken on
// dial), so that the cost of TLS shows in the same loop.
type rawClient struct {
	targets []rawTarget
	conns   []*rawConn // by target; nil until dialed, and after a failure
	timeout time.Duration
	dialer  net.Dialer
}

// rawTarget is where one target's requests go, and their head up to the
// Content-Length value.
type rawTarget struct {
	addr string
	head []byte
	tls  *tls.Config // nil for http://
}

// rawConn is an open connection and its read buffer.
type rawConn struct {
	nc   net.Conn
	br   *bufio.Reader
	wbuf []byte
	stop func() bool // ends the watch that closes nc when the run's ctx ends
}

// newRawClient prepares connections to each of urls, whose exchanges may take
// up to timeout each: https:// ones with TLS (tlsCfg, nil for the system's
// roots), every request with the bearer token unless it is "".
func newRawClient(urls []string, timeout time.Duration, tlsCfg *tls.Config, token string) (*rawClient, error) {
	c := &rawClient{timeout: timeout, conns: make([]*rawConn, len(urls))}
	for _, s := range urls {
		u, err := url.Parse(s)
		if err != nil {
			return nil, err
		}
		t := rawTarget{addr: u.Host}
		port := "80"
		switch u.Scheme {
		case "http":
		case "https":
			port = "443"
			t.tls = &tls.Config{MinVersion: tls.VersionTLS12}
			if tlsCfg != nil {
				t.tls = tlsCfg.Clone()
			}
			if t.tls.ServerName == "" {
				t.tls.ServerName = u.Hostname()
			}
			t.tls.NextProtos = []string{"http/1.1"}
		default:
			return nil, fmt.Errorf("--http-client=%s: %s: want an http:// or https:// target", benchHTTPRaw, s)
		}
		if u.Port() == "" {
			t.addr = net.JoinHostPort(u.Hostname(), port)
		}
		auth := ""
		if token != "" {
			auth = "Authorization: Bearer " + token + "\r\n"
		}
		t.head = fmt.Appendf(nil, "POST %s HTTP/1.1\r\nHost: %s\r\n%sContent-Type: application/json\r\nContent-Length: ", u.RequestURI(), u.Host, auth)
		c.targets = append(c.targets, t)
	}
	return c, nil
}

// exchange posts body to target i and reads the answer's body into resp. It
// returns the answer's status code.
func (c *rawClient) exchange(ctx context.Context, i int, body []byte, resp *bytes.Buffer) (int, error) {
	conn := c.conns[i]
	if conn == nil {
		dctx, cancel := context.WithTimeout(ctx, c.timeout)
		nc, err := c.dialer.DialContext(dctx, "tcp", c.targets[i].addr)
		if err == nil && c.targets[i].tls != nil {
			tc := tls.Client(nc, c.targets[i].tls)
			if err = tc.HandshakeContext(dctx); err != nil {
				nc.Close()
			}
			nc = tc
		}
		cancel()
		if err != nil {
			return 0, err
		}
		conn = &rawConn{nc: nc, br: bufio.NewReaderSize(nc, 16<<10)}
		conn.stop = context.AfterFunc(ctx, func() { nc.Close() })
		c.conns[i] = conn
	}
	status, keep, err := conn.exchange(c.targets[i].head, body, resp, time.Now().Add(c.timeout))
	if err != nil && ctx.Err() != nil {
		err = ctx.Err() // the watch closed the connection
	}
	if err != nil || !keep {
		c.drop(i)
	}
	return status, err
}

func (conn *rawConn) exchange(head, body []byte, resp *bytes.Buffer, deadline time.Time) (status int, keep bool, err error) {
	if err := conn.nc.SetDeadline(deadline); err != nil {
		return 0, false, err
	}
	b := append(conn.wbuf[:0], head...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, "\r\n\r\n"...)
	b = append(b, body...)
	conn.wbuf = b
	if _, err := conn.nc.Write(b); err != nil {
		return 0, false, err
	}
	res, err := http.ReadResponse(conn.br, nil)
	if err != nil {
		return 0, false, err
	}
	resp.Reset()
	_, err = resp.ReadFrom(res.Body)
	res.Body.Close()
	if err != nil {
		return 0, false, err
	}
	return res.StatusCode, !res.Close, nil
}

// drop closes the connection to target i; the next exchange dials anew.
func (c *rawClient) drop(i int) {
	if conn := c.conns[i]; conn != nil {
		conn.stop()
		conn.nc.Close()
		c.conns[i] = nil
	}
}

// close closes every connection.
func (c *rawClient) close() {
	for i := range c.conns {
		c.drop(i)
	}
}
