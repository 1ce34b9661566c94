package wire

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/txlog/txlog/txid"
)

// The results of a proposal answered 200 on a propose stream are binary, not
// JSON: the follower passes them on to its own client, so a JSON round trip
// between the nodes would only cost CPU on both. Varints are unsigned and in
// minimal form; a string is its length as a varint, then its bytes:
//
//	results: uvarint n | n × result
//	result:  flags | uvarint txid | string status | string idempotency_key |
//	         uvarint index | uvarint term | uvarint len(versions) |
//	         len(versions) × (string key | uvarint version), keys sorted |
//	         [string key | uvarint expected | uvarint actual]   if flags&resultConflict |
//	                    (with flags&resultFence the string is the conflict's fence,
//	                    with flags&resultGroup its group)
//	         string durability |
//	         [string code | string message | uvarint txid]      if flags&resultError |
//	         [uvarint n | n × string]                           if flags&resultHeldBy
//
// duplicate is flags&resultDuplicate. An empty versions map decodes as nil,
// as the JSON form's omitempty does. TestResultsFields fails when TxResult
// gains a field, so that this format learns it too.
const (
	resultConflict  = 1 << 0
	resultDuplicate = 1 << 1
	resultError     = 1 << 2
	resultHeldBy    = 1 << 3 // never set in answers of a leader to a proposal
	resultFence     = 1 << 4 // the conflict is a failed fence
	resultGroup     = 1 << 5 // the conflict is a refused commit_offset
	resultFlags     = resultConflict | resultDuplicate | resultError | resultHeldBy | resultFence | resultGroup
)

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// versionKeys appends the keys of versions to keys, sorted: the order both
// encodings of a result write them in.
func versionKeys(keys []string, versions map[string]uint64) []string {
	for k := range versions {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// AppendResults appends the binary form of rs to b.
func AppendResults(b []byte, rs []TxResult) []byte {
	b = binary.AppendUvarint(b, uint64(len(rs)))
	var keys []string
	for _, r := range rs {
		var flags byte
		if r.Conflict != nil {
			flags |= resultConflict
			switch {
			case r.Conflict.Fence != "":
				flags |= resultFence
			case r.Conflict.Group != "":
				flags |= resultGroup
			}
		}
		if r.Duplicate {
			flags |= resultDuplicate
		}
		if r.Error != nil {
			flags |= resultError
		}
		if len(r.HeldBy) > 0 {
			flags |= resultHeldBy
		}
		b = append(b, flags)
		b = binary.AppendUvarint(b, uint64(r.TxID))
		b = appendString(b, r.Status)
		b = appendString(b, r.IdempotencyKey)
		b = binary.AppendUvarint(b, r.Index)
		b = binary.AppendUvarint(b, r.Term)
		b = binary.AppendUvarint(b, uint64(len(r.Versions)))
		keys = versionKeys(keys[:0], r.Versions)
		for _, k := range keys {
			b = appendString(b, k)
			b = binary.AppendUvarint(b, r.Versions[k])
		}
		if c := r.Conflict; c != nil {
			b = appendString(b, c.Key+c.Fence+c.Group) // one of them is set
			b = binary.AppendUvarint(b, c.Expected)
			b = binary.AppendUvarint(b, c.Actual)
		}
		b = appendString(b, r.Durability)
		if e := r.Error; e != nil {
			b = appendString(b, e.Code)
			b = appendString(b, e.Message)
			b = binary.AppendUvarint(b, uint64(e.TxID))
		}
		if len(r.HeldBy) > 0 {
			b = binary.AppendUvarint(b, uint64(len(r.HeldBy)))
			for _, h := range r.HeldBy {
				b = appendString(b, h)
			}
		}
	}
	return b
}

// resultReader reads the binary form of results; the first error sticks.
type resultReader struct {
	b   []byte
	err error
}

func (r *resultReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: results: %s at %d bytes from the end", ErrStreamMessage, what, len(r.b))
	}
}

func (r *resultReader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := uvarint(r.b)
	if n == 0 {
		r.fail(what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *resultReader) string(what string) string {
	l := r.uvarint(what)
	if r.err != nil {
		return ""
	}
	if l > uint64(len(r.b)) {
		r.fail(what)
		return ""
	}
	s := string(r.b[:l])
	r.b = r.b[l:]
	return s
}

// minResultBytes is the fewest bytes one result takes: its flags, and one
// byte each for txid, status, idempotency key, index, term, versions and
// durability. DecodeResults allocates no more results than b can hold.
const minResultBytes = 8

// DecodeResults decodes the binary form of results, all of b.
func DecodeResults(b []byte) ([]TxResult, error) {
	r := &resultReader{b: b}
	n := r.uvarint("count")
	if n > uint64(len(r.b))/minResultBytes { // every result takes bytes
		r.fail("count")
	}
	if r.err != nil {
		return nil, r.err
	}
	rs := make([]TxResult, n)
	for i := range rs {
		if len(r.b) == 0 {
			r.fail("flags")
			break
		}
		flags := r.b[0]
		r.b = r.b[1:]
		if flags&^resultFlags != 0 {
			r.fail("flags")
			break
		}
		x := &rs[i]
		x.TxID = txid.ID(r.uvarint("txid"))
		x.Status = r.string("status")
		x.IdempotencyKey = r.string("idempotency key")
		x.Index = r.uvarint("index")
		x.Term = r.uvarint("term")
		nv := r.uvarint("versions")
		if nv > uint64(len(r.b))/2 { // a key's length and its version, at least
			r.fail("versions")
		}
		if r.err == nil && nv > 0 {
			x.Versions = make(map[string]uint64, nv)
			prev := ""
			for j := uint64(0); j < nv && r.err == nil; j++ {
				k := r.string("version key")
				if j > 0 && k <= prev {
					r.fail("version keys out of order")
				}
				x.Versions[k] = r.uvarint("version")
				prev = k
			}
		}
		if flags&resultConflict != 0 {
			x.Conflict = &Conflict{Key: r.string("conflict key"), Expected: r.uvarint("expected"), Actual: r.uvarint("actual")}
			if flags&resultFence != 0 {
				x.Conflict.Fence, x.Conflict.Key = x.Conflict.Key, ""
				if x.Conflict.Fence == "" {
					r.fail("empty fence")
				}
			}
			if flags&resultGroup != 0 {
				x.Conflict.Group, x.Conflict.Key = x.Conflict.Key, ""
				if x.Conflict.Group == "" || flags&resultFence != 0 {
					r.fail("bad group")
				}
			}
		} else if flags&(resultFence|resultGroup) != 0 {
			r.fail("fence or group without a conflict")
		}
		x.Duplicate = flags&resultDuplicate != 0
		x.Durability = r.string("durability")
		if flags&resultError != 0 {
			x.Error = &ErrorBody{Code: r.string("error code"), Message: r.string("error message"), TxID: txid.ID(r.uvarint("error txid"))}
		}
		if flags&resultHeldBy != 0 {
			nh := r.uvarint("held by")
			if nh == 0 || nh > uint64(len(r.b)) {
				r.fail("held by")
			}
			for j := uint64(0); j < nh && r.err == nil; j++ {
				x.HeldBy = append(x.HeldBy, r.string("held by"))
			}
		}
		if r.err != nil {
			break
		}
	}
	if r.err == nil && len(r.b) > 0 {
		r.fail("trailing bytes")
	}
	if r.err != nil {
		return nil, r.err
	}
	return rs, nil
}
