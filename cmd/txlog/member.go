package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
)

const memberUsage = `usage: txlog member SUBCOMMAND [flags] [args]

Subcommands:
  list    [-o table|json]                                    the members, as the leader sees them
  add     ID RAFT-ADDR [--http-addr A] [--nonvoter] [--node-number N]
                                                             add a server (POST /v1/cluster/join)
  remove  ID                                                 take a server out (DELETE /v1/cluster/nodes/ID)
  replace ID RAFT-ADDR [--http-addr A]                       point member ID at new addresses (a new
                                                             machine in a dead one's place)

add, remove and replace need an admin credential on a secured cluster. A member
that exists with other addresses (add), or a node number taken, exits 3.
`

// member runs txlog member.
func (c *cli) member(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(c.stderr, memberUsage)
		return usagef("member: no subcommand given")
	}
	sub, rest := args[0], args[1:]
	cmd := c.command("member "+sub, "[flags]")
	var httpAddr *string
	var nonvoter *bool
	var number *int
	var out *string
	want := 0 // positional arguments
	switch sub {
	case "list":
		out = cmd.output(outputTable)
	case "add", "replace":
		httpAddr = cmd.String("http-addr", "", "the server's HTTP address, host:port, for clients and forwarding")
		want = 2
		if sub == "add" {
			nonvoter = cmd.Bool("nonvoter", false, "add it as a nonvoter, which replicates but does not vote")
			number = cmd.Int("node-number", 0, "the txid node number it holds, 1..1023 (default: the leader assigns one)")
		}
	case "remove":
		want = 1
	case "help", "-h", "--help":
		fmt.Fprint(c.stdout, memberUsage)
		return flag.ErrHelp
	default:
		return usagef("member: unknown subcommand %q", sub)
	}
	targets := cmd.targets()
	pos, err := cmd.parse(rest)
	if err != nil {
		return err
	}
	if len(pos) != want {
		return usagef("member %s takes %d arguments, got %q", sub, want, pos)
	}
	if out != nil {
		if err := checkOutput(*out); err != nil {
			return err
		}
	}
	cl, err := cmd.newClient(*targets)
	if err != nil {
		return err
	}
	switch sub {
	case "list":
		st, err := leaderView(ctx, cl)
		if err != nil {
			return fmt.Errorf("member list: %w", err)
		}
		if err := printMembers(c.stdout, st, *out); err != nil {
			return err
		}
		if st.LeaderID == "" {
			return fmt.Errorf("member list: no leader; the members as %s sees them", st.ID)
		}
		return nil
	case "add", "replace":
		req := wire.JoinRequest{ID: pos[0], RaftAddr: pos[1], HTTPAddr: *httpAddr, Replace: sub == "replace"}
		if nonvoter != nil && *nonvoter {
			f := false
			req.Voter = &f
		}
		if number != nil {
			req.NodeNumber = *number
		}
		res, err := cl.Join(ctx, req)
		if err != nil {
			return fmt.Errorf("member %s %s: %w", sub, pos[0], err)
		}
		return printJSON(c.stdout, res)
	}
	if err := cl.Remove(ctx, pos[0]); err != nil {
		return about("member remove "+pos[0], err)
	}
	return printJSON(c.stdout, map[string]any{"removed": pos[0]})
}

// printMembers writes the members of st as JSON or a table (out).
func printMembers(w io.Writer, st wire.ClusterStatus, out string) error {
	if out == outputJSON {
		return printJSON(w, st.Members)
	}
	return printTable(w, []string{"ID", "SUFFRAGE", "RAFT ADDR", "HTTP ADDR", "LEADER", "NODE NUMBER", "LAST CONTACT"}, len(st.Members), func(i int) []string {
		m := st.Members[i]
		leader, num := "", ""
		if m.Leader {
			leader = "*"
		}
		if m.NodeNumber > 0 {
			num = strconv.Itoa(m.NodeNumber)
		}
		return []string{m.ID, m.Suffrage, m.RaftAddr, m.HTTPAddr, leader, num, m.LastContact}
	})
}

// leaderView returns the cluster as the leader describes it, else as the
// first node that answers does. It asks that node for its own view
// (consistency=stale), then the leader it names: without a leader a
// linearizable read would wait out --timeout for an answer of 503.
func leaderView(ctx context.Context, cl *client.Client) (wire.ClusterStatus, error) {
	st, err := cl.Cluster(ctx, wire.ReadOptions{Consistency: wire.ConsistencyStale})
	if err != nil {
		return st, err
	}
	if st.State == "leader" || st.LeaderHTTPAddr == "" {
		return st, nil
	}
	if u := memberURL(schemeOf(cl), st.LeaderHTTPAddr); u != "" {
		if ls, err := cl.ClusterFrom(ctx, u); err == nil {
			return ls, nil
		}
	}
	return st, nil
}

// schemeOf is the scheme of the client's first endpoint.
func schemeOf(cl *client.Client) string {
	if eps := cl.Endpoints(); len(eps) > 0 && strings.HasPrefix(eps[0], "https://") {
		return "https"
	}
	return "http"
}

// leader runs txlog leader transfer [ID].
func (c *cli) leader(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "transfer" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprintln(c.stdout, "usage: txlog leader transfer [flags] [ID]")
			return flag.ErrHelp
		}
		return usagef("leader: want the subcommand transfer")
	}
	cmd := c.command("leader transfer", "[flags] [ID]\n\nHands leadership to member ID, or without ID to another voter Raft chooses, and prints the new leader; naming the leader itself does nothing and says so (\"unchanged\": true).")
	targets := cmd.targets()
	pos, err := cmd.parse(args[1:])
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usagef("leader transfer takes at most one ID, got %q", pos)
	}
	cl, err := cmd.newClient(*targets)
	if err != nil {
		return err
	}
	var req wire.TransferRequest
	if len(pos) == 1 {
		req.ID = pos[0]
	}
	res, err := cl.TransferLeadership(ctx, req)
	if err != nil {
		return fmt.Errorf("leader transfer: %w", err)
	}
	return printJSON(c.stdout, res)
}

// endpointHealth is one node's answer to /healthz and /readyz.
type endpointHealth struct {
	URL     string `json:"url"`
	Healthy bool   `json:"healthy"`
	Ready   bool   `json:"ready"`
	Err     string `json:"error,omitempty"`
}

// endpoint runs txlog endpoint health.
func (c *cli) endpoint(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "health" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprintln(c.stdout, "usage: txlog endpoint health [flags]")
			return flag.ErrHelp
		}
		return usagef("endpoint: want the subcommand health")
	}
	cmd := c.command("endpoint health", "[flags]\n\nAsks each target for /healthz and /readyz; exits 1 if one is not healthy and ready.")
	targets := cmd.targets()
	out := cmd.output(outputTable)
	pos, err := cmd.parse(args[1:])
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("endpoint health takes no arguments, got %q", pos)
	}
	if err := checkOutput(*out); err != nil {
		return err
	}
	cl, err := cmd.newClient(*targets)
	if err != nil {
		return err
	}
	eps := cl.Endpoints()
	hs := make([]endpointHealth, len(eps))
	var wg sync.WaitGroup
	for i, u := range eps {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, *cmd.timeout)
			defer cancel()
			hs[i].URL = u
			if err := cl.Health(ctx, u); err != nil {
				hs[i].Err = err.Error()
				return
			}
			hs[i].Healthy = true
			if err := cl.Ready(ctx, u); err != nil {
				hs[i].Err = err.Error()
				return
			}
			hs[i].Ready = true
		})
	}
	wg.Wait()
	if *out == outputJSON {
		err = printJSON(c.stdout, hs)
	} else {
		err = printTable(c.stdout, []string{"URL", "HEALTHY", "READY", "ERROR"}, len(hs), func(i int) []string {
			h := hs[i]
			return []string{h.URL, strconv.FormatBool(h.Healthy), strconv.FormatBool(h.Ready), h.Err}
		})
	}
	if err != nil {
		return err
	}
	var bad []string
	for _, h := range hs {
		if !h.Ready {
			bad = append(bad, fmt.Sprintf("%s (%s)", h.URL, h.Err))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("endpoint health: %d of %d unhealthy: %v", len(bad), len(hs), bad)
	}
	return nil
}

// watch runs txlog watch KEY|--prefix P: the committed changes from now on.
func (c *cli) watch(ctx context.Context, args []string) error {
	cmd := c.command("watch", "[flags] KEY | --prefix P\n\nPrints each committed transaction that touches KEY (or a key under --prefix) from now\non (or from --from), one JSON object a line; with --print-value-only the value each put\nwrites (null for a delete). Fails once no node has answered for --timeout.")
	targets := cmd.targets()
	prefix := cmd.String("prefix", "", "watch every key that starts with this")
	from := cmd.Uint64("from", 0, "first Raft index to watch (default: the next to commit)")
	valueOnly := cmd.Bool("print-value-only", false, "print the value of each change to a watched key, one JSON value a line")
	pos, err := cmd.parse(args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) == 0 && *prefix == "":
		return usagef("watch takes a KEY or --prefix")
	case len(pos) > 1 || len(pos) == 1 && *prefix != "":
		return usagef("watch takes one KEY or --prefix, got %q", pos)
	}
	key := ""
	if len(pos) == 1 {
		key = pos[0]
	}
	cl, err := cmd.newClient(*targets)
	if err != nil {
		return err
	}
	start := *from
	if start == 0 {
		st, err := cl.Cluster(ctx)
		if err != nil {
			return fmt.Errorf("watch: %w", err)
		}
		start = st.CommitIndex + 1
	}
	match := func(k string) bool {
		if key != "" {
			return k == key
		}
		return strings.HasPrefix(k, *prefix)
	}
	filter := *prefix
	if key != "" {
		filter = key // the server's prefix filter narrows the stream; match keeps the key
	}
	err = cl.Follow(ctx, start, filter, func(e wire.LogEntry) error {
		var hit []wire.Op
		for _, op := range e.Ops {
			if match(op.Key) {
				hit = append(hit, op)
			}
		}
		if len(hit) == 0 {
			return nil
		}
		if !*valueOnly {
			return printLine(c, e)
		}
		for _, op := range hit {
			v := op.Value
			if op.Op == "delete" || len(v) == 0 {
				v = json.RawMessage("null")
			}
			if err := printValue(c.stdout, v); err != nil {
				return err
			}
		}
		return nil
	})
	if ctx.Err() != nil {
		return nil // Ctrl-C ends watch
	}
	if errors.Is(err, client.ErrNoAnswer) {
		return fmt.Errorf("watch: %w", err)
	}
	return fmt.Errorf("watch from %d: %w", start, err)
}

// printLine writes v as one line of JSON.
func printLine(c *cli, v any) error {
	enc := json.NewEncoder(c.stdout)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
