package node

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/replication"
	"github.com/txlog/txlog/txid"
)

// ack=all asks every other voter whether it has applied a transaction. The
// checks on one voter are coalesced in rounds: a round takes every check
// waiting for that voter and asks once, for the one with the highest log
// index, with GET /v1/tx/{txid}?wait=. A voter that has applied the entry at
// that index has applied every entry before it (voters apply committed
// entries in log order, and a committed entry is the same on every node), so
// the answer settles the whole round. Checks that arrive while a round's
// request is out wait for the next round, so no answer is older than the
// check it settles. Under load this is one request per voter and round
// instead of one per request and voter.

// ackAll confirms committed answers for ack=all (state.confirm): it asks
// the other voters, in the coalesced rounds above, whether they applied them.
type ackAll struct {
	self   string // this node's ID
	raft   *replication.Raft
	peers  *peers
	checks sync.Map // voter base URL → *voterChecks
}

// await upgrades committed results to durability "all" once every voter has
// applied them; if one has not by the timeout, the answer is 202 pending with
// durability "quorum" (the transaction is committed by the quorum regardless).
func (a *ackAll) await(ctx context.Context, ps []*pending) {
	// A voter applies entries in log order: once it has applied the batch's
	// highest index it has applied them all, so one wait per voter covers the
	// whole batch.
	var committed []*pending
	var top *pending
	for _, p := range ps {
		if !p.st.committed() {
			continue
		}
		committed = append(committed, p)
		if top == nil || p.st.res.Index > top.st.res.Index {
			top = p
		}
	}
	if len(committed) == 0 {
		return
	}
	// This node is a voter too: a follower has the outcome from the leader,
	// and may not have applied it yet itself.
	here := a.raft.WaitApplied(ctx, top.st.res.Index) == nil
	voters, err := a.otherVoters(ctx)
	everywhere := here && err == nil && a.appliedEverywhere(ctx, voters, top.st.res.Index, top.st.res.TxID)
	for _, p := range committed {
		p.st.confirm(everywhere)
	}
}

// otherVoters returns the peer addresses of the voters other than this node.
func (a *ackAll) otherVoters(ctx context.Context) ([]string, error) {
	members, err := a.raft.Members(ctx)
	if err != nil {
		return nil, err
	}
	var urls []string
	for _, m := range members {
		if m.ID == a.self || m.Suffrage != "voter" {
			continue
		}
		urls = append(urls, m.Addr)
	}
	return urls, nil
}

// voterChecks is the checks waiting for one voter, and whether a goroutine
// runs its rounds.
type voterChecks struct {
	mu      sync.Mutex
	waiting []*appliedCheck
	running bool
}

// appliedCheck is one request's question to one voter: has it applied the
// transaction id, committed at index? done gets the answer (capacity 1, so
// the round never blocks on a caller that gave up).
type appliedCheck struct {
	index    uint64
	id       txid.ID
	deadline time.Time
	done     chan bool
}

// checkMargin is how long before a check's deadline its request to the voter
// stops waiting, so that the answer arrives within the deadline.
const checkMargin = 50 * time.Millisecond

// appliedEverywhere asks each voter, in parallel, whether it has applied the
// transaction id committed at index, waiting within ctx.
func (a *ackAll) appliedEverywhere(ctx context.Context, voters []string, index uint64, id txid.ID) bool {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(time.Second + checkMargin)
	}
	if time.Until(deadline) <= checkMargin {
		return false
	}
	checks := make([]*appliedCheck, len(voters))
	for i, base := range voters {
		checks[i] = &appliedCheck{index: index, id: id, deadline: deadline, done: make(chan bool, 1)}
		a.enqueue(base, checks[i])
	}
	for _, c := range checks {
		select {
		case ok := <-c.done:
			if !ok {
				return false
			}
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// enqueue adds c to the checks waiting for the voter at base, and starts
// the voter's rounds if none run.
func (a *ackAll) enqueue(base string, c *appliedCheck) {
	v, ok := a.checks.Load(base)
	if !ok {
		v, _ = a.checks.LoadOrStore(base, &voterChecks{})
	}
	vc := v.(*voterChecks)
	vc.mu.Lock()
	vc.waiting = append(vc.waiting, c)
	start := !vc.running
	vc.running = true
	vc.mu.Unlock()
	if start {
		go a.run(base, vc)
	}
}

// run runs rounds of the checks waiting for the voter at base until
// none wait.
func (a *ackAll) run(base string, vc *voterChecks) {
	for {
		vc.mu.Lock()
		round := vc.waiting
		vc.waiting = nil
		if len(round) == 0 {
			vc.running = false
			vc.mu.Unlock()
			return
		}
		vc.mu.Unlock()
		ok := a.round(base, round)
		for _, c := range round {
			c.done <- ok
		}
	}
}

// round asks the voter at base about the check of round with the
// highest index, waiting up to the latest deadline of the round (a check
// whose own deadline comes first gives up on its own).
func (a *ackAll) round(base string, round []*appliedCheck) bool {
	top := slices.MaxFunc(round, func(a, b *appliedCheck) int { return cmp.Compare(a.index, b.index) })
	deadline := top.deadline
	for _, c := range round {
		if c.deadline.After(deadline) {
			deadline = c.deadline
		}
	}
	wait := time.Until(deadline) - checkMargin
	if wait <= 0 {
		return false
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	res, err := a.peers.client.Tx(ctx, base, top.id, wait)
	return err == nil && (res.Status == wire.StatusCommitted || res.Status == wire.StatusRejected)
}
