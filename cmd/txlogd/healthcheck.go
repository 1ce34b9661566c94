package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// healthcheckTimeout bounds `txlogd --healthcheck URL`: the request, its
// answer and the body. The Dockerfile's HEALTHCHECK gives it longer.
const healthcheckTimeout = 3 * time.Second

// healthcheck is `txlogd --healthcheck URL`: one GET of URL (a node's
// /healthz or /readyz), nil when it answers 200 within healthcheckTimeout.
// It exists for images with no shell and no curl (the Dockerfile's scratch
// runtime): their HEALTHCHECK runs the binary they have. An https URL is
// verified with the system's CA bundle.
func healthcheck(ctx context.Context, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("healthcheck %q: want an http:// or https:// URL", rawURL)
	}
	ctx, cancel := context.WithTimeout(ctx, healthcheckTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("healthcheck %s: %w", u, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	body = bytes.TrimSpace(body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck %s: %s: %s", u, resp.Status, body)
	}
	return nil
}
