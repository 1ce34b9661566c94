package node

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/txlog/txlog/api/wire"
)

// stateAt returns a state in phase ph, reached through the transitions.
// done has a committed answer; failed is done with an error that is not final.
func stateAt(t *testing.T, name string) state {
	t.Helper()
	var s state
	switch name {
	case "open":
	case "sent":
		s.send()
	case "done":
		s.send()
		s.resolve(wire.TxResult{TxID: 7, Status: wire.StatusCommitted, Index: 3, Durability: wire.AckQuorum}, nil)
	case "refused":
		s.resolve(wire.TxResult{}, &wire.KeyReusedError{Key: "k", TxID: 8})
	case "conflict":
		s.send()
		s.resolve(wire.TxResult{TxID: 7}, fmt.Errorf("%w: txid 7", wire.ErrTxIDConflict))
	case "failed":
		s.send()
		s.resolve(wire.TxResult{TxID: 7}, errors.New("store: entry 3: corrupt"))
	case "parked":
		s.park(7, []string{wire.HeldByWAL})
	default:
		t.Fatalf("no state %q", name)
	}
	return s
}

// TestStateTransitions applies every transition to every state: each one the
// table in state.go allows gives the state it says, and each other one panics
// with a *transitionError and leaves the state as it was.
func TestStateTransitions(t *testing.T) {
	committed := wire.TxResult{TxID: 7, Status: wire.StatusCommitted, Index: 3, Durability: wire.AckQuorum}
	ops := map[string]func(*state){
		"send":          (*state).send,
		"unsend":        (*state).unsend,
		"resolve":       func(s *state) { s.resolve(committed, nil) },
		"park":          func(s *state) { s.park(7, []string{wire.HeldByWAL, wire.HeldByRedis}) },
		"reopen":        (*state).reopen,
		"reissue":       (*state).reissue,
		"confirm all":   func(s *state) { s.confirm(true) },
		"confirm short": func(s *state) { s.confirm(false) },
	}
	// want[from][op] is the phase after op, absent when op is refused.
	want := map[string]map[string]phase{
		"open":     {"send": phaseSent, "resolve": phaseDone, "park": phaseParked, "reopen": phaseSent},
		"sent":     {"send": phaseSent, "unsend": phaseOpen, "resolve": phaseDone, "park": phaseParked, "reopen": phaseSent},
		"done":     {"confirm all": phaseDone, "confirm short": phaseDone},
		"refused":  {},
		"conflict": {"reissue": phaseOpen},
		"failed":   {"park": phaseParked, "reopen": phaseSent},
		"parked":   {},
	}
	for from, allowed := range want {
		for op, apply := range ops {
			t.Run(from+"/"+op, func(t *testing.T) {
				s := stateAt(t, from)
				before := s
				to, ok := allowed[op]
				defer func() {
					r := recover()
					if ok {
						if r != nil {
							t.Fatalf("%s from %s panicked: %v", op, from, r)
						}
						if s.phase != to {
							t.Fatalf("%s from %s: phase %v, want %v", op, from, s.phase, to)
						}
						return
					}
					te, isTE := r.(*transitionError)
					if !isTE {
						t.Fatalf("%s from %s: recovered %v, want a *transitionError", op, from, r)
					}
					if te.from != before.phase || te.op != strings.Fields(op)[0] {
						t.Fatalf("%s from %s: %v", op, from, te)
					}
					if s.phase != before.phase || s.res.Status != before.res.Status || s.err != before.err {
						t.Fatalf("%s from %s was refused and changed the state: %+v, was %+v", op, from, s, before)
					}
				}()
				apply(&s)
			})
		}
	}
}

// TestStateAnswers checks what the transitions leave for the answer: a
// parked command answers 202 with where it is held, reopen forgets an answer
// that was not final, and confirm sets ack=all's durability or downgrades
// to 202 pending.
func TestStateAnswers(t *testing.T) {
	s := stateAt(t, "failed")
	s.park(9, []string{wire.HeldByWAL, wire.HeldByRedis})
	if s.err != nil || s.res.TxID != 9 || s.res.Status != wire.StatusPending || s.res.Durability != wire.AckAccepted || len(s.res.HeldBy) != 2 {
		t.Fatalf("parked: %+v, %v", s.res, s.err)
	}
	if !s.isDone() || s.isSent() || s.final() || s.committed() {
		t.Fatalf("parked: isDone %v isSent %v final %v committed %v", s.isDone(), s.isSent(), s.final(), s.committed())
	}

	s = stateAt(t, "failed")
	if s.final() || !s.parkable() {
		t.Fatal("a done command with a store error is final, or not parkable")
	}
	s.reopen()
	if s.err != nil || s.res.TxID != 0 || !s.isSent() {
		t.Fatalf("reopened: %+v, %v, phase %v", s.res, s.err, s.phase)
	}

	if s := stateAt(t, "refused"); !s.final() || s.parkable() || s.committed() {
		t.Fatal("a refused command is not final, or parkable, or committed")
	}

	s = stateAt(t, "done")
	s.confirm(true)
	if s.res.Durability != wire.AckAll || s.res.Status != wire.StatusCommitted {
		t.Fatalf("confirmed everywhere: %+v", s.res)
	}
	s = stateAt(t, "done")
	s.confirm(false)
	if s.res.Durability != wire.AckQuorum || s.res.Status != wire.StatusPending || s.committed() {
		t.Fatalf("confirmed short: %+v", s.res)
	}

	// Parking without the WAL is refused: parked means the WAL holds it.
	func() {
		defer func() {
			if _, ok := recover().(*transitionError); !ok {
				t.Fatal("park held by redis alone did not panic with a *transitionError")
			}
		}()
		var s state
		s.park(1, []string{wire.HeldByRedis})
	}()
}

// TestStateFieldsOnlyChangedByTransitions reads the package's files and
// fails if any but state.go assigns to a state's fields, or takes their
// address: the transitions are the only way they change.
func TestStateFieldsOnlyChangedByTransitions(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string]bool{"phase": true, "res": true, "err": true}
	// isStateField reports whether e is x.st.<field> or x.st.res.<...>.
	isStateField := func(e ast.Expr) bool {
		for {
			sel, ok := e.(*ast.SelectorExpr)
			if !ok {
				return false
			}
			if inner, ok := sel.X.(*ast.SelectorExpr); ok && inner.Sel.Name == "st" && fields[sel.Sel.Name] {
				return true
			}
			if sel.Sel.Name == "st" {
				return true // the whole state assigned
			}
			e = sel.X
		}
	}
	checked := 0
	for _, name := range files {
		if name == "state.go" || strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				for _, l := range n.Lhs {
					if isStateField(l) {
						t.Errorf("%s: assigns %s outside the transitions", fset.Position(n.Pos()), src[l.Pos()-1:l.End()-1])
					}
				}
			case *ast.IncDecStmt:
				if isStateField(n.X) {
					t.Errorf("%s: changes a state field outside the transitions", fset.Position(n.Pos()))
				}
			case *ast.UnaryExpr:
				if n.Op == token.AND && isStateField(n.X) {
					t.Errorf("%s: takes a state field's address outside the transitions", fset.Position(n.Pos()))
				}
			case *ast.KeyValueExpr:
				if id, ok := n.Key.(*ast.Ident); ok && id.Name == "st" {
					t.Errorf("%s: sets a pending's state outside the transitions", fset.Position(n.Pos()))
				}
			case *ast.CompositeLit:
				if id, ok := n.Type.(*ast.Ident); ok && id.Name == "state" {
					t.Errorf("%s: builds a state outside state.go", fset.Position(n.Pos()))
				}
			}
			return true
		})
	}
	if checked < 5 {
		t.Fatalf("checked %d files; run from the package directory", checked)
	}
}
