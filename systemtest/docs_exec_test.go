package systemtest

// TestDocsExecuted runs the examples of the docs against a real cluster: the
// convention of what is executed and how answers are compared is in
// internal/docexec's doc.go (and docs/README.md). In short: every ```sh
// block that is one curl command runs, in document order, each doc in a
// fresh three-node cluster whose leader is n1, as `txlog local` starts it
// (without Redis), with 127.0.0.1:8081–8083 and 7101–7103 rewritten to the
// real nodes' ports; the ```json block right after it, tagged
// <!-- openapi: METHOD PATH STATUS -->, is its answer, compared field by
// field; <!-- exec: skip: REASON --> before a block leaves it out.
//
// A mismatch is reported as
//
//	docs/api.md:251: POST /v1/tx?timeout=2s: answer at docs/api.md:270 (POST /v1/tx 200):
//	    status: want 200, got 409
//	    .durability: want "quorum", got no such field
//	    got: {...}

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/internal/docexec"
	"github.com/txlog/txlog/launcher"
)

// docsGetDeadline is how long a GET example is asked again until it matches.
const docsGetDeadline = 10 * time.Second

// TestDocsExecuted: every executed example of README.md and docs/*.md
// answers what its doc shows.
func TestDocsExecuted(t *testing.T) {
	files, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{"../README.md"}, files...)
	answered := 0
	for _, f := range files {
		md, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(f, "../")
		exs, err := docexec.Parse(name, md)
		if err != nil {
			t.Errorf("%v", err)
		}
		run := slices.ContainsFunc(exs, func(e docexec.Example) bool { return e.Skip == "" })
		for _, e := range exs {
			if e.Skip == "" && e.Answer != nil {
				answered++
			}
		}
		if !run {
			continue
		}
		t.Run(name, func(t *testing.T) { runDocExamples(t, exs) })
	}
	if answered < 20 {
		t.Errorf("%d executed examples with an answer in the docs, want 20 or more: the parser missed some", answered)
	}
}

// runDocExamples runs exs in order in a new cluster.
func runDocExamples(t *testing.T, exs []docexec.Example) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	to := map[int]string{}
	for i, p := range c.Nodes() {
		to[docexec.LocalHTTPPorts[i]] = strings.TrimPrefix(c.URL(p.ID()), "http://")
		to[docexec.LocalRaftPorts[i]] = c.RaftAddr(p.ID())
	}
	leadN1(ctx, t, c)

	bound := map[string]docexec.Binding{} // by field and the doc's value: the last one wins
	bindings := func() []docexec.Binding {
		var bs []docexec.Binding
		for _, b := range bound {
			bs = append(bs, b)
		}
		return bs
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	for _, e := range exs {
		if e.Skip != "" {
			t.Logf("%s: skipped: %s", e.Where(), e.Skip)
			continue
		}
		bs := bindings()
		host := docexec.Rewrite(e.Host, to)
		if host == e.Host && !strings.Contains(e.Host, ":") {
			t.Errorf("%s: host %s is none of txlog local's", e.Where(), e.Host)
			continue
		}
		target := docexec.Substitute(docexec.Rewrite(e.Target, to), bs)
		body := docexec.Substitute(docexec.Rewrite(e.Body, to), bs)
		var want []byte
		if e.Answer != nil {
			want = []byte(docexec.Substitute(docexec.Rewrite(string(e.Answer.Body), to), bs))
		}
		ask := func() (int, []byte, error) {
			req, err := http.NewRequestWithContext(ctx, e.Method, "http://"+host+target, strings.NewReader(body))
			if err != nil {
				return 0, nil, err
			}
			req.Header = e.Header.Clone()
			resp, err := hc.Do(req)
			if err != nil {
				return 0, nil, err
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			return resp.StatusCode, b, err
		}
		var report []string
		var got []byte
		check := func(context.Context) error {
			status, b, err := ask()
			if err != nil {
				report = []string{err.Error()}
				return err
			}
			got, report = b, nil
			if e.Answer == nil {
				if status/100 != 2 {
					report = []string{fmt.Sprintf("status: want 2xx (the doc shows no answer), got %d", status)}
				}
			} else {
				if status != e.Answer.Status {
					report = append(report, fmt.Sprintf("status: want %d, got %d", e.Answer.Status, status))
				}
				ms, bs := docexec.Compare(want, b)
				for _, m := range ms {
					report = append(report, m.String())
				}
				if len(report) == 0 {
					for _, b := range bs {
						bound[b.Field+" "+b.Doc] = b
					}
				}
			}
			if len(report) > 0 {
				return errors.New("mismatch")
			}
			return nil
		}
		if e.Method == http.MethodGet {
			gctx, gcancel := context.WithTimeout(ctx, docsGetDeadline)
			_ = launcher.Poll(gctx, 100*time.Millisecond, check)
			gcancel()
		} else {
			_ = check(ctx)
		}
		if len(report) == 0 {
			if testing.Verbose() {
				t.Logf("%s: ok: %s", e.Where(), bytes.TrimSpace(got))
			}
			continue
		}
		where := e.Where()
		if e.Answer != nil {
			where += fmt.Sprintf(": answer at %s:%d (%s)", e.File, e.Answer.Line, e.Answer.Tag)
		}
		t.Errorf("%s:\n    %s\n    got: %s", where, strings.Join(report, "\n    "), bytes.TrimSpace(got))
		if e.Answer != nil && len(got) > 0 {
			// Bind what matched by shape anyway, so one mismatch does not
			// fail every later example that names its txid.
			if _, bs := docexec.Compare(want, got); len(bs) > 0 {
				for _, b := range bs {
					bound[b.Field+" "+b.Doc] = b
				}
			}
		}
	}
}

// leadN1 makes n1 the leader, as the docs' examples assume, and waits until
// every node knows it and is ready.
func leadN1(ctx context.Context, t *testing.T, c *launcher.Cluster) {
	t.Helper()
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if leader != "n1" {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL(leader)+"/v1/cluster/transfer-leadership", strings.NewReader(`{"id":"n1"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("transfer leadership to n1: %d %s", resp.StatusCode, b)
		}
	}
	for _, p := range c.Nodes() {
		err := launcher.Poll(ctx, 100*time.Millisecond, func(ctx context.Context) error {
			for _, path := range []string{"/readyz", "/v1/cluster"} {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL(p.ID())+path, nil)
				if err != nil {
					return err
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return err
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					return fmt.Errorf("%s: %d %s", path, resp.StatusCode, b)
				}
				if strings.HasPrefix(path, "/v1/cluster") && (!bytes.Contains(b, []byte(`"leader_id":"n1"`)) || bytes.Count(b, []byte(`"node_number"`)) < 3) {
					return fmt.Errorf("cluster view %s", b)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: waiting for leader n1 and ready: %v", p.ID(), err)
		}
	}
}
