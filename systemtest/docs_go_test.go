package systemtest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/internal/docexec"
	"github.com/txlog/txlog/launcher"
)

// goExampleProgram is the program a Go example of the docs runs in: the
// example is main's body after ctx, and the program prints what the example
// left in res and err.
const goExampleProgram = `package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
)

var (
	_ = errors.Is
	_ json.RawMessage
	_ wire.TxRequest
	_ client.ClientConfig
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
EXAMPLE
	out, _ := json.Marshal(res)
	fmt.Printf("%s\n%v\n", out, err)
}
`

// goExample returns the first ` + "```go" + ` block under heading in md.
func goExample(md, heading string) (string, error) {
	_, rest, ok := strings.Cut(md, "\n"+heading+"\n")
	if !ok {
		return "", fmt.Errorf("no heading %q", heading)
	}
	_, rest, ok = strings.Cut(rest, "\n```go\n")
	if !ok {
		return "", fmt.Errorf("no ```go block under %q", heading)
	}
	block, _, ok := strings.Cut(rest, "\n```\n")
	if !ok {
		return "", fmt.Errorf("the ```go block under %q does not end", heading)
	}
	return block, nil
}

// runGoExample runs example, a Go example naming the ports `txlog local`
// opens, as goExampleProgram against c, and checks that it committed its
// write: that err is nil, res is committed with a txid, and a read of every
// key it wrote gives the version res names.
func runGoExample(ctx context.Context, t *testing.T, c *launcher.Cluster, example string) error {
	t.Helper()
	to := map[int]string{}
	for i, p := range c.Nodes() {
		to[docexec.LocalHTTPPorts[i]] = strings.TrimPrefix(c.URL(p.ID()), "http://")
	}
	code := docexec.Rewrite(example, to)
	if code == example {
		return fmt.Errorf("the example names none of the ports 8081-8083 of txlog local")
	}
	src := filepath.Join(t.TempDir(), "main.go")
	if err := os.WriteFile(src, []byte(strings.Replace(goExampleProgram, "EXAMPLE", code, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, "go", "run", src).CombinedOutput()
	if err != nil {
		return fmt.Errorf("go run: %v:\n%s", err, out)
	}
	resLine, errLine, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	var res struct {
		TxID     string            `json:"txid"`
		Status   string            `json:"status"`
		Versions map[string]uint64 `json:"versions"`
	}
	if err := json.Unmarshal([]byte(resLine), &res); err != nil {
		return fmt.Errorf("the program printed %q: %v", out, err)
	}
	if errLine != "<nil>" || res.Status != "committed" || res.TxID == "" || len(res.Versions) == 0 {
		return fmt.Errorf("the example's write: res %s, err %s; want committed with a txid and versions, err nil", resLine, errLine)
	}
	cl := client.NewClient(client.ClientConfig{Endpoints: c.HTTPAddrs()})
	for key, v := range res.Versions {
		kv, err := cl.Get(ctx, key, wire.ReadOptions{})
		if err != nil || kv.Version != v {
			return fmt.Errorf("GET %s after the example = %+v, %v; want version %d", key, kv, err, v)
		}
	}
	return nil
}

// TestDocsGoClient runs docs/api.md's Go client example as a program's main
// against a fresh cluster, with its ports rewritten to the real nodes' (as
// TestDocsExecuted does for curl): it compiles, and its write commits.
func TestDocsGoClient(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	md, err := os.ReadFile("../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	example, err := goExample(string(md), "## The Go client")
	if err != nil {
		t.Fatal(err)
	}
	c := startCluster(t)
	if err := runGoExample(ctx, t, c, example); err != nil {
		t.Errorf("docs/api.md, The Go client: %v", err)
	}
}

// TestDocsGoClientBad: the runner fails an example that does not compile,
// one whose write is rejected, and one that names no port of txlog local.
func TestDocsGoClientBad(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	c := startCluster(t)
	const put = "c := client.NewClient(client.ClientConfig{Endpoints: []string{\"http://127.0.0.1:8081\"}})\n" +
		"res, err := c.Submit(ctx, wire.TxRequest{Ops: []wire.Op{{Op: wire.OpPut, Key: \"docs-go-bad\", Value: json.RawMessage(`1`)IFVERSION}}}, wire.SubmitOptions{})\n"
	for _, tt := range []struct {
		name, example, want string
	}{
		{"good", strings.Replace(put, "IFVERSION", "", 1), ""},
		{"does not compile", strings.Replace(put, "IFVERSION", ", Bogus: 1", 1), "go run: "},
		{"rejected", strings.Replace(put, "IFVERSION", ", IfVersion: func(v uint64) *uint64 { return &v }(7)", 1), `"status":"rejected"`},
		{"no local port", strings.ReplaceAll(strings.Replace(put, "IFVERSION", "", 1), "8081", "9999"), "names none of the ports"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := runGoExample(ctx, t, c, tt.example)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("runGoExample() = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("runGoExample() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
