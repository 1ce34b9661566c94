package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/txlog/txlog/api/wire"
)

const submitSynopsis = `[flags] KEY VALUE
       txlog submit [flags] --delete KEY
       txlog submit [flags] --tx '{"ops":[...]}'

VALUE is JSON; text that does not parse as JSON is sent as a JSON string, so
'txlog submit k hello' writes "hello" and 'txlog submit k 42' writes 42. Put
"--" before a VALUE that starts with "-". The result is printed as JSON, also
when the transaction was rejected (exit status 3: --if-version failed), is
pending (4: accepted, not yet committed) or its outcome is unknown (5: look it
up by the idempotency key printed). --timeout bounds the whole call: the
cluster's commit timeout is fitted inside it.`

// submitArgs is what the command line of submit says about the transaction.
type submitArgs struct {
	key            string  // --key
	idempotencyKey string  // --idempotency-key
	ifVersion      *uint64 // --if-version; nil when not given
	del            bool    // --delete
	tx             string  // --tx: a whole transaction as JSON
	pos            []string
}

// request builds the transaction the arguments describe. Every problem is a
// *usageError.
func (a submitArgs) request() (wire.TxRequest, error) {
	if a.tx != "" {
		if a.key != "" || a.del || a.ifVersion != nil || len(a.pos) > 0 {
			return wire.TxRequest{}, usagef("--tx takes the whole transaction: no KEY, VALUE, --key, --delete or --if-version with it")
		}
		var tx wire.TxRequest
		if err := decodeStrict(a.tx, &tx); err != nil {
			return wire.TxRequest{}, usagef("--tx: %v", err)
		}
		if a.idempotencyKey != "" {
			if tx.IdempotencyKey != "" && tx.IdempotencyKey != a.idempotencyKey {
				return wire.TxRequest{}, usagef("--idempotency-key %q differs from the one in --tx, %q", a.idempotencyKey, tx.IdempotencyKey)
			}
			tx.IdempotencyKey = a.idempotencyKey
		}
		return tx, nil
	}

	pos := a.pos
	key := a.key
	if key == "" {
		if len(pos) == 0 {
			return wire.TxRequest{}, usagef("no KEY given")
		}
		key, pos = pos[0], pos[1:]
	}
	op := wire.Op{Op: "put", Key: key, IfVersion: a.ifVersion}
	switch {
	case a.del && len(pos) > 0:
		return wire.TxRequest{}, usagef("--delete takes no VALUE, got %q", pos)
	case a.del:
		op.Op = "delete"
	case len(pos) == 0:
		return wire.TxRequest{}, usagef("no VALUE given for key %q", key)
	case len(pos) > 1:
		return wire.TxRequest{}, usagef("too many arguments: %q (quote a VALUE with spaces)", pos[1:])
	default:
		op.Value = parseValue(pos[0])
	}
	return wire.TxRequest{IdempotencyKey: a.idempotencyKey, Ops: []wire.Op{op}}, nil
}

// parseValue returns s when it is JSON, else s as a JSON string.
func parseValue(s string) json.RawMessage {
	if b := bytes.TrimSpace([]byte(s)); len(b) > 0 && json.Valid(b) {
		return json.RawMessage(b)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep <, > and & as typed
	enc.Encode(s)            // a string always encodes
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// decodeStrict decodes exactly one JSON value from s into v, refusing unknown fields.
func decodeStrict(s string, v any) error {
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// versionFlag is an optional version number flag.
type versionFlag struct{ v *uint64 }

func (f *versionFlag) String() string {
	if f == nil || f.v == nil {
		return ""
	}
	return strconv.FormatUint(*f.v, 10)
}

func (f *versionFlag) Set(s string) error {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return fmt.Errorf("%q: want a version number", s)
	}
	f.v = &n
	return nil
}

var acks = []string{wire.AckQuorum, wire.AckAll, wire.AckAccepted}

func (c *cli) submit(ctx context.Context, args []string) error {
	cmd := c.command("submit", submitSynopsis)
	var a submitArgs
	var ifVersion versionFlag
	cmd.StringVar(&a.key, "key", "", "the key to write, instead of the KEY argument")
	targets := cmd.targets() // after --key: the client certificate's key is --cert-key
	cmd.StringVar(&a.idempotencyKey, "idempotency-key", "", "idempotency key (default: a random one, the same for every retry)")
	cmd.Var(&ifVersion, "if-version", "commit only if the key's version is `N` (0: only if the key does not exist)")
	cmd.BoolVar(&a.del, "delete", false, "delete the key")
	cmd.StringVar(&a.tx, "tx", "", "a whole transaction as `JSON`, {\"ops\":[...]}")
	cmd.StringVar(&a.tx, "json", "", "same as --tx")
	ack := cmd.String("ack", wire.AckQuorum, "acknowledgement level: quorum, all or accepted")
	timeout := cmd.timeout
	pos, err := cmd.parse(args)
	if err != nil {
		return err
	}
	a.pos, a.ifVersion = pos, ifVersion.v
	if !slices.Contains(acks, *ack) {
		return usagef("--ack %q: want quorum, all or accepted", *ack)
	}
	if *timeout <= 0 {
		return usagef("--timeout %v: want more than 0", *timeout)
	}
	tx, err := a.request()
	if err != nil {
		return err
	}
	cl, err := cmd.newClient(*targets)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	res, err := cl.Submit(ctx, tx, wire.SubmitOptions{Timeout: *timeout, Ack: *ack})
	if err != nil && res.Status == "" {
		return fmt.Errorf("submit: %w", err)
	}
	// With an unknown outcome the result still says which transaction to look up.
	if perr := printJSON(c.stdout, res); perr != nil {
		return perr
	}
	if err != nil {
		return fmt.Errorf("submit: %w", err)
	}
	return txOutcome(res)
}

// txOutcome is the exit of a transaction's result: nil when committed, else
// an error with the exit status of its status.
func txOutcome(res wire.TxResult) error {
	switch res.Status {
	case wire.StatusCommitted:
		return nil
	case wire.StatusRejected:
		why := "a condition failed"
		if cf := res.Conflict; cf != nil {
			what := "key " + strconv.Quote(cf.Key)
			switch {
			case cf.Fence != "":
				what = "fence " + strconv.Quote(cf.Fence)
			case cf.Group != "":
				what = "consumer group " + strconv.Quote(cf.Group)
			}
			why = fmt.Sprintf("%s: expected %d, found %d", what, cf.Expected, cf.Actual)
		}
		return exitWith(exitRejected, fmt.Errorf("submit: transaction %v rejected: %s", res.TxID, why))
	case wire.StatusPending:
		return exitWith(exitPending, fmt.Errorf("submit: transaction %v pending: accepted, not yet committed (look it up: GET /v1/tx/%v)", res.TxID, res.TxID))
	case wire.StatusUnknown:
		return exitWith(exitUnknown, fmt.Errorf("submit: outcome unknown: idempotency key %q", res.IdempotencyKey))
	}
	return fmt.Errorf("submit: transaction %v: status %q", res.TxID, res.Status)
}
