package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/internal/docexec"
)

// TestDocsSecuredCommands runs every txlog command line of the secured
// cluster's examples in README.md and docs/operations.md against a target
// that does not answer, with the credentials of the export line: each must be
// a valid command line (exit 1, the target is down, never 2, a usage error).
func TestDocsSecuredCommands(t *testing.T) {
	f := newTLSFiles(t)
	env := map[string]string{targetsEnv: deadURL(t), caCertEnv: f.ca, tokenEnv: "t", certEnv: f.cert, keyEnv: f.key}
	env[targetsEnv] = strings.Replace(env[targetsEnv], "http://", "https://", 1)
	n := 0
	for _, doc := range []struct{ file, heading string }{
		{"../../README.md", "## Two commands"},
		{"../../docs/operations.md", "## A secured cluster, from the client's side"},
	} {
		b, err := os.ReadFile(doc.file)
		if err != nil {
			t.Fatal(err)
		}
		_, section, ok := strings.Cut(string(b), doc.heading+"\n")
		if !ok {
			t.Fatalf("%s: no heading %q", doc.file, doc.heading)
		}
		section, _, _ = strings.Cut(section, "\n## ")
		if !strings.Contains(section, "TXLOG_TOKEN") {
			t.Fatalf("%s, %s: no secured example", doc.file, doc.heading)
		}
		for _, line := range strings.Split(section, "\n") {
			rest, ok := strings.CutPrefix(line, "txlog ")
			if !ok {
				continue
			}
			args := shellWords(t, rest)
			n++
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(testCtx(t), 500*time.Millisecond)
				defer cancel()
				r := runCLI(t, ctx, env, args...)
				if r.code == 2 || r.code == 0 {
					t.Errorf("%s: txlog %s: exit %d against a dead target, want 1\nstderr:\n%s", doc.file, rest, r.code, r.stderr)
				}
			})
		}
	}
	if n < 6 {
		t.Fatalf("%d txlog command lines in the docs' secured examples, want 6 or more", n)
	}
}

// shellWords splits s as sh would, for the single-quoted words of the docs.
func shellWords(t *testing.T, s string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for _, r := range s {
		switch {
		case r == '\'':
			quoted, inWord = !quoted, true
		case (r == ' ' || r == '\t') && !quoted:
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("unbalanced quote in %q", s)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// TestDocsList: the README's list of documents names every docs/*.md once.
func TestDocsList(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if err := checkDocsList(string(readme), docFiles(t)); err != nil {
		t.Fatal(err)
	}
}

// TestDocsListBad: the check fails on a list that names a doc twice or
// leaves one out.
func TestDocsListBad(t *testing.T) {
	files := []string{"api.md", "leases.md"}
	for _, tt := range []struct{ name, readme, want string }{
		{"twice", "## Documents\n\n* [docs/api.md](docs/api.md)\n* [docs/leases.md](docs/leases.md)\n* [docs/api.md](docs/api.md) again\n", "docs/api.md is listed 2 times"},
		{"missing", "## Documents\n\n* [docs/api.md](docs/api.md)\n\n## Layout\n\n[docs/leases.md](docs/leases.md)\n", "docs/leases.md is listed 0 times"},
		{"no section", "# txlog\n", "no ## Documents"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := checkDocsList(tt.readme, files); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("checkDocsList = %v, want an error with %q", err, tt.want)
			}
		})
	}
}

// docFiles returns the names of docs/*.md.
func docFiles(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(paths) == 0 {
		t.Fatalf("docs/*.md: %v, %d files", err, len(paths))
	}
	var out []string
	for _, p := range paths {
		out = append(out, filepath.Base(p))
	}
	return out
}

// checkDocsList checks that the "## Documents" section of readme links each
// of files (names in docs/) exactly once.
func checkDocsList(readme string, files []string) error {
	_, section, ok := strings.Cut(readme, "## Documents\n")
	if !ok {
		return errors.New("README.md: no ## Documents section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var errs []error
	for _, f := range files {
		if n := strings.Count(section, "](docs/"+f+")"); n != 1 {
			errs = append(errs, fmt.Errorf("README.md, ## Documents: docs/%s is listed %d times, want once", f, n))
		}
	}
	return errors.Join(errs...)
}

// TestDocsTargets: the ports the executed examples assume (docexec's) are
// those `txlog local` opens with its defaults and the CLI's default targets;
// every curl of README.md and docs/*.md asks one of them, and so does every
// loopback --targets or TXLOG_TARGETS of their sh blocks and every loopback
// address in the examples' programs (their default targets).
func TestDocsTargets(t *testing.T) {
	r := runCLI(t, testCtx(t), nil, "local", "-h")
	help := r.stdout + r.stderr
	def := func(flag string) int {
		m := regexp.MustCompile(`(?m)^  -` + flag + ` int\n.*\(default (\d+)\)$`).FindStringSubmatch(help)
		if m == nil {
			t.Fatalf("txlog local -h: no default of -%s in\n%s", flag, help)
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	nodes, httpBase, raftBase := def("nodes"), def("http-base-port"), def("raft-base-port")
	var httpPorts, raftPorts, targets []string
	for i := range nodes {
		httpPorts = append(httpPorts, strconv.Itoa(httpBase+i))
		raftPorts = append(raftPorts, strconv.Itoa(raftBase+i))
		targets = append(targets, fmt.Sprintf("http://127.0.0.1:%d", httpBase+i))
	}
	itoa := func(ps []int) []string {
		var out []string
		for _, p := range ps {
			out = append(out, strconv.Itoa(p))
		}
		return out
	}
	if got := itoa(docexec.LocalHTTPPorts); !slices.Equal(got, httpPorts) {
		t.Errorf("docexec.LocalHTTPPorts %v, txlog local opens %v", got, httpPorts)
	}
	if got := itoa(docexec.LocalRaftPorts); !slices.Equal(got, raftPorts) {
		t.Errorf("docexec.LocalRaftPorts %v, txlog local opens %v", got, raftPorts)
	}
	if want := strings.Join(targets, ","); defaultTargets != want {
		t.Errorf("the CLI's default targets %s, txlog local opens %s", defaultTargets, want)
	}

	files := []string{"../../README.md"}
	for _, f := range docFiles(t) {
		files = append(files, "../../docs/"+f)
	}
	n := 0
	for _, f := range files {
		md, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(f, "../../")
		bad, count, err := docTargets(name, md, httpPorts)
		if err != nil {
			t.Error(err)
		}
		n += count
		for _, b := range bad {
			t.Error(b)
		}
	}
	if n < 20 {
		t.Errorf("%d targets in the docs' examples, want 20 or more: the parser missed some", n)
	}
	progs, err := filepath.Glob("../../examples/*/main.go")
	if err != nil || len(progs) == 0 {
		t.Fatalf("examples/*/main.go: %v, %d files", err, len(progs))
	}
	for _, p := range progs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, hp := range docexec.HostPorts(line) {
				if _, port, _ := strings.Cut(hp, ":"); !slices.Contains(httpPorts, port) {
					t.Errorf("%s:%d: %s is not one of txlog local's HTTP ports %v", strings.TrimPrefix(p, "../../"), i+1, hp, httpPorts)
				}
			}
		}
	}
}

// targetsFlag is a --targets flag or a TXLOG_TARGETS setting and its value.
var targetsFlag = regexp.MustCompile(`(?:--targets[ =]|TXLOG_TARGETS=)(\S+)`)

// docTargets returns a message for each target of md's examples that is
// not a port of ports: each curl's host (skipped ones too) and each loopback
// host:port of a --targets or TXLOG_TARGETS in a sh block; and how many
// targets it looked at.
func docTargets(name string, md []byte, ports []string) (bad []string, n int, err error) {
	exs, err := docexec.Parse(name, md)
	check := func(where, hp string) {
		n++
		host, port, _ := strings.Cut(hp, ":")
		if (host != "localhost" && host != "127.0.0.1") || !slices.Contains(ports, port) {
			bad = append(bad, fmt.Sprintf("%s: %s is not one of txlog local's HTTP ports %v", where, hp, ports))
		}
	}
	for _, e := range exs {
		if e.Host != "" {
			check(e.Where(), e.Host)
		}
	}
	in := false
	for i, line := range strings.Split(string(md), "\n") {
		switch t := strings.TrimSpace(line); {
		case t == "```sh":
			in = true
		case t == "```":
			in = false
		case in:
			for _, m := range targetsFlag.FindAllStringSubmatch(line, -1) {
				for _, hp := range docexec.HostPorts(m[1]) {
					check(fmt.Sprintf("%s:%d", name, i+1), hp)
				}
			}
		}
	}
	return bad, n, err
}

// TestDocTargetsBad: a curl or a --targets on a port txlog local does not
// open is reported with its line.
func TestDocTargetsBad(t *testing.T) {
	ports := []string{"8081", "8082", "8083"}
	for _, tt := range []struct{ name, md, want string }{
		{"curl", "```sh\ncurl -s localhost:8080/v1/kv/k\n```\n", "d.md:2: GET /v1/kv/k: localhost:8080 is not one"},
		{"curl elsewhere", "```sh\ncurl -s example.com:8081/healthz\n```\n", "example.com:8081 is not one"},
		{"targets", "```sh\ngo run ./examples/scheduler --targets http://127.0.0.1:8081,http://127.0.0.1:8080 \\\n  --id x\n```\n", "d.md:2: 127.0.0.1:8080 is not one"},
		{"env", "```sh\nexport TXLOG_TARGETS=https://127.0.0.1:9081\n```\n", "127.0.0.1:9081 is not one"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bad, _, _ := docTargets("d.md", []byte(tt.md), ports)
			if len(bad) != 1 || !strings.Contains(bad[0], tt.want) {
				t.Fatalf("docTargets = %q, want one with %q", bad, tt.want)
			}
		})
	}
}
