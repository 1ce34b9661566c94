package chaos

import (
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/txlog/txlog/api/wire"
)

// The register model that CheckLinearizable checks each key against: a value
// and the version txlog gives it (the number of puts since the key was
// created; the workload never deletes). Version 0 is "does not exist".
type regState struct {
	Ver uint64
	Val int64
}

type regInput struct {
	Key   string
	Kind  OpKind
	Val   int64  // put, cas
	IfVer uint64 // cas
}

type regOutput struct {
	// Status is committed or rejected for a write, committed for a read.
	Status string
	Ver    uint64 // the version written or read
	Val    int64  // the value read
	Actual uint64 // the version a rejected cas found
}

// registerModel is a per-key register with versions, partitioned by key. Every
// operation it sees has a known outcome (see PorcupineOps), so each step has at
// most one next state; it is written as a NondeterministicModel so that a step
// that cannot happen reads as an empty set.
var registerModel = (&porcupine.NondeterministicModel{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		for _, op := range history {
			k := op.Input.(regInput).Key
			byKey[k] = append(byKey[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(byKey))
		for _, k := range slices.Sorted(maps.Keys(byKey)) {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() []any { return []any{regState{}} },
	Step: func(state, input, output any) []any {
		s, in, out := state.(regState), input.(regInput), output.(regOutput)
		next := regState{Ver: s.Ver + 1, Val: in.Val}
		switch in.Kind {
		case OpRead:
			if out.Ver == s.Ver && (s.Ver == 0 || out.Val == s.Val) {
				return []any{s}
			}
			return nil
		case OpPut:
			switch out.Status {
			case wire.StatusCommitted:
				if out.Ver == next.Ver {
					return []any{next}
				}
				return nil
			}
			return nil // a blind put cannot be rejected
		case OpCAS:
			holds := s.Ver == in.IfVer
			switch out.Status {
			case wire.StatusCommitted:
				if holds && out.Ver == next.Ver {
					return []any{next}
				}
			case wire.StatusRejected:
				if !holds && out.Actual == s.Ver {
					return []any{s}
				}
			}
			return nil
		}
		return nil
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(regInput), output.(regOutput)
		switch in.Kind {
		case OpRead:
			if out.Ver == 0 {
				return "read → absent"
			}
			return fmt.Sprintf("read → v%d=%d", out.Ver, out.Val)
		case OpCAS:
			return fmt.Sprintf("cas(if v%d, %d) → %s v%d", in.IfVer, in.Val, out.Status, max(out.Ver, out.Actual))
		default:
			return fmt.Sprintf("put(%d) → %s v%d", in.Val, out.Status, out.Ver)
		}
	},
	DescribeState: func(state any) string {
		s := state.(regState)
		if s.Ver == 0 {
			return "absent"
		}
		return fmt.Sprintf("v%d=%d", s.Ver, s.Val)
	},
}).ToModel()

// PorcupineOps turns the history into porcupine operations, timed in
// nanoseconds from origin. It leaves out reads that failed, writes refused as
// bad input and writes whose outcome is unknown and that are not in the final
// log (run FillFromLog first): those never took effect. A write with a known
// outcome but no known end (learned from the log only) may have taken effect at
// any time after it started.
func PorcupineOps(ops []Op, origin time.Time) []porcupine.Operation {
	out := make([]porcupine.Operation, 0, len(ops))
	for _, op := range ops {
		in := regInput{Key: op.Key, Kind: op.Kind, Val: op.Value, IfVer: op.IfVersion}
		var o regOutput
		switch {
		case op.Kind == OpRead && op.Answer == AnswerOK:
			o = regOutput{Status: wire.StatusCommitted, Ver: op.Result.Version, Val: op.Result.ReadValue}
		case op.Kind == OpRead && op.Answer == AnswerNotFound:
			o = regOutput{Status: wire.StatusCommitted}
		case op.Kind == OpRead:
			continue
		case op.Result.Status == wire.StatusCommitted || op.Result.Status == wire.StatusRejected:
			o = regOutput{Status: op.Result.Status, Ver: op.Result.Version, Actual: op.Result.Actual}
		default:
			continue // never took effect
		}
		ret := int64(math.MaxInt64)
		if !op.End.IsZero() && !op.Result.FromLog {
			ret = op.End.Sub(origin).Nanoseconds()
		}
		out = append(out, porcupine.Operation{
			ClientId: op.Client,
			Input:    in,
			Call:     op.Start.Sub(origin).Nanoseconds(),
			Output:   o,
			Return:   ret,
		})
	}
	return out
}

// maxVisualizedKeys bounds the keys drawn into the visualization of a failure.
const maxVisualizedKeys = 3

// CheckLinearizable checks with porcupine that the history of every key is
// linearizable, within timeout for all keys together. When a key is not, it
// writes porcupine's HTML visualization of the offending keys into dir (when
// dir is not empty). A key whose check timed out makes the result fail as
// inconclusive.
func CheckLinearizable(ops []Op, origin time.Time, timeout time.Duration, dir string) CheckResult {
	all := PorcupineOps(ops, origin)
	byKey := registerModel.Partition(all)
	deadline := time.Now().Add(timeout)
	var v violations
	var bad [][]porcupine.Operation
	var inconclusive []string
	for _, h := range byKey {
		key := h[0].Input.(regInput).Key
		left := time.Until(deadline)
		if left <= 0 {
			inconclusive = append(inconclusive, key)
			continue
		}
		switch porcupine.CheckOperationsTimeout(registerModel, h, left) {
		case porcupine.Illegal:
			v.addf("key %s: %d operations are not linearizable", key, len(h))
			bad = append(bad, h)
		case porcupine.Unknown:
			inconclusive = append(inconclusive, key)
		}
	}
	for _, k := range inconclusive {
		v.addf("key %s: the check timed out (inconclusive)", k)
	}
	res := v.result(NameLinearizable,
		fmt.Sprintf("%d operations on %d keys are linearizable", len(all), len(byKey)),
		"keys not linearizable or not checked in time")
	if len(bad) > 0 && dir != "" {
		var hist []porcupine.Operation
		for _, h := range bad[:min(len(bad), maxVisualizedKeys)] {
			hist = append(hist, h...)
		}
		_, info := porcupine.CheckOperationsVerbose(registerModel, hist, timeout)
		path := filepath.Join(dir, "linearizability.html")
		if err := porcupine.VisualizePath(registerModel, info, path); err != nil {
			res.Evidence = append(res.Evidence, fmt.Sprintf("write visualization: %v", err))
		} else {
			res.Files = append(res.Files, path)
		}
	}
	return res
}
