package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
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
