package node

import "testing"

// TestPeersURLAndClients checks the one place that builds peer URLs and
// clients: a node's base URL from its HTTP address, one client per base URL,
// kept, and another for another node.
func TestPeersURLAndClients(t *testing.T) {
	p := newPeers("n1", nil, nil)
	t.Cleanup(func() { p.streams.Close() })
	if got, want := p.URL("127.0.0.1:8080"), "http://127.0.0.1:8080"; got != want {
		t.Fatalf("URL() = %q, want %q", got, want)
	}
	a, b := p.clientFor("http://127.0.0.1:1"), p.clientFor("http://127.0.0.1:2")
	if a == nil || a == b {
		t.Fatalf("clientFor() of two nodes = %p, %p; want two clients", a, b)
	}
	if again := p.clientFor("http://127.0.0.1:1"); again != a {
		t.Fatalf("clientFor() again = %p, want the first client %p", again, a)
	}
	if p.client == nil || p.streams == nil {
		t.Fatal("newPeers built no shared client or streams")
	}
}
