package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"github.com/txlog/txlog/internal/buildinfo"
	"regexp"
	"slices"
	"strings"
)

// Shell completion: `txlog completion bash|zsh|fish` prints a small script
// that asks txlog itself what may come next (`txlog __complete WORDS...`,
// the words after "txlog", the last one the word being completed), as
// cobra's scripts do. The answers come from the command table (commands),
// its subcommands (entry.subs) and the flag sets the commands really parse
// (each command's -h), so the completions cannot drift from the commands.
// cobra would bring the same, but only with the whole CLI rewritten on it;
// the scripts are a dozen lines each.

const bashCompletion = `# bash completion for txlog; load with: source <(txlog completion bash)
_txlog() {
    local cur=${COMP_WORDS[COMP_CWORD]}
    local IFS=$'\n'
    COMPREPLY=($(compgen -W "$(txlog __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null)" -- "$cur"))
}
complete -o default -F _txlog txlog
`

const zshCompletion = `#compdef txlog
# zsh completion for txlog; load with: source <(txlog completion zsh)
_txlog() {
    local -a cands
    cands=("${(@f)$(txlog __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
    if (( ${#cands} )) && [[ -n ${cands[1]} ]]; then
        compadd -- $cands
    else
        _files
    fi
}
compdef _txlog txlog
`

const fishCompletion = `# fish completion for txlog; load with: txlog completion fish | source
function __txlog_complete
    set -l words (commandline -opc)
    set -l cur (commandline -ct)
    txlog __complete $words[2..-1] "$cur" 2>/dev/null
end
complete -c txlog -f -a '(__txlog_complete)'
`

// completion prints the completion script of a shell.
func (c *cli) completion(_ context.Context, args []string) error {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprintln(c.stdout, "usage: txlog completion bash|zsh|fish")
		return flag.ErrHelp
	}
	if len(args) != 1 {
		return usagef("completion takes one shell: bash, zsh or fish")
	}
	switch args[0] {
	case "bash":
		fmt.Fprint(c.stdout, bashCompletion)
	case "zsh":
		fmt.Fprint(c.stdout, zshCompletion)
	case "fish":
		fmt.Fprint(c.stdout, fishCompletion)
	default:
		return usagef("completion: unknown shell %q: want bash, zsh or fish", args[0])
	}
	return nil
}

// complete prints, one a line, the words that may take the place of the last
// of words (the command line after "txlog").
func (c *cli) complete(ctx context.Context, words []string) error {
	if len(words) == 0 {
		words = []string{""}
	}
	cur, before := words[len(words)-1], words[:len(words)-1]
	var cands []string
	switch {
	case len(before) == 0:
		for _, e := range commands {
			if !e.hidden {
				cands = append(cands, e.name)
			}
		}
		cands = append(cands, "--version", "--help")
	case before[len(before)-1] == "-o" || before[len(before)-1] == "--output":
		cands = []string{outputTable, outputJSON}
	default:
		e := findCommand(before[0])
		if e == nil {
			return nil
		}
		if len(before) == 1 && len(e.subs) > 0 && !strings.HasPrefix(cur, "-") {
			cands = e.subs
			break
		}
		if !strings.HasPrefix(cur, "-") {
			return nil // arguments: the shell's own (files)
		}
		path := []string{}
		if len(e.subs) > 0 && len(before) > 1 && slices.Contains(e.subs, before[1]) {
			path = append(path, before[1])
		}
		cands = c.flagsOf(ctx, e, path)
	}
	for _, w := range cands {
		if strings.HasPrefix(w, cur) {
			fmt.Fprintln(c.stdout, w)
		}
	}
	return nil
}

// flagLine matches a flag in the output of flag.PrintDefaults.
var flagLine = regexp.MustCompile(`(?m)^  -([A-Za-z0-9][A-Za-z0-9-]*)`)

// flagsOf returns the flags, as --name, of the command e with its subcommand
// path: those its -h lists.
func (c *cli) flagsOf(ctx context.Context, e *entry, path []string) []string {
	var out bytes.Buffer
	h := &cli{stdout: &out, stderr: &out, lookupEnv: func(string) (string, bool) { return "", false }}
	e.run(h, ctx, append(slices.Clone(path), "-h"))
	var flags []string
	for _, m := range flagLine.FindAllStringSubmatch(out.String(), -1) {
		if len(m[1]) == 1 {
			flags = append(flags, "-"+m[1])
		} else {
			flags = append(flags, "--"+m[1])
		}
	}
	return flags
}

// version prints the module version and VCS revision txlog was built from.
func (c *cli) version(args []string) error {
	if len(args) > 0 {
		return usagef("version takes no arguments, got %q", args)
	}
	fmt.Fprintln(c.stdout, buildinfo.Running("txlog"))
	return nil
}
