package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/txlog/txlog/auth"
)

// prefixFlag is a repeated --prefix.
type prefixFlag []string

func (p *prefixFlag) String() string { return strings.Join(*p, ",") }

func (p *prefixFlag) Set(s string) error {
	*p = append(*p, s)
	return nil
}

// token runs `txlog token create`: it makes a new token and prints it on
// the first line of stdout, and on the second the auth file's line for it
// (docs/operations.md, "The auth file"). Only the line's hash of the token
// is kept anywhere: the token is printed once.
func (c *cli) token(_ context.Context, args []string) error {
	if len(args) == 0 || args[0] != "create" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprint(c.stdout, tokenUsage)
			return flag.ErrHelp
		}
		fmt.Fprint(c.stderr, tokenUsage)
		return usagef("token: want the subcommand create")
	}
	cmd := c.command("token create", "--role read|write|admin [--name NAME] [--prefix P]...")
	role := cmd.String("role", "", "what the token may do: read, write or admin (required)")
	name := cmd.String("name", "", "the credential's name in logs and audit records (default ROLE-<first 8 hex digits of the token's hash>)")
	var prefixes prefixFlag
	cmd.Var(&prefixes, "prefix", "a key prefix the token is limited to; repeat for several (default: every key)")
	pos, err := cmd.parse(args[1:])
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("token create takes no arguments, got %q", pos)
	}
	for _, v := range append([]string{*name}, prefixes...) {
		if strings.ContainsAny(v, " \t\r\n") {
			return usagef("%q: a name or prefix in the auth file has no blanks", v)
		}
	}
	r, err := auth.ParseRole(*role)
	if err != nil {
		return usagef("--role: %v", err)
	}
	tok, err := auth.NewToken()
	if err != nil {
		return err
	}
	hash := auth.HashToken(tok)
	if *name == "" {
		*name = r.String() + "-" + hash[:8]
	}
	line := auth.Line(hash, r, *name, prefixes)
	if err := auth.CheckLine(line); err != nil {
		return usagef("the auth file would refuse this token's %v", err)
	}
	fmt.Fprintf(c.stdout, "%s\n%s\n", tok, line)
	fmt.Fprintln(c.stderr, "txlog: the first line is the token, shown only this once; add the second to the --auth-file of every node")
	return nil
}

const tokenUsage = `usage: txlog token create --role read|write|admin [--name NAME] [--prefix P]...

Prints a new random token on the first line and its line for --auth-file on the
second. The file keeps only the token's SHA-256; the token is not shown again.
`
