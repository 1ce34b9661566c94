package peerlink

import (
	"context"
	"net"
	"net/http"
	"time"
)

// HTTPClient returns an HTTP client whose connections are the link's
// KindHTTP: a URL's host is the peer address of the node to ask
// ("http://" + peer address + path). Its idle connections close before the
// peer's Config.IdleTimeout would close them.
func (l *Link) HTTPClient() *http.Client {
	return &http.Client{Transport: l.HTTPTransport()}
}

// HTTPTransport returns the transport of HTTPClient.
func (l *Link) HTTPTransport() *http.Transport {
	return &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			return l.Dial(ctx, addr, KindHTTP)
		},
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       l.cfg.IdleTimeout / 2,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
	}
}
