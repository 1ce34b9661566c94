package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/txlog/txlog/chaos"
	"github.com/txlog/txlog/client"
)

// defaultTargets are the nodes of `txlog local` on its default ports.
const defaultTargets = "http://127.0.0.1:8081,http://127.0.0.1:8082,http://127.0.0.1:8083"

// targetsEnv overrides defaultTargets.
const targetsEnv = "TXLOG_TARGETS"

// Environment variables of the credential flags (see command.targets).
const (
	tokenEnv  = "TXLOG_TOKEN"
	caCertEnv = "TXLOG_CACERT"
	certEnv   = "TXLOG_CERT"
	keyEnv    = "TXLOG_KEY"
)

// usageError is a command line txlog cannot run; it exits with status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// cli is one invocation of txlog: where it writes and what environment it reads.
type cli struct {
	stdout, stderr io.Writer
	lookupEnv      func(string) (string, bool)
	clients        []*client.Client // made by newClient; their endpoints' state is saved at the end (endpoints.go)
}

// run runs the command line args (without the program name).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := &cli{stdout: stdout, stderr: stderr, lookupEnv: os.LookupEnv}
	return c.run(ctx, args)
}

func (c *cli) run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		c.printHelp(c.stderr)
		return usagef("no command given")
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		c.printHelp(c.stdout)
		return nil
	case "version", "--version", "-version":
		return c.version(rest)
	}
	if e := findCommand(name); e != nil {
		err := e.run(c, ctx, rest)
		c.saveDown()
		return err
	}
	return usagef("unknown command %q", name)
}

// entry is one command of txlog: its name, its synopsis as `txlog help`
// shows it (the words after "txlog NAME"; a command's -h starts with the
// same), a line saying what it does, and the function that runs it.
type entry struct {
	name     string
	synopsis string
	summary  string
	run      func(c *cli, ctx context.Context, args []string) error
	subs     []string // its subcommands, for completion
	hidden   bool     // run by txlog itself, not listed
}

// commands is txlog's command table: help, completion and the dispatch of
// run come from it. One line per command. It is filled in by init, as help
// and completion read it.
var commands []entry

func init() {
	commands = []entry{
		{name: "local", synopsis: "[flags] [-- TXLOGD-FLAGS...]", summary: "run a cluster of txlogd processes on this machine until Ctrl-C", run: (*cli).local},
		{name: "submit", synopsis: "[flags] KEY VALUE | --delete KEY | --tx JSON", summary: "run a transaction and print its result", run: (*cli).submit},
		{name: "get", synopsis: "[flags] KEY | --prefix P", summary: "read a key, or page through the keys under a prefix", run: (*cli).get},
		{name: "watch", synopsis: "[flags] KEY | --prefix P", summary: "print each committed change of a key, or of the keys under a prefix", run: (*cli).watch},
		{name: "status", synopsis: "[flags]", summary: "show each node's view of the cluster; exit 1 without a leader or with a member down", run: (*cli).status},
		{name: "log", synopsis: "[flags]", summary: "print committed transactions, with --follow as they commit", run: (*cli).log},
		{name: "member", synopsis: "list | add ID RAFT-ADDR | remove ID | replace ID RAFT-ADDR [flags]", summary: "list and change the cluster's members", run: (*cli).member, subs: []string{"list", "add", "remove", "replace"}},
		{name: "leader", synopsis: "transfer [ID] [flags]", summary: "hand leadership to ID, or to a member Raft chooses", run: (*cli).leader, subs: []string{"transfer"}},
		{name: "endpoint", synopsis: "health [flags]", summary: "ask every node whether it is healthy and ready; exit 1 if one is not", run: (*cli).endpoint, subs: []string{"health"}},
		{name: "lease", synopsis: "acquire|renew|release|get|list|watch [flags] [NAME]", summary: "take, renew, give back, show or watch a lease", run: (*cli).lease, subs: []string{"acquire", "renew", "release", "get", "list", "watch"}},
		{name: "exclusive", synopsis: "--lease NAME [flags] -- CMD [ARGS...]", summary: "run a command only while holding a lease; exit with its status", run: (*cli).exclusive},
		{name: "consumers", synopsis: "[flags] [GROUP]", summary: "list the consumer groups' committed offsets, or show one", run: (*cli).consumers},
		{name: "backup", synopsis: "[flags] [--verify] FILE", summary: "save a verified backup of a node's state to FILE (a follower by default), or check one offline", run: (*cli).backup},
		{name: "restore", synopsis: "FILE --data-dir DIR --id ID [--raft-addr ADDR] [flags]", summary: "seed an empty data dir from a backup offline, as txlogd --restore: the first node of a new cluster", run: (*cli).restore},
		{name: "token", synopsis: "create --role read|write|admin [--name NAME] [--prefix P]...", summary: "make a bearer token and its line for --auth-file", run: (*cli).token, subs: []string{"create"}},
		{name: "bench", synopsis: "[flags] [-- TXLOGD-FLAGS...]", summary: "measure throughput and latency under a closed-loop load", run: (*cli).bench},
		{name: "chaos", synopsis: "[flags] [-- TXLOGD-FLAGS...]", summary: "inject faults under load and check that nothing was lost", run: (*cli).chaos},
		{name: "completion", synopsis: "bash|zsh|fish", summary: "print a shell completion script", run: (*cli).completion, subs: []string{"bash", "zsh", "fish"}},
		{name: "version", synopsis: "", summary: "print the module version and VCS revision (also --version)", run: func(c *cli, _ context.Context, args []string) error { return c.version(args) }},
		{name: "help", synopsis: "", summary: "print this text", run: func(c *cli, _ context.Context, _ []string) error { c.printHelp(c.stdout); return nil }},
		{name: "__complete", hidden: true, run: (*cli).complete},
		{name: "chaos-contender", hidden: true, run: func(c *cli, ctx context.Context, args []string) error {
			return chaos.ContenderMain(ctx, args, c.stderr)
		}},
		{name: "chaos-consumer", hidden: true, run: func(c *cli, ctx context.Context, args []string) error {
			return chaos.ConsumerProcMain(ctx, args, c.stderr)
		}},
	}
}

// findCommand returns the entry of the command name, nil for none.
func findCommand(name string) *entry {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

// printHelp writes `txlog help`: every command of the table with its synopsis.
func (c *cli) printHelp(w io.Writer) {
	var b strings.Builder
	b.WriteString("usage: txlog COMMAND [flags] [args]\n\nCommands:\n")
	for _, e := range commands {
		if e.hidden {
			continue
		}
		fmt.Fprintf(&b, "  txlog %s %s\n        %s\n", e.name, e.synopsis, e.summary)
	}
	b.WriteString(helpFooter)
	fmt.Fprint(w, strings.ReplaceAll(b.String(), " \n", "\n"))
}

const helpFooter = `
Commands that talk to nodes take --targets URL,URL,... (default $TXLOG_TARGETS,
else ` + defaultTargets + `), --timeout (default 5s: how long
one request may take, retries and failover included; a follow or watch fails once
no node has answered for that long) and, for a secured cluster (txlog local --tls),
--token (env TXLOG_TOKEN), --cacert (env TXLOG_CACERT), --cert and --key (or
--cert-key; env TXLOG_CERT, TXLOG_KEY) with https:// targets. Where a command has
a --token or --key of its own (lease renew|release, submit), they are --auth-token
and --cert-key. Tabular output takes -o table|json.

Exit status: 0 done (a transaction committed), 1 failed, 2 bad command line,
3 rejected (a conflict: --if-version, a lease held or fenced), 4 pending (accepted,
not yet committed), 5 unknown outcome (look the transaction up by its idempotency
key). txlog exclusive exits with its command's status (128+N for signal N).
Run 'txlog COMMAND -h' for a command's flags.
`

// command is the flag set of one subcommand and its synopsis.
type command struct {
	*flag.FlagSet
	cli      *cli
	synopsis string
	creds    *credentials   // set by targets
	timeout  *time.Duration // --timeout; set by targets
}

// credentials are the values of the credential flags of a command that talks
// to nodes.
type credentials struct {
	token, caCert, cert, key string
}

// tls returns the client's TLS configuration of c's files, nil without any.
func (c *credentials) tls() (*tls.Config, error) {
	cfg, err := client.TLSConfig(c.caCert, c.cert, c.key)
	if err != nil {
		return nil, usagef("--cacert/--cert/--key: %v", err)
	}
	return cfg, nil
}

// scheme is the scheme of a target given without one: https with a CA or a
// client certificate, else http.
func (c *credentials) scheme() string {
	if c.caCert != "" || c.cert != "" {
		return "https://"
	}
	return "http://"
}

func (c *cli) command(name, synopsis string) *command {
	fs := flag.NewFlagSet("txlog "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // parse reports errors itself
	return &command{FlagSet: fs, cli: c, synopsis: "txlog " + name + " " + synopsis}
}

func (cmd *command) printUsage(w io.Writer) {
	fmt.Fprintf(w, "usage: %s\n\nFlags:\n", cmd.synopsis)
	cmd.SetOutput(w)
	cmd.PrintDefaults()
	cmd.SetOutput(io.Discard)
}

// parse parses flags and positional arguments in any order ("--" ends the flags)
// and returns the positional ones. -h prints the usage and gives flag.ErrHelp; a
// bad flag gives a *usageError.
func (cmd *command) parse(args []string) ([]string, error) {
	pos, afterDash, err := cmd.parseSplit(args)
	return append(pos, afterDash...), err
}

// parseSplit is parse, but returns the positional arguments before and after "--"
// apart.
func (cmd *command) parseSplit(args []string) (pos, afterDash []string, err error) {
	for {
		if err := cmd.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				cmd.printUsage(cmd.cli.stdout)
				return nil, nil, err
			}
			cmd.printUsage(cmd.cli.stderr)
			return nil, nil, &usageError{msg: err.Error()}
		}
		rest := cmd.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return pos, rest, nil
		}
		if len(rest) == 0 {
			return pos, nil, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// targets adds the --targets flag and the credential flags: --auth-token,
// --cacert, --cert and --cert-key, each with its TXLOG_* environment
// variable, and --token and --key as their short names unless the command
// has flags of those names (lease's token, submit's key: call targets after
// defining them).
func (cmd *command) targets() *string {
	def := defaultTargets
	if v := cmd.env(targetsEnv); v != "" {
		def = v
	}
	cmd.credentialFlags()
	cmd.timeout = cmd.Duration("timeout", defaultTimeout, "how long one request may take, retries on other nodes included; a follow or watch fails once no node has answered for this long")
	return cmd.String("targets", def, "comma-separated base URLs of the nodes (env "+targetsEnv+")")
}

// defaultTimeout is the default of --timeout.
const defaultTimeout = 5 * time.Second

// minAttemptTimeout is the least time one exchange with one node gets.
const minAttemptTimeout = 500 * time.Millisecond

// attemptTimeout is how long one exchange with one node may take (besides
// the time it asks the server for): the --timeout shared among the
// endpoints, so that nodes that accept connections and never answer (a
// stopped process, a black-holed address) cannot take all of it and the
// last endpoint still gets a turn.
func attemptTimeout(timeout time.Duration, endpoints int) time.Duration {
	return min(timeout, max(timeout/time.Duration(max(endpoints, 1)), minAttemptTimeout))
}

// output adds -o (and --output): how tabular output is printed, table or
// json, def unless given.
func (cmd *command) output(def string) *string {
	o := cmd.String("o", def, "output format: table or json")
	cmd.StringVar(o, "output", def, "same as -o")
	return o
}

// checkOutput checks the value of -o.
func checkOutput(o string) error {
	if o != outputTable && o != outputJSON {
		return usagef("-o %q: want table or json", o)
	}
	return nil
}

// Values of -o.
const (
	outputTable = "table"
	outputJSON  = "json"
)

// env returns the value of the environment variable name, trimmed.
func (cmd *command) env(name string) string {
	v, _ := cmd.cli.lookupEnv(name)
	return strings.TrimSpace(v)
}

// credentialFlags adds the credential flags of targets and returns where
// their values go.
func (cmd *command) credentialFlags() *credentials {
	env := cmd.env
	cmd.creds = &credentials{}
	cmd.StringVar(&cmd.creds.token, "auth-token", env(tokenEnv), "bearer token of the nodes' --auth-file (env "+tokenEnv+", which keeps it out of ps); --token where the command has no --token of its own")
	if cmd.Lookup("token") == nil { // lease renew|release: --token is the lease's
		cmd.StringVar(&cmd.creds.token, "token", env(tokenEnv), "bearer token of the nodes' --auth-file (env "+tokenEnv+", which keeps it out of ps), as --auth-token")
	}
	cmd.StringVar(&cmd.creds.caCert, "cacert", env(caCertEnv), "PEM file of the CA that signed the nodes' certificates, for https:// targets (env "+caCertEnv+")")
	cmd.StringVar(&cmd.creds.cert, "cert", env(certEnv), "PEM file of the client certificate, for mutual TLS (env "+certEnv+")")
	cmd.StringVar(&cmd.creds.key, "cert-key", env(keyEnv), "PEM file of the client certificate's key (env "+keyEnv+"); --key where the command has no --key of its own")
	if cmd.Lookup("key") == nil { // submit's --key is the key to write
		cmd.StringVar(&cmd.creds.key, "key", env(keyEnv), "PEM file of the client certificate's key (env "+keyEnv+"), as --cert-key")
	}
	return cmd.creds
}

// clientConfig returns the client configuration of the comma-separated
// targets and the credential flags. A target without a scheme gets https://
// when --cacert or --cert is set, else http://.
func (cmd *command) clientConfig(targets string) (client.ClientConfig, error) {
	creds := cmd.creds
	if creds == nil {
		creds = &credentials{}
	}
	var eps []string
	for _, t := range strings.Split(targets, ",") {
		t = strings.TrimSpace(t)
		if t == "" {
			continue
		}
		if !strings.Contains(t, "://") {
			t = creds.scheme() + t
		}
		eps = append(eps, t)
	}
	if len(eps) == 0 {
		return client.ClientConfig{}, usagef("--targets: no URLs")
	}
	tlsCfg, err := creds.tls()
	if err != nil {
		return client.ClientConfig{}, err
	}
	// A command makes a write or two and exits: a client stream would only
	// add its upgrade's round trip, so the CLI writes over plain HTTP (bench
	// and chaos choose with --client).
	cfg := client.ClientConfig{Endpoints: eps, Token: creds.token, TLS: tlsCfg, HTTPWrites: true}
	if cmd.timeout != nil {
		if *cmd.timeout <= 0 {
			return client.ClientConfig{}, usagef("--timeout %v: want more than 0", *cmd.timeout)
		}
		cfg.Timeout = *cmd.timeout
		cfg.AttemptTimeout = attemptTimeout(*cmd.timeout, len(eps))
		cfg.FollowTimeout = *cmd.timeout
		cfg.Endpoints = cmd.cli.orderEndpoints(eps)
	}
	if err := cfg.Validate(); err != nil {
		return client.ClientConfig{}, usagef("--targets/--token: %v", err)
	}
	return cfg, nil
}

// newClient returns a client.Client for the comma-separated targets and the
// credential flags (see clientConfig).
func (cmd *command) newClient(targets string) (*client.Client, error) {
	cfg, err := cmd.clientConfig(targets)
	if err != nil {
		return nil, err
	}
	cl := client.NewClient(cfg)
	cmd.cli.track(cl)
	return cl, nil
}

// printJSON writes v as indented JSON, with <, > and & as they are.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printTable writes a table with header and n rows, row(i) giving the cells
// of row i; an empty cell is shown as "-".
func printTable(w io.Writer, header []string, n int, row func(i int) []string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for i := range n {
		cells := row(i)
		for j, c := range cells {
			cells[j] = dash(c)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}
