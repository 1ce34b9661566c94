package node

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/notify"
	"github.com/txlog/txlog/replication"
	"github.com/txlog/txlog/store"
	"github.com/txlog/txlog/txid"
)

// The leader takes a frame another node forwards (POST /v1/internal/propose,
// a propose stream; Node.Propose) only after the checks a client's body
// gets, and those only a leader can make:
//
//   - the forwarding node (wire.SubmitOptions.From) is a member of the
//     latest configuration — else code removed, so that no write is answered
//     through a removed node once DELETE /v1/cluster/nodes/{id} has answered —
//     unless the frames are a removed node's hand-off (SubmitOptions.HandOff)
//     of what it accepted before, from a node of the registry;
//   - a transaction decodes (store.ViewTx) and holds what a body could:
//     its keys, lease and groups by api.CheckKey, its idempotency key, at
//     most api.DefaultMaxOpsPerTx ops, each put's value compact valid JSON of
//     at most the public body limit (api.CheckValue), a notify url this
//     node's --webhook-allow list allows, a consumer group committed once;
//   - its txid carries the forwarding node's txid node number as the node
//     registry holds it (every node forwards only txids it issued), and its
//     time is at most maxTxIDAhead ahead of this node's clock;
//   - a registration (KindRegisterNode) is the forwarding node's own, with
//     the txid node number it holds, if it holds one.
//
// A frame that fails is refused with its own error and never proposed. Two
// refusals are not final: not_ready while the forwarding member's number is
// not in the registry yet (it registers within moments of its start), and
// not_ready for a txid ahead of this clock (a node whose clock runs ahead):
// the forwarding node retries them (propose.go), and parks what is still
// refused, so an honest node's write is delayed, never dropped.
//
// The membership comes from a snapshot (memberSnap) of the latest Raft
// configuration and the registry, rebuilt when it is older than
// membersTTL, after every leader change (watch), after every join and
// removal this node makes as leader (invalidate; Node.Join, Node.Remove), and
// once before a frame is refused for membership: a removal is appended, and
// so in the latest configuration, before DELETE answers, so a frame checked
// after the answer sees it. Only a leader's own joins and removals change the
// configuration during its term.

// maxTxIDAhead bounds how far a forwarded txid's time may be ahead of the
// leader's clock (docs/api.md, Forwarded frames): a node's txids run up to
// its generator's reservation ahead of its clock after a restart
// (txid.DefaultReserve, 3 s), and the two clocks may differ by up to 5 s.
const maxTxIDAhead = txid.DefaultReserve + 5*time.Second

// membersTTL bounds the age of a membership snapshot; refreshBefore is the
// age under which a refusal does not rebuild it again.
const (
	membersTTL    = time.Second
	refreshBefore = 20 * time.Millisecond
)

// frameRules are the limits of a forwarded transaction: those of the public
// API on this node.
type frameRules struct {
	maxKeyBytes   int
	maxOps        int
	maxValueBytes int
	notify        *notify.AllowList
	maxAhead      time.Duration
}

// frameChecker checks forwarded frames on the leader. Its methods are safe
// for concurrent use.
type frameChecker struct {
	rules frameRules
	now   func() time.Time
	// members reads the latest configuration's IDs, registry the node
	// registry (Raft's and the store's; replaced by tests).
	members  func(ctx context.Context) ([]string, error)
	registry func() ([]store.NodeInfo, error)

	gen  atomic.Uint64 // bumped by invalidate
	snap atomic.Pointer[memberSnap]
	mu   sync.Mutex // serializes rebuilds
}

// memberSnap is who may forward, as of its build.
type memberSnap struct {
	gen     uint64
	built   time.Time
	members map[string]bool
	numbers map[string]uint16 // registry: node ID → txid node number
}

// newFrameChecker returns the checker of a node with its API limits.
func newFrameChecker(cfg Config, r *replication.Raft, db *store.DB) *frameChecker {
	maxValue := int(cfg.MaxBodyBytes)
	if maxValue <= 0 {
		maxValue = api.DefaultMaxBodyBytes
	}
	return &frameChecker{
		rules: frameRules{
			maxKeyBytes:   api.DefaultMaxKeyBytes,
			maxOps:        api.DefaultMaxOpsPerTx,
			maxValueBytes: maxValue,
			notify:        cfg.WebhookAllow,
			maxAhead:      maxTxIDAhead,
		},
		now: time.Now,
		members: func(ctx context.Context) ([]string, error) {
			ms, err := r.Members(ctx)
			ids := make([]string, len(ms))
			for i, m := range ms {
				ids[i] = m.ID
			}
			return ids, err
		},
		registry: func() ([]store.NodeInfo, error) { return db.Reads().Nodes() },
	}
}

// invalidate makes the next check rebuild the membership snapshot: after a
// join or removal on this leader, and a leader change.
func (fc *frameChecker) invalidate() { fc.gen.Add(1) }

// watch invalidates the snapshot on every leader change until life ends: a
// new term may bring a configuration this node did not make. Run runs it.
func (fc *frameChecker) watch(life context.Context, r *replication.Raft) {
	changes, unsubscribe := r.Subscribe()
	defer unsubscribe()
	for {
		select {
		case <-life.Done():
			return
		case _, ok := <-changes:
			if !ok {
				return
			}
			fc.invalidate()
		}
	}
}

// current returns a membership snapshot that is fresh: of this generation
// and younger than membersTTL, or, with force, younger than refreshBefore.
func (fc *frameChecker) current(ctx context.Context, force bool) (*memberSnap, error) {
	fresh := func(s *memberSnap) bool {
		if s == nil || s.gen != fc.gen.Load() {
			return false
		}
		age := fc.now().Sub(s.built)
		return age < membersTTL && (!force || age < refreshBefore)
	}
	if s := fc.snap.Load(); fresh(s) {
		return s, nil
	}
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if s := fc.snap.Load(); fresh(s) {
		return s, nil // another caller rebuilt it meanwhile
	}
	gen := fc.gen.Load()
	ids, err := fc.members(ctx)
	if err != nil {
		return nil, err
	}
	reg, err := fc.registry()
	if err != nil {
		return nil, err
	}
	s := &memberSnap{gen: gen, built: fc.now(), members: make(map[string]bool, len(ids)), numbers: make(map[string]uint16, len(reg))}
	for _, id := range ids {
		s.members[id] = true
	}
	for _, e := range reg {
		s.numbers[e.ID] = e.TxIDNode
	}
	fc.snap.Store(s) // gen read before the reads: an invalidate meanwhile makes it stale at once
	return s, nil
}

// check checks the commands of one forwarded proposal, each with the
// membership of the moment, and returns one error per command (nil: it may
// be proposed) and each transaction's txid. A failure to read the membership
// refuses every command as not ready.
func (fc *frameChecker) check(ctx context.Context, cmds []store.Command, opts wire.SubmitOptions) ([]error, []txid.ID) {
	errs := make([]error, len(cmds))
	ids := make([]txid.ID, len(cmds))
	s, err := fc.current(ctx, false)
	if err != nil {
		for i := range errs {
			errs[i] = &wire.Error{Code: wire.CodeNotReady, Message: fmt.Sprintf("read the cluster's membership: %v", err)}
		}
		return errs, ids
	}
	refreshed := false
	for i, c := range cmds {
		ids[i], errs[i] = fc.command(s, c, opts)
		if errs[i] != nil && isMembershipErr(errs[i]) && !refreshed {
			// The snapshot may predate a join or registration: look again,
			// once per proposal.
			refreshed = true
			if s2, err := fc.current(ctx, true); err == nil {
				s = s2
				ids[i], errs[i] = fc.command(s, c, opts)
			}
		}
	}
	return errs, ids
}

// membershipError is a refusal that a newer membership snapshot may undo:
// check looks again before it stands.
type membershipError struct{ err *wire.Error }

func (e *membershipError) Error() string { return e.err.Error() }
func (e *membershipError) Unwrap() error { return e.err }

func isMembershipErr(err error) bool {
	_, ok := err.(*membershipError)
	return ok
}

func refuseMember(code, format string, args ...any) error {
	return &membershipError{&wire.Error{Code: code, Message: fmt.Sprintf(format, args...)}}
}

// command checks one forwarded command against membership s, and returns a
// transaction's txid.
func (fc *frameChecker) command(s *memberSnap, c store.Command, opts wire.SubmitOptions) (txid.ID, error) {
	from := opts.From
	if from == "" {
		return 0, &wire.Error{Code: wire.CodeInvalidParam, Message: "from: missing; the leader takes frames only from a named member"}
	}
	number, registered := s.numbers[from]
	switch {
	case s.members[from]:
	case opts.HandOff && registered:
		// A removed node handing off what it accepted while a member.
	default:
		return 0, refuseMember(wire.CodeRemoved, "node %q is not a member of the cluster: the leader takes no frame it forwards", from)
	}
	switch c.Kind {
	case store.KindTx:
		return fc.tx(c.Payload, from, number, registered)
	case store.KindRegisterNode:
		info, err := store.DecodeNode(c.Payload)
		if err != nil {
			return 0, &wire.Error{Code: wire.CodeInvalidTx, Message: err.Error()}
		}
		if info.ID != from {
			return 0, &wire.Error{Code: wire.CodeInvalidTx, Message: fmt.Sprintf("registration of node %q forwarded by node %q: a node registers only itself", info.ID, from)}
		}
		if opts.HandOff || !s.members[from] {
			return 0, refuseMember(wire.CodeRemoved, "registration of node %q: not a member", from)
		}
		if info.TxIDNode == 0 {
			return 0, &wire.Error{Code: wire.CodeInvalidTx, Message: fmt.Sprintf("registration of node %q without a txid node number", from)}
		}
		if registered && number != 0 && info.TxIDNode != number {
			// A data directory keeps its number (number.go); another one
			// would disown the txids it issued, or clash with a member's.
			return 0, refuseMember(wire.CodeInvalidTx, "registration of node %q with txid node number %d: it holds number %d, which does not change", from, info.TxIDNode, number)
		}
		return 0, nil
	}
	return 0, &wire.Error{Code: wire.CodeInvalidTx, Message: fmt.Sprintf("command kind %d: not accepted from other nodes", c.Kind)}
}

// tx checks a forwarded transaction's bytes, forwarded by node from, which
// holds txid node number number when registered.
func (fc *frameChecker) tx(payload []byte, from string, number uint16, registered bool) (txid.ID, error) {
	tx, err := store.ViewTx(payload) // values alias payload; only read here
	if err != nil {
		return 0, &wire.Error{Code: wire.CodeInvalidTx, Message: err.Error()}
	}
	if err := fc.txid(tx.ID, from, number, registered); err != nil {
		return tx.ID, err
	}
	return tx.ID, fc.rules.check(tx)
}

// txid checks a forwarded txid: the forwarding node's number, and a time not
// too far ahead of this clock.
func (fc *frameChecker) txid(id txid.ID, from string, number uint16, registered bool) error {
	switch {
	case !registered || number == 0:
		return refuseMember(wire.CodeNotReady, "txid %s: node %q has not registered its txid node number yet; try again", id, from)
	case id.Node() != number:
		// A membership error too: refused only after a fresh look at the
		// registry.
		return refuseMember(wire.CodeInvalidTx, "txid %s: node number %d, but node %q holds number %d and forwards only txids it issued", id, id.Node(), from, number)
	}
	if ahead := id.Time().Sub(fc.now()); ahead > fc.rules.maxAhead {
		return &wire.Error{Code: wire.CodeNotReady, Message: fmt.Sprintf("txid %s: its time is %s ahead of the leader's clock (at most %s): is node %q's clock ahead? try again", id, ahead.Round(time.Millisecond), fc.rules.maxAhead, from)}
	}
	return nil
}

// check checks a decoded transaction as the API checks a body (api's Check
// functions), naming the part at fault as a body's decoder does.
func (r frameRules) check(tx store.Tx) error {
	if err := api.CheckIdempotencyKey(tx.IdempotencyKey, "idempotency_key"); err != nil {
		return err
	}
	if f := tx.Fence; f != nil {
		if err := api.CheckKey(f.Lease, "fence.lease", r.maxKeyBytes); err != nil {
			return err
		}
	}
	if tx.Notify != "" {
		if err := api.CheckNotify(tx.Notify, "notify.url", r.notify); err != nil {
			return err
		}
	}
	switch {
	case len(tx.Ops) == 0:
		return &wire.Error{Code: wire.CodeInvalidTx, Message: "ops: empty"}
	case len(tx.Ops) > r.maxOps:
		return &wire.Error{Code: wire.CodeInvalidTx, Message: fmt.Sprintf("ops: more than %d elements", r.maxOps)}
	}
	var groups []string // commit_offset groups seen; few
	for i, op := range tx.Ops {
		var err error
		switch op.Kind {
		case store.OpPut, store.OpDelete:
			err = api.CheckKey(op.Key, "key", r.maxKeyBytes)
			if err == nil && op.Kind == store.OpPut {
				err = api.CheckValue(op.Value, "value", r.maxValueBytes)
			}
		case store.OpCommitOffset:
			err = api.CheckKey(op.Key, "group", r.maxKeyBytes)
			if err == nil && slices.Contains(groups, op.Key) {
				err = &wire.Error{Code: wire.CodeInvalidTx, Message: fmt.Sprintf("group: %q committed twice", op.Key)}
			}
			groups = append(groups, op.Key)
		}
		if err != nil {
			return atOp(i, err)
		}
	}
	return nil
}

// atOp puts op i's path in front of the message of err, a *wire.Error about
// one of its fields, as a body's decoder names it ("ops[3].key: empty"). The
// path is made only for an error: the check of a good op allocates nothing.
func atOp(i int, err error) error {
	if e, ok := err.(*wire.Error); ok {
		return &wire.Error{Code: e.Code, Message: fmt.Sprintf("ops[%d].%s", i, e.Message)}
	}
	return err
}
