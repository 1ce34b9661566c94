package api

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/txlog/txlog/api/wire"
)

// FuzzDecodeObjectBodies: the bodies read with decodeObject (the join, the
// leadership transfer and the lease) never panic; a refusal is a *wire.Error
// of status 400; an accepted body encodes to JSON that decodes to the same
// request.
func FuzzDecodeObjectBodies(f *testing.F) {
	for _, b := range []string{
		`{"id":"n4","raft_addr":"127.0.0.1:7104","http_addr":"127.0.0.1:8084","voter":false,"node_number":4,"replace":true}`,
		`{"id":"n4","raft_addr":"0.0.0.0:7104"}`,
		`{"id":"n2"}`,
		`{"holder":"a","ttl":"5s","token":7}`,
		`{"holder":"a","ttl":"5"}`,
		`{"voter":"yes","ttl":1,"id":null}`,
		`{"id":"n1","id":"n2"}`,
		`[] {}`,
		"",
	} {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		refused := func(what string, err error) bool {
			t.Helper()
			if err == nil {
				return false
			}
			if e, ok := errors.AsType[*wire.Error](err); !ok || !is400(e) {
				t.Fatalf("%s body %q: error %v (%T), want a 400 *wire.Error", what, body, err, err)
			}
			return true
		}
		roundTrip := func(what string, v any, decode func([]byte) (any, error)) {
			t.Helper()
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			again, err := decode(b)
			if err != nil || !reflect.DeepEqual(again, v) {
				t.Fatalf("%s body %q gave %+v; its JSON %s gives %+v, %v", what, body, v, b, again, err)
			}
		}
		if req, err := decodeJoinBody(body); !refused("join", err) {
			roundTrip("join", req, func(b []byte) (any, error) { return decodeJoinBody(b) })
		}
		if req, err := decodeTransferBody(body); !refused("transfer", err) {
			roundTrip("transfer", req, func(b []byte) (any, error) { return decodeTransferBody(b) })
		}
		if req, err := decodeLeaseBody(body); !refused("lease", err) {
			lb := wire.LeaseBody{Holder: req.Holder, TTL: req.TTL.String(), Token: req.Token}
			roundTrip("lease", lb, func(b []byte) (any, error) {
				r, err := decodeLeaseBody(b)
				return wire.LeaseBody{Holder: r.Holder, TTL: r.TTL.String(), Token: r.Token}, err
			})
			if req.TTL < wire.MinLeaseTTL || req.TTL > wire.MaxLeaseTTL {
				t.Fatalf("lease body %q: ttl %v accepted", body, req.TTL)
			}
		}
	})
}

// is400 reports whether e's code has status 400.
func is400(e *wire.Error) bool {
	st, _ := wire.Status(e.Code)
	return st == 400
}
