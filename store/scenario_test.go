package store

import (
	"bufio"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/txid"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata/scenarios")

// TestScenarios runs the scripts in testdata/scenarios, in the style of
// etcd-io/raft's datadriven tests. A script is a list of blocks:
//
//	command arg=value ...
//	input line
//	----
//	expected output
//
// Blocks are separated by a blank line; lines starting with # are comments. Each
// script runs against a new DB. Commands:
//
//	tx index=N txid=N [idem=K] [at=DUR] [window=DUR] [term=N]
//	    applies a tx entry whose ops are the input lines, "put KEY VALUE [if=N]"
//	    or "del KEY [if=N]"; at is the leader time after t0
//	node index=N id=ID [at=DUR]   applies a node registration
//	raw index=N                   applies the input line as entry data
//	get KEY...                    prints each key's state
//	lookup txid=N | idem=K        prints a dedup lookup
//	log [from=N] [limit=N]        prints the log
//	nodes                         prints the registered nodes
//	reopen                        closes and reopens the database
//
// Run with -rewrite to write the actual output into the scripts.
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/scenarios/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) { runScenario(t, file) })
	}
}

type block struct {
	line   int // of the command
	cmd    string
	args   map[string]string
	pos    []string // arguments without '='
	input  []string
	output string
	pre    []string // comment and blank lines before the block, kept on rewrite
}

func runScenario(t *testing.T, file string) {
	blocks := parseScenario(t, file)
	path := filepath.Join(t.TempDir(), "state.db")
	db := openAt(t, path)
	var out strings.Builder
	for i, b := range blocks {
		got := runBlock(t, &db, path, b)
		if *rewrite {
			if i > 0 {
				out.WriteString("\n")
			}
			for _, l := range b.pre {
				out.WriteString(l + "\n")
			}
			out.WriteString(strings.Join(append([]string{b.raw()}, b.input...), "\n") + "\n----\n" + got)
			continue
		}
		if got != b.output {
			t.Errorf("%s:%d: %s\ngot:\n%swant:\n%s", file, b.line, b.raw(), got, b.output)
		}
	}
	if *rewrite {
		if err := os.WriteFile(file, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func (b block) raw() string {
	return strings.Join(append([]string{b.cmd}, b.rawArgs()...), " ")
}

func (b block) rawArgs() []string {
	var s []string
	s = append(s, b.pos...)
	for _, k := range slices.Sorted(maps.Keys(b.args)) {
		s = append(s, k+"="+b.args[k])
	}
	return s
}

func parseScenario(t *testing.T, file string) []block {
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var blocks []block
	var pre []string
	sc := bufio.NewScanner(f)
	n := 0
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		n++
		return sc.Text(), true
	}
	for {
		l, ok := next()
		if !ok {
			break
		}
		if l == "" || strings.HasPrefix(l, "#") {
			pre = append(pre, l)
			continue
		}
		fields := strings.Fields(l)
		b := block{line: n, cmd: fields[0], args: map[string]string{}, pre: pre}
		pre = nil
		for _, a := range fields[1:] {
			if k, v, ok := strings.Cut(a, "="); ok {
				b.args[k] = v
			} else {
				b.pos = append(b.pos, a)
			}
		}
		for {
			l, ok := next()
			if !ok {
				t.Fatalf("%s:%d: no ---- after the command", file, b.line)
			}
			if l == "----" {
				break
			}
			b.input = append(b.input, l)
		}
		var out strings.Builder
		for {
			l, ok := next()
			if !ok || l == "" {
				break
			}
			out.WriteString(l + "\n")
		}
		b.output = out.String()
		blocks = append(blocks, b)
	}
	return blocks
}

func runBlock(t *testing.T, db **DB, path string, b block) string {
	t.Helper()
	fail := func(format string, args ...any) string {
		t.Fatalf("line %d: %s", b.line, fmt.Sprintf(format, args...))
		return ""
	}
	num := func(k string, def uint64) uint64 {
		v, ok := b.args[k]
		if !ok {
			return def
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			fail("%s=%s: %v", k, v, err)
		}
		return n
	}
	dur := func(k string) time.Duration {
		v, ok := b.args[k]
		if !ok {
			return 0
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			fail("%s=%s: %v", k, v, err)
		}
		return d
	}
	apply := func(kind CommandKind, payload []byte) string {
		e := Entry{Index: num("index", 0), Term: num("term", 1)}
		e.Data = EncodeCommand(Command{Kind: kind, Time: t0 + int64(dur("at")), DedupWindow: dur("window"), Payload: payload})
		if kind == 0 {
			e.Data = []byte(strings.Join(b.input, "\n"))
		}
		return formatResult(applyOne(t, *db, e))
	}

	switch b.cmd {
	case "tx":
		tx := Tx{ID: txid.ID(num("txid", 0)), IdempotencyKey: b.args["idem"]}
		for _, l := range b.input {
			tx.Ops = append(tx.Ops, parseOp(t, b.line, l))
		}
		return apply(KindTx, EncodeTx(tx))
	case "node":
		return apply(KindRegisterNode, EncodeNode(NodeInfo{ID: b.args["id"], TxIDNode: uint16(num("txid_node", 0))}))
	case "raw":
		return apply(0, nil)
	case "get":
		var s strings.Builder
		for _, k := range b.pos {
			kv, err := (*db).Reads().Get(k)
			if err != nil {
				fmt.Fprintf(&s, "%s: %v\n", k, err)
				continue
			}
			fmt.Fprintf(&s, "%s: %s version=%d mod=%d\n", k, kv.Value, kv.Version, kv.ModIndex)
		}
		return s.String()
	case "lookup":
		var o Outcome
		var err error
		if idem, ok := b.args["idem"]; ok {
			o, err = (*db).Reads().TxByIdempotencyKey(idem)
		} else {
			o, err = (*db).Reads().Tx(txid.ID(num("txid", 0)))
		}
		if err != nil {
			return err.Error() + "\n"
		}
		return formatOutcome(o) + "\n"
	case "log":
		recs, next, err := (*db).Reads().Log(num("from", 0), int(num("limit", 100)))
		if err != nil {
			return err.Error() + "\n"
		}
		var s strings.Builder
		for _, r := range recs {
			fmt.Fprintf(&s, "%s\n", formatOutcome(r.Outcome))
			for _, op := range r.Ops {
				fmt.Fprintf(&s, "  %s\n", formatOp(op))
			}
		}
		fmt.Fprintf(&s, "next=%d\n", next)
		return s.String()
	case "nodes":
		nodes, err := (*db).Reads().Nodes()
		if err != nil {
			return err.Error() + "\n"
		}
		var s strings.Builder
		for _, n := range nodes {
			fmt.Fprintf(&s, "%s txid_node=%d\n", n.ID, n.TxIDNode)
		}
		return s.String()
	case "reopen":
		if err := (*db).Close(); err != nil {
			fail("Close() = %v", err)
		}
		*db = openAt(t, path)
		return fmt.Sprintf("applied=%d\n", (*db).AppliedIndex())
	}
	return fail("unknown command %q", b.cmd)
}

func parseOp(t *testing.T, line int, l string) Op {
	f := strings.Fields(l)
	var op Op
	switch {
	case len(f) >= 3 && f[0] == "put":
		op, f = put(f[1], f[2]), f[3:]
	case len(f) >= 2 && f[0] == "del":
		op, f = del(f[1]), f[2:]
	default:
		t.Fatalf("line %d: bad op %q", line, l)
	}
	if len(f) == 1 && strings.HasPrefix(f[0], "if=") {
		v, err := strconv.ParseUint(f[0][3:], 10, 64)
		if err != nil {
			t.Fatalf("line %d: bad op %q: %v", line, l, err)
		}
		return ifv(op, v)
	} else if len(f) > 0 {
		t.Fatalf("line %d: bad op %q", line, l)
	}
	return op
}

func formatOp(op Op) string {
	s := "del " + op.Key
	if op.Kind == OpPut {
		s = "put " + op.Key + " " + string(op.Value)
	}
	if op.HasIfVersion {
		s += fmt.Sprintf(" if=%d", op.IfVersion)
	}
	return s
}

func formatResult(r Result) string {
	switch {
	case r.Skipped:
		return "skipped\n"
	case r.Err != nil:
		return fmt.Sprintf("error (kind %d): %v\n", r.Kind, r.Err)
	case r.Kind == KindRegisterNode:
		return "node registered\n"
	case r.Duplicate:
		return "duplicate of " + formatOutcome(r.Outcome) + "\n"
	case r.Reused:
		return "reused by " + formatOutcome(r.Outcome) + "\n"
	case r.TxIDConflict:
		return "txid conflict with " + formatOutcome(r.Outcome) + "\n"
	}
	return formatOutcome(r.Outcome) + "\n"
}

func formatOutcome(o Outcome) string {
	s := fmt.Sprintf("index=%d txid=%d", o.Index, o.TxID)
	if o.IdempotencyKey != "" {
		s += " idem=" + o.IdempotencyKey
	}
	if o.Time != t0 {
		s += " at=" + time.Duration(o.Time-t0).String()
	}
	if o.Status == StatusRejected {
		return s + fmt.Sprintf(" rejected: %s expected=%d actual=%d", o.Conflict.Key, o.Conflict.Expected, o.Conflict.Actual)
	}
	s += " committed:"
	for _, k := range slices.Sorted(maps.Keys(o.Versions)) {
		s += fmt.Sprintf(" %s=%d", k, o.Versions[k])
	}
	return s
}
