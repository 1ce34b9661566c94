package api

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/auth"
)

// The key scope of a request's Principal (auth.Principal.Sees, Touches),
// applied on every path that takes or gives a key, a consumer group or a
// lease name (docs/api.md, "Authentication and authorization"). A nil
// Principal (auth off, or the peer link) has no limits, and every check here
// passes it through untouched.
//
//   - Writes (POST /v1/tx, /v1/tx/batch, /v1/consumers/{group}/offset,
//     PUT and DELETE /v1/leases/{name}): every op's key or group and the
//     fence's lease must be Touches (never a reserved one); else 403 and
//     nothing is submitted. A batch with one such transaction is refused
//     whole.
//   - GET /v1/kv/{key}, /v1/leases/{name}, /v1/consumers/{group}: 403 when
//     not Sees.
//   - GET /v1/tx/{txid} and ?idempotency_key=: a decided transaction is
//     answered only when its log entry touches nothing the Principal does
//     not see, else 404 as for an unknown one (scopeTx).
//   - GET /v1/log, its long poll and GET /v1/log/stream: an entry that
//     touches anything the Principal does not see, or an unreadable one, is
//     skipped as a prefix read skips (logPage).
//   - The lists of leases and groups hold only the names it sees; a lease's
//     token shows only to a write or admin credential.

// seer returns the Principal of ctx when it sees less than everything,
// nil when it sees every key: auth off, or an admin without prefixes.
func seer(ctx context.Context) *auth.Principal {
	p := auth.FromContext(ctx)
	if p == nil || (p.Role >= auth.RoleAdmin && len(p.Prefixes) == 0) {
		return nil
	}
	return p
}

// forbiddenName is the 403 answer for a name (at field) that a Principal may
// not read or write.
func forbiddenName(field, name string) error {
	why := "outside the credential's key scope"
	if strings.HasPrefix(name, auth.ReservedPrefix) {
		why = "reserved for the node (" + auth.ReservedPrefix + ")"
	}
	return &wire.Error{Code: wire.CodeForbidden, Message: fmt.Sprintf("%s %q: %s", field, name, why)}
}

// checkSees returns forbiddenName unless p sees name.
func checkSees(p *auth.Principal, field, name string) error {
	if p.Sees(name) {
		return nil
	}
	return forbiddenName(field, name)
}

// checkTouches returns forbiddenName unless p may write name.
func checkTouches(p *auth.Principal, field, name string) error {
	if p.Touches(name) {
		return nil
	}
	return forbiddenName(field, name)
}

// opName returns the name an op touches and its field: its key, or a
// commit_offset's group.
func opName(op *wire.Op) (name, field string) {
	if op.Op == wire.OpCommitOffset {
		return op.Group, "group"
	}
	return op.Key, "key"
}

// checkTxScope returns the 403 for the first key, group or fence lease of
// tx that p may not write; path prefixes the field names ("txs[3].").
func checkTxScope(p *auth.Principal, tx *wire.TxRequest, path string) error {
	if p == nil {
		return nil
	}
	for i := range tx.Ops {
		name, field := opName(&tx.Ops[i])
		if err := checkTouches(p, fmt.Sprintf("%sops[%d].%s", path, i, field), name); err != nil {
			return err
		}
	}
	if f := tx.Fence; f != nil {
		return checkTouches(p, path+"fence.lease", f.Lease)
	}
	return nil
}

// seesAll reports whether p sees each non-empty name.
func seesAll(p *auth.Principal, names ...string) bool {
	for _, n := range names {
		if n != "" && !p.Sees(n) {
			return false
		}
	}
	return true
}

// seesEntry reports whether p sees everything e touches: its ops' keys and
// groups, its fence's lease, its conflict and its versions. An unreadable
// entry's names are unknown: only a nil p sees it.
func seesEntry(p *auth.Principal, e *wire.LogEntry) bool {
	if p == nil {
		return true
	}
	if e.Unreadable {
		return false
	}
	for i := range e.Ops {
		if name, _ := opName(&e.Ops[i]); !p.Sees(name) {
			return false
		}
	}
	if f := e.Fence; f != nil && !p.Sees(f.Lease) {
		return false
	}
	if c := e.Conflict; c != nil && !seesAll(p, c.Key, c.Fence, c.Group) {
		return false
	}
	for k := range e.Versions {
		if !p.Sees(k) {
			return false
		}
	}
	return true
}

// scopeResult returns res with only the versions and conflict p sees (res
// shares nothing it changes with the result it returns).
func scopeResult(p *auth.Principal, res wire.TxResult) wire.TxResult {
	if p == nil {
		return res
	}
	if c := res.Conflict; c != nil && !seesAll(p, c.Key, c.Fence, c.Group) {
		res.Conflict = nil
	}
	for k := range res.Versions {
		if !p.Sees(k) {
			res.Versions = maps.Clone(res.Versions)
			maps.DeleteFunc(res.Versions, func(k string, _ uint64) bool { return !p.Sees(k) })
			break
		}
	}
	return res
}

// scopeTx returns what p may learn of the transaction lookup res: a decided
// one (with an index) only when p sees its log entry (seesEntry), else
// wire.ErrNotFound as for a transaction never heard of, also when the entry
// cannot be read or is no longer in the log (retention); an undecided one (pending, unknown) without versions or
// conflict, which it has none of yet.
func scopeTx(ctx context.Context, b Backend, p *auth.Principal, res wire.TxResult) (wire.TxResult, error) {
	if p == nil {
		return res, nil
	}
	if res.Index == 0 {
		res.Versions, res.Conflict = nil, nil
		return res, nil
	}
	page, err := logAt(ctx, b, res.Index)
	if err != nil || len(page.Entries) == 0 || page.Entries[0].Index != res.Index || !seesEntry(p, &page.Entries[0]) {
		return wire.TxResult{}, wire.ErrNotFound
	}
	return scopeResult(p, res), nil
}

// logAt reads the log page of one entry from index on. A lookup read at the
// leader (linearizable or leader consistency) may name an entry this node has
// not applied yet: it waits for this node to apply it, until ctx ends, when
// the Backend tells when it applies (LogFollower.Applied).
func logAt(ctx context.Context, b Backend, index uint64) (wire.LogPage, error) {
	applied, _ := b.(interface{ Applied() <-chan struct{} })
	for {
		var ch <-chan struct{}
		if applied != nil {
			ch = applied.Applied() // before the read: an apply after it closes ch
		}
		page, err := b.Log(ctx, index, 1)
		if err != nil || len(page.Entries) > 0 || ch == nil {
			return page, err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return page, nil
		}
	}
}

// scopeLeases returns the leases of ls that p sees, without their tokens
// unless p may write (a token lets its bearer renew or release the lease).
// ls is not changed.
func scopeLeases(p *auth.Principal, ls []wire.Lease) []wire.Lease {
	if p == nil {
		return ls
	}
	out := make([]wire.Lease, 0, len(ls))
	for _, l := range ls {
		if p.Sees(l.Name) {
			out = append(out, scopeLease(p, l))
		}
	}
	return out
}

// scopeLease returns l without its token unless p may write.
func scopeLease(p *auth.Principal, l wire.Lease) wire.Lease {
	if p != nil && !p.Can(auth.RoleWrite) {
		l.Token = 0
	}
	return l
}

// scopeGroups returns the consumer groups of cs that p sees; cs is not
// changed.
func scopeGroups(p *auth.Principal, cs []wire.ConsumerGroup) []wire.ConsumerGroup {
	if p == nil {
		return cs
	}
	out := make([]wire.ConsumerGroup, 0, len(cs))
	for _, c := range cs {
		if p.Sees(c.Group) {
			out = append(out, c)
		}
	}
	return out
}

// reusedKeyMessage is the message of idempotency_key_reused to a scoped
// credential: without the transaction the key names, which may be outside
// its scope.
func reusedKeyMessage(key string) string {
	return fmt.Sprintf("idempotency key %q is recorded for another transaction; use a new key for a new transaction", key)
}

// scopeSubmitErr returns err for a scoped p without the txid of the
// transaction a reused idempotency key (key) names.
func scopeSubmitErr(p *auth.Principal, key string, err error) error {
	if !p.Scoped() {
		return err
	}
	if _, ok := errors.AsType[*wire.KeyReusedError](err); ok {
		return &wire.KeyReusedError{Key: key, Message: reusedKeyMessage(key)}
	}
	return err
}

// scopeBatchError returns the result of one transaction of a batch for a
// scoped p as scopeSubmitErr does.
func scopeBatchError(p *auth.Principal, key string, res wire.TxResult) wire.TxResult {
	if p.Scoped() && res.Error != nil && res.Error.Code == wire.CodeIdempotencyKeyReused {
		res.Error = &wire.ErrorBody{Code: wire.CodeIdempotencyKeyReused, Message: reusedKeyMessage(key)}
	}
	return res
}
