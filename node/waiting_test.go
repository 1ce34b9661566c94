package node

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/txlog/txlog/api/wire"
)

// TestWaitingServer: while a node waits for its peers every request is
// answered 503 not_ready with why; after the hand-off another server serves
// the same listener.
func TestWaitingServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	url := "http://" + ln.Addr().String() + "/readyz"
	ws := serveWaiting(ln, func() string { return "not heard from: n2" })
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	var body struct{ Error wire.ErrorBody }
	err = json.NewDecoder(res.Body).Decode(&body)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusServiceUnavailable || body.Error.Code != wire.CodeNotReady || !strings.Contains(body.Error.Message, "n2") {
		t.Fatalf("GET /readyz while waiting = %d %+v, %v; want 503 not_ready naming n2", res.StatusCode, body, err)
	}
	ws.handOff()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })}
	go srv.Serve(ln)
	defer srv.Close()
	res, err = http.Get(url)
	if err != nil {
		t.Fatalf("GET after the hand-off: %v", err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || string(b) != "ok" {
		t.Fatalf("GET after the hand-off = %d %q, want 200 ok", res.StatusCode, b)
	}
}
