package node

import (
	"strings"
	"testing"
)

// TestParseConfigWebhook: --webhook-allow and --webhook-allow-private, by
// flag and environment; a pattern the matcher cannot read stops the node at
// start, naming it.
func TestParseConfigWebhook(t *testing.T) {
	c, err := ParseConfig([]string{"--id", "n1", "--webhook-allow", "hooks.example.com,127.0.0.1:9000", "--webhook-allow-private"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !c.WebhookAllowPrivate || c.WebhookAllow.Check("http://127.0.0.1:9000/cb") != nil || c.WebhookAllow.Check("http://127.0.0.1:9001/cb") == nil ||
		c.WebhookAllow.Check("https://hooks.example.com/cb") != nil || c.WebhookAllow.Check("https://hooks.example.com:8443/cb") == nil {
		t.Fatalf("WebhookAllow %+v, WebhookAllowPrivate %v; want exactly hooks.example.com on 80/443 and 127.0.0.1:9000, private on", c.WebhookAllow, c.WebhookAllowPrivate)
	}
	c, err = ParseConfig([]string{"--id", "n1"}, env(map[string]string{"TXLOG_WEBHOOK_ALLOW": "[::1]:9000", "TXLOG_WEBHOOK_ALLOW_PRIVATE": "true"}))
	if err != nil || !c.WebhookAllowPrivate || c.WebhookAllow.Check("http://[::1]:9000/") != nil {
		t.Fatalf("from the environment: %+v, %v", c.WebhookAllow, err)
	}
	c, err = ParseConfig([]string{"--id", "n1"}, nil)
	if err != nil || c.WebhookAllowPrivate || !c.WebhookAllow.Empty() {
		t.Fatalf("defaults: allow %+v private %v, %v; want an empty list, private off", c.WebhookAllow, c.WebhookAllowPrivate, err)
	}
	for _, bad := range []string{"10.0.0.*:80", "hooks.example.com:8*", "::1", "hooks.example.com:0"} {
		_, err := ParseConfig([]string{"--id", "n1", "--webhook-allow", "hooks.example.com," + bad}, nil)
		if err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("--webhook-allow with %q: %v; want an error naming it", bad, err)
		}
	}
}
