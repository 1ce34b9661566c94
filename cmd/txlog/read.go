package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
)

var consistencies = []string{wire.ConsistencyLinearizable, wire.ConsistencyLeader, wire.ConsistencyStale}

// consistencyFlag defines --consistency, the consistency of a read
// (docs/api.md, "Consistency"), on cmd.
func consistencyFlag(cmd *command) *string {
	return cmd.String("consistency", wire.ConsistencyLinearizable, "linearizable, leader or stale (stale: the node's own view, answered without a leader)")
}

// noLeaderProbe bounds noLeader's question to the nodes, which comes after
// --timeout ran out: a node that answers at all answers a stale read of
// its own view at once.
const noLeaderProbe = 300 * time.Millisecond

// noLeader returns err, or when no node answered it (a linearizable read
// waits on a node for a leader longer than one attempt's share of
// --timeout) and the first node that answers a stale read knows no
// leader, an error that says so (errors.Is ErrNoLeader) and how to read
// anyway, wrapping err.
func noLeader(cl *client.Client, err error) error {
	if err == nil || errors.Is(err, wire.ErrNoLeader) || errors.Is(err, wire.ErrNotFound) {
		return err
	}
	if _, ok := errors.AsType[*wire.Error](err); ok {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), noLeaderProbe)
	defer cancel()
	st, serr := cl.Cluster(ctx, wire.ReadOptions{Consistency: wire.ConsistencyStale})
	if serr != nil || st.LeaderID != "" {
		return err
	}
	return fmt.Errorf("%w (node %s knows none; --consistency stale reads its own view): %w", wire.ErrNoLeader, st.ID, err)
}

// checkConsistency refuses a --consistency value no read takes.
func checkConsistency(v string) error {
	if !slices.Contains(consistencies, v) {
		return usagef("--consistency %q: want linearizable, leader or stale", v)
	}
	return nil
}

func (c *cli) get(ctx context.Context, args []string) error {
	cmd := c.command("get", "[flags] KEY | --prefix P [--limit N] [--keys-only]\n\n"+
		"With --prefix, every key under P (\"\" for all) in key order, read a page at a time\n"+
		"(each page within --timeout), one JSON object a line (-o json) or a table.")
	targets := cmd.targets()
	consistency := consistencyFlag(cmd)
	valueOnly := cmd.Bool("print-value-only", false, "print the value alone, as JSON")
	prefix := cmd.String("prefix", "", "list the keys under this prefix instead of reading KEY")
	limit := cmd.Int("limit", 0, "with --prefix, print at most this many keys (0: all)")
	keysOnly := cmd.Bool("keys-only", false, "with --prefix, print keys and versions without values")
	out := cmd.output(outputJSON)
	pos, err := cmd.parse(args)
	if err != nil {
		return err
	}
	ranged := given(cmd.FlagSet, "prefix")
	switch {
	case ranged && len(pos) != 0:
		return usagef("get --prefix takes no KEY, got %q", pos)
	case !ranged && len(pos) != 1:
		return usagef("get takes one KEY, got %d arguments", len(pos))
	case !ranged && (given(cmd.FlagSet, "limit") || *keysOnly):
		return usagef("--limit and --keys-only go with --prefix")
	case *limit < 0:
		return usagef("--limit %d: want 0 (all) or more", *limit)
	case *keysOnly && *valueOnly:
		return usagef("--keys-only and --print-value-only exclude each other")
	}
	if err := checkConsistency(*consistency); err != nil {
		return err
	}
	if err := checkOutput(*out); err != nil {
		return err
	}
	cl, err := cmd.newClient(*targets)
	if err != nil {
		return err
	}
	if ranged {
		return c.getPrefix(ctx, cl, *prefix, rangePrint{limit: *limit, keysOnly: *keysOnly, valueOnly: *valueOnly, output: *out}, *consistency)
	}
	kv, err := cl.Get(ctx, pos[0], wire.ReadOptions{Consistency: *consistency})
	if err != nil {
		return about(fmt.Sprintf("get %q", pos[0]), noLeader(cl, err))
	}
	if *valueOnly {
		return printValue(c.stdout, kv.Value)
	}
	if *out == outputTable {
		return printKVs(c.stdout, []wire.KV{kv}, false)
	}
	return printJSON(c.stdout, kv)
}

// rangePrint is how get --prefix prints.
type rangePrint struct {
	limit               int // keys at most, 0 all
	keysOnly, valueOnly bool
	output              string
}

// getPrefix prints the keys under prefix, paging through them.
func (c *cli) getPrefix(ctx context.Context, cl *client.Client, prefix string, p rangePrint, consistency string) error {
	opts := client.RangeOptions{Limit: wire.MaxRangeLimit, KeysOnly: p.keysOnly, Consistency: consistency}
	if p.limit > 0 {
		opts.Limit = min(p.limit, wire.MaxRangeLimit)
	}
	var rows []wire.KV // for a table, which aligns its columns over all rows
	printed := 0
	errEnough := errors.New("enough")
	err := cl.RangeAll(ctx, prefix, opts, func(page wire.KVPage) error {
		kvs := page.KVs
		if p.limit > 0 {
			kvs = kvs[:min(len(kvs), p.limit-printed)]
		}
		printed += len(kvs)
		for _, kv := range kvs {
			var err error
			switch {
			case p.valueOnly:
				err = printValue(c.stdout, kv.Value)
			case p.output == outputTable:
				rows = append(rows, kv)
			default:
				err = printJSONLine(c.stdout, kv, p.keysOnly)
			}
			if err != nil {
				return err
			}
		}
		if p.limit > 0 && printed >= p.limit {
			return errEnough
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return fmt.Errorf("get --prefix %q: %w", prefix, err)
	}
	if p.output == outputTable && !p.valueOnly {
		return printKVs(c.stdout, rows, p.keysOnly)
	}
	return nil
}

// printJSONLine writes kv as one line of JSON, without its value when
// keysOnly.
func printJSONLine(w io.Writer, kv wire.KV, keysOnly bool) error {
	var v any = kv
	if keysOnly {
		v = struct {
			Key     string `json:"key"`
			Version uint64 `json:"version"`
			Index   uint64 `json:"index"`
		}{kv.Key, kv.Version, kv.Index}
	}
	b, err := wire.MarshalJSON(v)
	if err != nil {
		r, _ := kv.Readable()
		if b, err = wire.MarshalJSON(r); err != nil {
			return err
		}
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// printKVs prints keys as a table: KEY VERSION INDEX and, unless keysOnly,
// VALUE (compact JSON).
func printKVs(w io.Writer, kvs []wire.KV, keysOnly bool) error {
	header := []string{"KEY", "VERSION", "INDEX", "VALUE"}
	if keysOnly {
		header = header[:3]
	}
	return printTable(w, header, len(kvs), func(i int) []string {
		kv := kvs[i]
		row := []string{kv.Key, fmt.Sprint(kv.Version), fmt.Sprint(kv.Index)}
		if !keysOnly {
			var b bytes.Buffer
			if json.Compact(&b, kv.Value) != nil {
				b.Reset()
				b.Write(kv.Value)
			}
			row = append(row, b.String())
		}
		return row
	})
}

// printValue writes a JSON value on one line, compacted.
func printValue(w io.Writer, v json.RawMessage) error {
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		b.Reset()
		b.Write(v)
	}
	b.WriteByte('\n')
	_, err := w.Write(b.Bytes())
	return err
}

// nodeView is one node's answer to GET /v1/cluster, or why there is none.
type nodeView struct {
	URL    string              `json:"url"`
	Status *wire.ClusterStatus `json:"status,omitempty"`
	Err    string              `json:"error,omitempty"`
}

func (c *cli) status(ctx context.Context, args []string) error {
	cmd := c.command("status", "[flags]\n\nExits 1, naming them, when no node knows a leader or a member or target did not answer.")
	targets := cmd.targets()
	asJSON := cmd.Bool("json", false, "same as -o json")
	out := cmd.output(outputTable)
	pos, err := cmd.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("status takes no arguments, got %q", pos)
	}
	if *asJSON {
		*out = outputJSON
	}
	if err := checkOutput(*out); err != nil {
		return err
	}
	cl, err := cmd.newClient(*targets)
	if err != nil {
		return err
	}
	// One deadline for both rounds: the targets, then the members they name.
	ctx, cancel := context.WithTimeout(ctx, *cmd.timeout)
	defer cancel()
	eps := cl.Endpoints()
	scheme, _, _ := strings.Cut(eps[0], "://")
	views := askNodes(ctx, cl, eps, *cmd.timeout)
	// Members the targets do not list but the nodes know an address of.
	var more []string
	for _, v := range views {
		if v.Status == nil {
			continue
		}
		for _, m := range v.Status.Members {
			if u := memberURL(scheme, m.HTTPAddr); u != "" && !slices.ContainsFunc(views, func(v nodeView) bool { return v.URL == u }) && !slices.Contains(more, u) {
				more = append(more, u)
			}
		}
	}
	views = append(views, askNodes(ctx, cl, more, *cmd.timeout)...)
	slices.SortStableFunc(views, func(a, b nodeView) int {
		// Nodes that answered first, by ID; then the rest by URL.
		if (a.Status == nil) != (b.Status == nil) {
			if a.Status != nil {
				return -1
			}
			return 1
		}
		if a.Status != nil {
			return cmp.Compare(a.Status.ID, b.Status.ID)
		}
		return cmp.Compare(a.URL, b.URL)
	})

	if *out == outputJSON {
		if err := printJSON(c.stdout, views); err != nil {
			return err
		}
	} else if err := printStatus(c.stdout, views); err != nil {
		return err
	}
	return statusProblems(views)
}

// statusProblems returns the error of a status with a problem, nil without:
// no node answered, no node knows a leader, or a target or a member with an
// HTTP address (as the nodes that answered list them) did not answer.
func statusProblems(views []nodeView) error {
	if len(views) == 0 || views[0].Status == nil {
		return errors.New("status: no node answered")
	}
	var problems []string
	leader := ""
	for _, v := range views {
		if v.Status == nil {
			continue
		}
		if leader == "" && v.Status.LeaderID != "" {
			leader = v.Status.LeaderID
		}
	}
	if leader == "" {
		problems = append(problems, "no leader known")
	}
	var down []string
	for _, v := range views {
		if v.Status == nil {
			down = append(down, fmt.Sprintf("%s (%s)", v.URL, v.Err))
		}
	}
	if len(down) > 0 {
		problems = append(problems, "unreachable: "+strings.Join(down, ", "))
	}
	if len(problems) == 0 {
		return nil
	}
	return errors.New("status: " + strings.Join(problems, "; "))
}

// memberURL makes a base URL of a member's HTTP address ("" when it has none),
// with scheme (that of the targets) when the address has none.
func memberURL(scheme, addr string) string {
	switch {
	case addr == "":
		return ""
	case strings.Contains(addr, "://"):
		return strings.TrimRight(addr, "/")
	default:
		return scheme + "://" + addr
	}
}

// askNodes asks every node in urls, in parallel, for its view of the cluster.
func askNodes(ctx context.Context, cl *client.Client, urls []string, timeout time.Duration) []nodeView {
	views := make([]nodeView, len(urls))
	var wg sync.WaitGroup
	for i, u := range urls {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			views[i].URL = u
			st, err := cl.ClusterFrom(ctx, u)
			if err != nil {
				views[i].Err = err.Error()
				return
			}
			views[i].Status = &st
		})
	}
	wg.Wait()
	return views
}

// printStatus writes a table of the nodes' views, then the members as the
// leader (or else the first node that answered) sees them.
func printStatus(w io.Writer, views []nodeView) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	header := "NODE\tSTATE\tLEADER\tTERM\tCOMMIT\tAPPLIED\tURL"
	if slices.ContainsFunc(views, func(v nodeView) bool { return v.Status == nil }) {
		header += "\tERROR"
	}
	fmt.Fprintln(tw, header)
	var ref *wire.ClusterStatus
	for _, v := range views {
		s := v.Status
		if s == nil {
			fmt.Fprintf(tw, "?\tunreachable\t-\t-\t-\t-\t%s\t%s\n", v.URL, v.Err)
			continue
		}
		if ref == nil || s.State == "leader" && ref.State != "leader" {
			ref = s
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\n", s.ID, s.State, dash(s.LeaderID), s.Term, s.CommitIndex, s.AppliedIndex, v.URL)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if ref == nil {
		return nil
	}
	fmt.Fprintf(w, "\nMEMBERS (as %s, %s, sees them)\n", ref.ID, ref.State)
	fmt.Fprintln(tw, "ID\tSUFFRAGE\tRAFT ADDR\tHTTP ADDR\tLEADER\tLAST CONTACT")
	for _, m := range ref.Members {
		leader := ""
		if m.Leader {
			leader = "*"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", m.ID, m.Suffrage, m.RaftAddr, dash(m.HTTPAddr), leader, dash(m.LastContact))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, v := range views {
		if v.Status == nil || len(v.Status.Extra) == 0 {
			continue
		}
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(v.Status.Extra)) {
			kv = append(kv, k+"="+v.Status.Extra[k])
		}
		fmt.Fprintf(w, "%s: %s\n", v.Status.ID, strings.Join(kv, " "))
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (c *cli) log(ctx context.Context, args []string) error {
	cmd := c.command("log", "[flags]\n\nPrints one committed transaction per line, as JSON.")
	targets := cmd.targets()
	from := cmd.Uint64("from", 1, "first Raft index to print")
	limit := cmd.Int("limit", 100, "entries per request; without --follow, txlog prints one request's worth")
	follow := cmd.Bool("follow", false, "keep printing entries as they commit, until Ctrl-C (GET /v1/log/stream); fails once no node has answered for --timeout")
	prefix := cmd.String("prefix", "", "only entries that touch a key with this prefix")
	pos, err := cmd.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("log takes no arguments, got %q", pos)
	}
	if *limit <= 0 {
		return usagef("--limit %d: want at least 1", *limit)
	}
	if *from == 0 {
		return usagef("--from 0: indexes start at 1")
	}
	cl, err := cmd.newClient(*targets)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(c.stdout)
	enc.SetEscapeHTML(false)
	if *follow {
		err := cl.Follow(ctx, *from, *prefix, func(e wire.LogEntry) error { return enc.Encode(e) })
		if ctx.Err() != nil {
			return nil // Ctrl-C ends --follow
		}
		return fmt.Errorf("log --follow from %d: %w", *from, err)
	}
	page, err := cl.LogWait(ctx, *from, *limit, *prefix, 0)
	if err != nil {
		return fmt.Errorf("log from %d: %w", *from, err)
	}
	for _, e := range page.Entries {
		if err := enc.Encode(e); err != nil {
			return err
		}
	}
	return nil
}

// given reports whether the command line set the flag name.
func given(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
