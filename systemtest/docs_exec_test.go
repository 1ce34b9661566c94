package systemtest

import (
	"bytes"
	"context"
	"encoding/json"
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

// docsGetDeadline is how long a GET example is asked again until it matches;
// badDocsGetDeadline is TestDocsExecutedBad's, whose examples are meant to
// fail (the reads are linearizable: a right answer matches at once).
const (
	docsGetDeadline    = 10 * time.Second
	badDocsGetDeadline = 2 * time.Second
)

// TestDocsExecuted runs the examples of the docs against a real cluster: the
// convention of what is executed and how answers are compared is in
// internal/docexec's doc.go (and docs/style.md, "Examples that run"). In short: every ```sh
// block that is one curl command runs, in document order, each doc in a
// fresh three-node cluster whose leader is n1, as `txlog local` starts it
// (without Redis), with 127.0.0.1:8081–8083 and 7101–7103 rewritten to the
// real nodes' ports; the ```json block right after it, tagged
// <!-- openapi: METHOD PATH STATUS -->, is its answer, compared field by
// field; <!-- exec: skip: REASON --> before a block leaves it out.
//
// Before each example the runner waits until the leader is the one the doc
// assumes (n1, or the one a transfer-leadership example made) and every node
// is ready, asking for a transfer if an election on a loaded machine moved
// it; a GET is asked again until it matches or docsGetDeadline passes, and a
// write only after a 503 that promises nothing was done.
//
// A mismatch is reported as
//
//	docs/api.md:251: POST /v1/tx?timeout=2s: answer at docs/api.md:270 (POST /v1/tx 200):
//	    status: want 200, got 409
//	    .durability: want "quorum", got no such field
//	    got: {...}
//	    asked: POST http://127.0.0.1:PORT/v1/tx?timeout=2s {...}
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
		t.Run(name, func(t *testing.T) {
			c := startCluster(t)
			for _, f := range runDocExamples(t, c, exs, docsGetDeadline) {
				t.Error(f)
			}
		})
	}
	if answered < 20 {
		t.Errorf("%d executed examples with an answer in the docs, want 20 or more: the parser missed some", answered)
	}
}

// runDocExamples runs exs in order in c, a new cluster, and returns a
// message for each example that did not answer what its doc shows.
func runDocExamples(t *testing.T, c *launcher.Cluster, exs []docexec.Example, getDeadline time.Duration) []string {
	t.Helper()
	var failures []string
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	to := map[int]string{}
	for i, p := range c.Nodes() {
		to[docexec.LocalHTTPPorts[i]] = strings.TrimPrefix(c.URL(p.ID()), "http://")
		to[docexec.LocalRaftPorts[i]] = c.RaftAddr(p.ID())
	}
	leader := "n1" // the leader the next example assumes

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
		if _, ok := to[docexec.FourthHTTPPort]; !ok && docexec.NamesFourth(e) {
			// n4, not a member, to be joined by hand by the example.
			n4 := startExtraNode(t, t.TempDir(), "n4")
			http4, err := n4.HTTPAddr(ctx)
			if err != nil {
				failures = append(failures, fmt.Sprintf("%s: the fourth node: %v", e.Where(), err))
				return failures
			}
			to[docexec.FourthHTTPPort], to[docexec.FourthRaftPort] = http4, raftAddrOf(n4)
		}
		if err := lead(ctx, c, leader); err != nil {
			failures = append(failures, fmt.Sprintf("%s: before it, waiting for leader %s: %v", e.Where(), leader, err))
			return failures
		}
		bs := bindings()
		host := docexec.Rewrite(e.Host, to)
		if host == e.Host && !strings.Contains(e.Host, ":") {
			failures = append(failures, fmt.Sprintf("%s: host %s is none of txlog local's", e.Where(), e.Host))
			continue
		}
		target := docexec.Substitute(docexec.Rewrite(e.Target, to), bs)
		body := docexec.Substitute(docexec.Rewrite(e.Body, to), bs)
		var want []byte
		if e.Answer != nil {
			want = []byte(docexec.Substitute(docexec.Rewrite(string(e.Answer.Body), to), bs))
		}
		var status int
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
			var b []byte
			var err error
			status, b, err = ask()
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
			gctx, gcancel := context.WithTimeout(ctx, getDeadline)
			_ = launcher.Poll(gctx, 100*time.Millisecond, check)
			gcancel()
		} else {
			// A write is asked again only after an answer that promises
			// nothing was done (an election on a loaded machine).
			for range 5 {
				if check(ctx) == nil || !nothingDone(status, got) || lead(ctx, c, leader) != nil {
					break
				}
			}
		}
		if status == http.StatusOK && e.Method == http.MethodPost && strings.HasPrefix(e.Target, "/v1/cluster/transfer-leadership") {
			var tr struct {
				LeaderID string `json:"leader_id"`
			}
			if json.Unmarshal(got, &tr) == nil && tr.LeaderID != "" {
				leader = tr.LeaderID
			}
		}
		if len(report) == 0 && e.Output != "" {
			// -o FILE: the answer goes to a file of the test's, not the doc's directory.
			file := filepath.Join(t.TempDir(), filepath.Base(e.Output))
			if len(got) == 0 {
				report = append(report, fmt.Sprintf("-o %s: an empty body", e.Output))
			} else if err := os.WriteFile(file, got, 0o600); err != nil {
				report = append(report, fmt.Sprintf("-o %s: %v", e.Output, err))
			} else {
				got = []byte(fmt.Sprintf("(%d bytes written to %s)", len(got), filepath.Base(file)))
			}
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
		failures = append(failures, fmt.Sprintf("%s:\n    %s\n    got: %s\n    asked: %s http://%s%s %s", where, strings.Join(report, "\n    "), bytes.TrimSpace(got), e.Method, host, target, body))
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
	return failures
}

// docsLeadTimeout bounds the wait for the leader an example assumes.
const docsLeadTimeout = time.Minute

// lead makes id the leader, and waits until every node knows it, has every
// member's node number and is ready: the state each example starts from.
func lead(ctx context.Context, c *launcher.Cluster, id string) error {
	ctx, cancel := context.WithTimeout(ctx, docsLeadTimeout)
	defer cancel()
	get := func(ctx context.Context, method, url, body string) (int, []byte, error) {
		req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
		if err != nil {
			return 0, nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, b, err
	}
	return launcher.Poll(ctx, 100*time.Millisecond, func(ctx context.Context) error {
		for _, p := range c.Nodes() {
			status, b, err := get(ctx, http.MethodGet, c.URL(p.ID())+"/v1/cluster", "")
			if err != nil {
				return err
			}
			var cs struct {
				LeaderID string `json:"leader_id"`
				Members  []struct {
					NodeNumber int `json:"node_number"`
				} `json:"members"`
			}
			if err := json.Unmarshal(b, &cs); status != http.StatusOK || err != nil {
				return fmt.Errorf("%s: GET /v1/cluster: %d %s", p.ID(), status, b)
			}
			if cs.LeaderID != "" && cs.LeaderID != id {
				// Ask the leader to hand over; the next round checks again.
				_, _, _ = get(ctx, http.MethodPost, c.URL(cs.LeaderID)+"/v1/cluster/transfer-leadership", `{"id":"`+id+`"}`)
				return fmt.Errorf("%s: leader %s, want %s", p.ID(), cs.LeaderID, id)
			}
			numbered := true
			for _, m := range cs.Members {
				numbered = numbered && m.NodeNumber != 0
			}
			if cs.LeaderID != id || !numbered {
				return fmt.Errorf("%s: cluster view %s", p.ID(), b)
			}
			if status, b, err := get(ctx, http.MethodGet, c.URL(p.ID())+"/readyz", ""); err != nil || status != http.StatusOK {
				return fmt.Errorf("%s: /readyz: %d %s %v", p.ID(), status, b, err)
			}
		}
		return nil
	})
}

// TestDocsExecutedBad: the run fails, naming the example's line, the field
// and both values, on a doc whose answer has a wrong value, lacks a field the
// node sends, has one it does not send, or has the wrong status; and passes
// the same doc with the right answers. Each case writes a key of its own.
func TestDocsExecutedBad(t *testing.T) {
	const (
		write     = "```sh\ncurl -s -X POST localhost:8082/v1/tx -d '{\"ops\":[{\"op\":\"put\",\"key\":\"KEY\",\"value\":1}]}'\n```\n\n"
		read      = "```sh\ncurl -s localhost:8083/v1/kv/KEY\n```\n\n"
		committed = `{"txid":"0AP81P6ZW0800","status":"committed","index":7,"term":2,"versions":{"KEY":1},"durability":"quorum"}`
		kv        = `{"key":"KEY","value":1,"version":1,"index":7}`
	)
	doc := func(writeAnswer, readStatus, readAnswer string) string {
		return write + "<!-- openapi: POST /v1/tx 200 -->\n```json\n" + writeAnswer + "\n```\n\n" +
			read + "<!-- openapi: GET /v1/kv/{key} " + readStatus + " -->\n```json\n" + readAnswer + "\n```\n"
	}
	c := startCluster(t)
	for i, tt := range []struct {
		name, md string
		want     []string // each in the one failure; none: it passes
	}{
		{"good", doc(committed, "200", kv), nil},
		{"wrong value", doc(committed, "200", strings.Replace(kv, `"value":1`, `"value":2`, 1)),
			[]string{"bad.md:11: GET /v1/kv/KEY: answer at bad.md:15 (GET /v1/kv/{key} 200)", ".value: want 2, got 1"}},
		{"field missing from the doc", doc(strings.Replace(committed, `,"durability":"quorum"`, "", 1), "200", kv),
			[]string{"bad.md:2: POST /v1/tx: answer at bad.md:6", `.durability: want no such field (the doc does not show it), got "quorum"`}},
		{"field the node does not send", doc(strings.TrimSuffix(committed, "}")+`,"held_by":["wal"]}`, "200", kv),
			[]string{"bad.md:2:", `.held_by: want ["wal"], got no such field`}},
		{"wrong status", doc(committed, "404", kv),
			[]string{"bad.md:11:", "status: want 404, got 200"}},
		{"wrong shape", doc(committed, "200", strings.Replace(kv, `"index":7`, `"index":"7"`, 1)),
			[]string{"bad.md:11:", `.index: want "7", got `}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			key := fmt.Sprintf("docs-bad-%d", i)
			exs, err := docexec.Parse("bad.md", []byte(strings.ReplaceAll(tt.md, "KEY", key)))
			if err != nil {
				t.Fatal(err)
			}
			failures := runDocExamples(t, c, exs, badDocsGetDeadline)
			if len(tt.want) == 0 {
				if len(failures) > 0 {
					t.Fatalf("failures %q, want none", failures)
				}
				return
			}
			if len(failures) != 1 {
				t.Fatalf("failures %q, want one", failures)
			}
			for _, w := range tt.want {
				if w = strings.ReplaceAll(w, "KEY", key); !strings.Contains(failures[0], w) {
					t.Errorf("failure %q\nwant it to contain %q", failures[0], w)
				}
			}
		})
	}
}

// nothingDone reports whether an answer is a 503 whose code promises that
// the request was not carried out.
func nothingDone(status int, body []byte) bool {
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if status != http.StatusServiceUnavailable || json.Unmarshal(body, &e) != nil {
		return false
	}
	return slices.Contains([]string{"no_leader", "not_leader", "shutting_down", "not_ready"}, e.Error.Code)
}

// raftAddrOf returns the --raft-addr p was started with.
func raftAddrOf(p *launcher.Process) string {
	for _, a := range p.Args() {
		if v, ok := strings.CutPrefix(a, "--raft-addr="); ok {
			return v
		}
	}
	return ""
}
