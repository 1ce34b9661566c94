package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestHelpListsEveryCommand: txlog help lists every command of the table
// that dispatches them, each command's -h works, and every flag a synopsis
// names is a flag the command parses.
func TestHelpListsEveryCommand(t *testing.T) {
	ctx := testCtx(t)
	help := runCLI(t, ctx, nil, "help")
	if help.code != 0 {
		t.Fatalf("help: exit %d", help.code)
	}
	n := 0
	for _, e := range commands {
		if e.hidden {
			continue
		}
		n++
		t.Run(e.name, func(t *testing.T) {
			if want := strings.TrimSpace("txlog " + e.name + " " + e.synopsis); !strings.Contains(help.stdout, want+"\n") {
				t.Errorf("help does not list %q:\n%s", want, help.stdout)
			}
			words := strings.Fields(strings.NewReplacer("|", " ", "[", " ", "]", " ").Replace(e.synopsis))
			var path []string
			if len(words) > 0 && slices.Contains(e.subs, words[0]) {
				path = words[:1]
			}
			if e.name == "version" || e.name == "help" || e.name == "completion" {
				return
			}
			r := runCLI(t, ctx, nil, append(append([]string{e.name}, path...), "-h")...)
			if r.code != 0 || !strings.Contains(r.stdout, "usage: txlog "+e.name) {
				t.Fatalf("txlog %s %s -h: exit %d, stdout:\n%s\nstderr:\n%s", e.name, strings.Join(path, " "), r.code, r.stdout, r.stderr)
			}
			flags := (&cli{stdout: &syncBuffer{}, stderr: &syncBuffer{}, lookupEnv: noEnv}).flagsOf(ctx, &e, path)
			for _, w := range words {
				if strings.HasPrefix(w, "-") && w != "--" && !slices.Contains(flags, w) {
					t.Errorf("synopsis %q names %s, which txlog %s %s does not take (it takes %q)", e.synopsis, w, e.name, strings.Join(path, " "), flags)
				}
			}
		})
	}
	for _, name := range []string{"submit", "get", "status", "log", "member", "leader", "endpoint", "watch", "lease", "exclusive", "consumers", "token", "bench", "chaos", "local", "completion", "version"} {
		if findCommand(name) == nil {
			t.Errorf("no command %q in the table", name)
		}
	}
	if n < 17 {
		t.Fatalf("%d commands listed, want 17 or more", n)
	}
}

func noEnv(string) (string, bool) { return "", false }

func TestComplete(t *testing.T) {
	tests := []struct {
		words []string
		want  []string // among the candidates
		not   []string
	}{
		{[]string{""}, []string{"submit", "member", "completion", "--version"}, []string{"__complete", "chaos-contender"}},
		{[]string{"su"}, []string{"submit"}, []string{"status"}},
		{[]string{"submit", "--if"}, []string{"--if-version"}, []string{"--timeout"}},
		{[]string{"submit", "--"}, []string{"--timeout", "--targets", "--ack"}, nil},
		{[]string{"lease", ""}, []string{"acquire", "renew", "watch"}, nil},
		{[]string{"lease", "renew", "--to"}, []string{"--token"}, nil},
		{[]string{"member", ""}, []string{"list", "add", "remove", "replace"}, nil},
		{[]string{"member", "add", "--"}, []string{"--http-addr", "--nonvoter"}, nil},
		{[]string{"status", "-o", ""}, []string{"table", "json"}, nil},
		{[]string{"completion", ""}, []string{"bash", "zsh", "fish"}, nil},
		{[]string{"nosuch", "--"}, nil, []string{"--timeout"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.words, " "), func(t *testing.T) {
			r := runCLI(t, testCtx(t), nil, append([]string{"__complete"}, tt.words...)...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			got := strings.Fields(r.stdout)
			for _, w := range tt.want {
				if !slices.Contains(got, w) {
					t.Errorf("candidates %q, want %q among them", got, w)
				}
			}
			for _, w := range tt.not {
				if slices.Contains(got, w) {
					t.Errorf("candidates %q, want no %q", got, w)
				}
			}
		})
	}
}

// TestCompletionScripts: each shell's script is printed, calls back into
// txlog, and (where the shell is installed) parses.
func TestCompletionScripts(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish"} {
		t.Run(sh, func(t *testing.T) {
			r := runCLI(t, testCtx(t), nil, "completion", sh)
			if r.code != 0 || !strings.Contains(r.stdout, "txlog __complete") {
				t.Fatalf("exit %d, stdout:\n%s", r.code, r.stdout)
			}
			if path, err := exec.LookPath(sh); err == nil {
				check := []string{"-n", "-c", r.stdout}
				if sh == "fish" {
					check = []string{"--no-execute", "-c", r.stdout}
				}
				if out, err := exec.Command(path, check...).CombinedOutput(); err != nil {
					t.Fatalf("%s does not parse the script: %v\n%s", sh, err, out)
				}
			}
		})
	}
	if r := runCLI(t, testCtx(t), nil, "completion", "tcsh"); r.code != exitUsage {
		t.Fatalf("completion tcsh: exit %d, want 2", r.code)
	}
}

func TestVersion(t *testing.T) {
	for _, arg := range []string{"--version", "version"} {
		r := runCLI(t, testCtx(t), nil, arg)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "txlog ") || !strings.Contains(r.stdout, "go1.") {
			t.Fatalf("txlog %s: exit %d, stdout %q", arg, r.code, r.stdout)
		}
	}
}
