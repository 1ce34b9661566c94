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

const usageText = `usage: txlog COMMAND [flags] [args]

Commands:
  local    run a cluster of txlogd processes on this machine until Ctrl-C
  chaos    inject faults under load and check that nothing was lost
  submit   run a transaction and print its result
  get      read a key
  status   show each node's view of the cluster
  log      print committed transactions
  lease    acquire, renew, release, get, list or watch a lease
  consumers  list the consumer groups' committed offsets, or show one: txlog consumers [GROUP]
  exclusive  run a command only while holding a lease:
           txlog exclusive --lease NAME --ttl 5s -- CMD ARGS...
  backup   save a verified backup of a node's state to FILE, or check one: txlog backup [--verify] FILE
  help     print this text

submit, get, status, log, lease, consumers, exclusive and bench take --targets URL,URL,... (default $TXLOG_TARGETS,
else ` + defaultTargets + `), and for a secured cluster (txlog local --tls) --token (env TXLOG_TOKEN),
--cacert (env TXLOG_CACERT), --cert and --key (or --cert-key; env TXLOG_CERT, TXLOG_KEY) with https://
targets. Where a command has a --token or --key of its own (lease renew|release, submit), they are
--auth-token and --cert-key.
Run 'txlog COMMAND -h' for a command's flags.
`

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
}

// run runs the command line args (without the program name).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := &cli{stdout: stdout, stderr: stderr, lookupEnv: os.LookupEnv}
	return c.run(ctx, args)
}

func (c *cli) run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(c.stderr, usageText)
		return usagef("no command given")
	}
	name, rest := args[0], args[1:]
	switch name {
	case "local":
		return c.local(ctx, rest)
	case "chaos":
		return c.chaos(ctx, rest)
	case "submit":
		return c.submit(ctx, rest)
	case "get":
		return c.get(ctx, rest)
	case "status":
		return c.status(ctx, rest)
	case "log":
		return c.log(ctx, rest)
	case "bench":
		return c.bench(ctx, rest)
	case "lease":
		return c.lease(ctx, rest)
	case "consumers":
		return c.consumers(ctx, rest)
	case "exclusive":
		return c.exclusive(ctx, rest)
	case "backup":
		return c.backup(ctx, rest)
	case "chaos-contender": // hidden: a lease contender that `txlog chaos` starts
		return chaos.ContenderMain(ctx, rest, c.stderr)
	case "chaos-consumer": // hidden: a consumer of the chaos consumer workload
		return chaos.ConsumerProcMain(ctx, rest, c.stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(c.stdout, usageText)
		return nil
	default:
		return usagef("unknown command %q", name)
	}
}

// command is the flag set of one subcommand and its synopsis.
type command struct {
	*flag.FlagSet
	cli      *cli
	synopsis string
	creds    *credentials // set by targets
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
	return cmd.String("targets", def, "comma-separated base URLs of the nodes (env "+targetsEnv+")")
}

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
	cfg := client.ClientConfig{Endpoints: eps, Token: creds.token, TLS: tlsCfg}
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
	return client.NewClient(cfg), nil
}

// printJSON writes v as indented JSON, with <, > and & as they are.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
