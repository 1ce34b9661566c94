package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/txlog/txlog/api/wire"
)

// RangeOptions are the parameters of a range read (GET /v1/kv?prefix=P).
type RangeOptions struct {
	// After starts the page past this key: the Next of the page before.
	After string
	// Limit is the most keys in a page, 1 to wire.MaxRangeLimit; 0 is the
	// server's default (wire.DefaultRangeLimit).
	Limit int
	// KeysOnly leaves the values out.
	KeysOnly bool
	// Consistency is wire.ConsistencyLinearizable (default, ""),
	// ConsistencyLeader or ConsistencyStale.
	Consistency string
}

// rangeRequest is the request of GET /v1/kv?prefix=P.
func rangeRequest(prefix string, opts RangeOptions) request {
	q := url.Values{"prefix": {prefix}}
	if opts.After != "" {
		q.Set("after", opts.After)
	}
	if opts.Limit != 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	if opts.KeysOnly {
		q.Set("keys_only", "true")
	}
	if opts.Consistency != "" {
		q.Set("consistency", opts.Consistency)
	}
	return request{method: http.MethodGet, path: "/v1/kv", query: q}
}

// Range reads one page of the keys under prefix ("" for every key) from any
// node: in key order, after opts.After, all as of the page's Index. With
// page.More, pass page.Next as After for the next page (RangeAll does).
func (c *kv) Range(ctx context.Context, prefix string, opts RangeOptions) (wire.KVPage, error) {
	var page wire.KVPage
	err := c.call(ctx, rangeRequest(prefix, opts), true, &page)
	return page, err
}

// RangeAll pages through the keys under prefix from opts.After on, giving
// fn each page in turn, until a page without More, an error, or fn's
// error, which it returns. Each page is as of its own index: a key written
// while RangeAll runs may be seen at its old or new state, once, or, when
// it is new, not at all; every key there throughout is seen exactly once.
func (c *kv) RangeAll(ctx context.Context, prefix string, opts RangeOptions, fn func(wire.KVPage) error) error {
	for {
		page, err := c.Range(ctx, prefix, opts)
		if err != nil {
			return err
		}
		if err := fn(page); err != nil {
			return err
		}
		if !page.More {
			return nil
		}
		opts.After = page.Next
	}
}
