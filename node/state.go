package node

import (
	"errors"
	"fmt"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/txid"
)

// A pending command's state (pending.st) says where it is on its way into the
// log. Only the transitions below change it:
//
//	open ──send──▶ sent ──resolve──▶ done ──confirm──▶ done (ack=all)
//	open ◀─unsend─ sent
//	open, sent ──resolve──▶ done
//	open, sent, done (error not final) ──park──▶ parked
//	open, sent, done (error not final) ──reopen──▶ sent
//	done (txid conflict) ──reissue──▶ open
//
// open: accepted, not proposed. A request that ends here was not carried out
// (ErrNoLeader).
//
// sent: proposed; it may have reached a leader, so its outcome is unknown
// until it is found in the log. A leader's "not leader" answer undoes the
// send (unsend) of a command that had not been sent before.
//
// done: it has its answer, res and err. Committed or rejected (res), or
// refused (a client error: the key names another transaction, a bad
// transaction) are final; another error is not, and the intake parks such a
// command, or looks it up, as it does an open one. ack=all then confirms a
// committed answer: durability all, or 202 pending with durability quorum
// when a voter has not applied it.
//
// parked: answered 202 pending. The intake WAL holds it, fsynced (heldBy
// starts with wire.HeldByWAL), and Redis too when heldBy says so; the replayer
// commits it. Nothing changes it afterwards.
//
// reissue is a request's transaction refused because its txid, which this
// node issued, is recorded for another transaction (wire.ErrTxIDConflict):
// the request gives it a fresh txid and proposes it again (proposeReissuing).
//
// reopen is the intake WAL's failure: the append may or may not be on disk,
// and a restart replays what is, so the command is sent (unknown) whatever it
// was, never "not carried out".
//
// The paths of a transaction a client writes (SubmitBatch), by ack level and
// --intake-wal, each starting open with its intake entry added:
//
//   - quorum or all, parallel: the WAL append runs beside the proposal
//     without an fsync; send, then resolve (committed, rejected, refused).
//     With an answer in time, the entry is forgotten once the append lands.
//     Without one, the WAL is fsynced, then park (202); or, when the append
//     failed, reopen and look it up (done: found, else unknown).
//   - quorum or all, sync: the same, with the WAL's fsync before the proposal.
//   - quorum or all, off: the same, with no WAL append unless it is parked.
//   - accepted: the WAL append is fsynced, then park; the request never
//     proposes it (the replayer commits it).
//   - With Redis, park parks it in Redis too (heldBy redis) when Redis takes it.
//   - ack=all: a committed answer is confirmed before it is sent.
//
// A transition from a state the table does not allow is a bug: it panics
// with a *transitionError.
type state struct {
	phase phase
	res   wire.TxResult // the answer, once done or parked
	err   error         // the error, once done
}

// phase is a state's place in the table above.
type phase uint8

const (
	phaseOpen phase = iota
	phaseSent
	phaseDone
	phaseParked
)

var phaseNames = [...]string{phaseOpen: "open", phaseSent: "sent", phaseDone: "done", phaseParked: "parked"}

func (p phase) String() string { return phaseNames[p] }

// transitionError is the panic of a transition the table does not allow.
type transitionError struct {
	op   string
	from phase
}

func (e *transitionError) Error() string {
	return fmt.Sprintf("node: pending command: %s from state %s", e.op, e.from)
}

func (s *state) refuse(op string) { panic(&transitionError{op: op, from: s.phase}) }

// send records that the command is on its way to a leader: open or sent.
func (s *state) send() {
	if s.phase != phaseOpen && s.phase != phaseSent {
		s.refuse("send")
	}
	s.phase = phaseSent
}

// unsend undoes the send of a command a leader refused without taking it
// (not leader), which had not been sent before.
func (s *state) unsend() {
	if s.phase != phaseSent {
		s.refuse("unsend")
	}
	s.phase = phaseOpen
}

// resolve gives an open or sent command its answer.
func (s *state) resolve(res wire.TxResult, err error) {
	if s.phase != phaseOpen && s.phase != phaseSent {
		s.refuse("resolve")
	}
	s.phase, s.res, s.err = phaseDone, res, err
}

// park answers an open or sent command, or one done with an error that is not
// final, 202 pending: id is its txid, heldBy where it is held, the intake WAL
// (fsynced) first.
func (s *state) park(id txid.ID, heldBy []string) {
	if !s.parkable() || len(heldBy) == 0 || heldBy[0] != wire.HeldByWAL {
		s.refuse("park")
	}
	s.phase, s.err = phaseParked, nil
	s.res = wire.TxResult{TxID: id, Status: wire.StatusPending, Durability: wire.AckAccepted, HeldBy: heldBy}
}

// reopen makes an open or sent command, or one done with an error that is
// not final, sent with no answer: its intake WAL append failed, and may be on
// disk all the same.
func (s *state) reopen() {
	if !s.parkable() {
		s.refuse("reopen")
	}
	s.phase, s.res, s.err = phaseSent, wire.TxResult{}, nil
}

// reissue makes a command done with wire.ErrTxIDConflict open again, with
// no answer, for a proposal under a fresh txid.
func (s *state) reissue() {
	if s.phase != phaseDone || !errors.Is(s.err, wire.ErrTxIDConflict) {
		s.refuse("reissue")
	}
	s.phase, s.res, s.err = phaseOpen, wire.TxResult{}, nil
}

// confirm gives a committed answer (see committed) its ack=all durability:
// all when every voter applied it, else 202 pending with durability quorum
// (committed by the quorum regardless).
func (s *state) confirm(everywhere bool) {
	if !s.committed() {
		s.refuse("confirm")
	}
	if everywhere {
		s.res.Durability = wire.AckAll
		return
	}
	s.res.Status = wire.StatusPending
	s.res.Durability = wire.AckQuorum
}

// parkable reports whether park and reopen may be applied: the command is
// open or sent, or done with an error that is not final.
func (s *state) parkable() bool {
	switch s.phase {
	case phaseOpen, phaseSent:
		return true
	case phaseDone:
		return !s.final()
	}
	return false
}

// isDone reports whether the command has its answer (done, or parked).
func (s *state) isDone() bool { return s.phase >= phaseDone }

// isSent reports whether the command is sent and has no answer yet.
func (s *state) isSent() bool { return s.phase == phaseSent }

// final reports whether a done command's answer stands: no error, or a
// client error (isClientError).
func (s *state) final() bool {
	return s.phase == phaseDone && (s.err == nil || isClientError(s.err))
}

// committed reports whether the command is done with a result that has a log
// index, not a pending one: what ack=all confirms.
func (s *state) committed() bool {
	return s.phase == phaseDone && s.err == nil && s.res.Status != wire.StatusPending && s.res.Index != 0
}
