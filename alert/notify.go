package alert

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// body encodes e in format f.
func body(e Event, f Format) ([]byte, error) {
	if f == FormatSlack {
		text := fmt.Sprintf("[%s] %s (%s) on %s: %s", strings.ToUpper(e.Status), e.Alert, e.Severity, e.Node, e.Summary)
		return json.Marshal(struct {
			Text string `json:"text"`
		}{text})
	}
	return json.Marshal(e)
}

// deliver sends the events of q to url in order, each with retries.
func (m *Manager) deliver(ctx context.Context, url string, q <-chan Event) {
	for {
		select {
		case <-ctx.Done():
			return
		case e := <-q:
			m.send(ctx, url, e)
		}
	}
}

// send POSTs e until a 2xx answer, up to retryMax attempts with exponential
// backoff between them.
func (m *Manager) send(ctx context.Context, url string, e Event) {
	b, err := body(e, m.cfg.Format)
	if err != nil {
		m.log.Error("alert: encode", "err", err)
		return
	}
	delay := m.cfg.retryBase
	for attempt := 1; ; attempt++ {
		err := m.post(ctx, url, b)
		if err == nil {
			return
		}
		if attempt >= m.cfg.retryMax {
			m.log.Error("alert: webhook failed, giving up", "alert", e.Alert, "status", e.Status, "attempts", attempt, "err", err)
			return
		}
		m.log.Warn("alert: webhook failed, retrying", "alert", e.Alert, "status", e.Status, "attempt", attempt, "in", delay, "err", err)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		delay = min(2*delay, m.cfg.retryCapped)
	}
}

func (m *Manager) post(ctx context.Context, url string, b []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := m.cfg.Client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}
