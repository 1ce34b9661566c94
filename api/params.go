package api

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/txlog/txlog/api/wire"
)

// query is the parsed query string of a request. Every parameter is given at
// most once and is one the route knows.
type query []queryParam

// queryParam is one parameter of a query, unescaped.
type queryParam struct{ name, value string }

// parseQuery parses the query string of r, refusing malformed text, a
// parameter given twice and a parameter not in allowed: a typo such as
// "timout=1s" must not fall back to the default without a word.
func parseQuery(r *http.Request, allowed ...string) (query, error) {
	return parseRawQuery(r.URL.RawQuery, allowed...)
}

// parseRawQuery is parseQuery of the query text raw.
func parseRawQuery(raw string, allowed ...string) (query, error) {
	if q, ok := parsePlainQuery(raw, allowed); ok {
		return q, nil
	}
	v, err := url.ParseQuery(raw)
	if err != nil {
		return nil, &wire.Error{Code: wire.CodeInvalidParam, Message: fmt.Sprintf("query %q: %v", raw, err)}
	}
	names := make([]string, 0, len(v))
	for name := range v {
		names = append(names, name)
	}
	slices.Sort(names) // report the same problem for the same query every time
	q := make(query, 0, len(names))
	for _, name := range names {
		if !slices.Contains(allowed, name) {
			return nil, unknownParam(name, allowed)
		}
		if len(v[name]) > 1 {
			return nil, wire.New(wire.MsgParamRepeated, name, len(v[name]))
		}
		q = append(q, queryParam{name, v[name][0]})
	}
	return q, nil
}

// parsePlainQuery parses the common query, which url.ParseQuery would take as
// it is: no escapes ('%', '+'), no ';', every name allowed and given once. It
// reports false for any other, which parseRawQuery then parses (and refuses)
// the long way, so both ways give the same query and the same errors
// (FuzzParseRawQuery). The values are parts of raw.
func parsePlainQuery(raw string, allowed []string) (query, bool) {
	if raw == "" {
		return nil, true
	}
	if strings.ContainsAny(raw, "%+;") || strings.Count(raw, "&") >= 2*len(allowed)+2 {
		return nil, false // a long query has empty parts or a problem
	}
	q := make(query, 0, len(allowed))
	for rest := raw; rest != ""; {
		var part string
		part, rest, _ = strings.Cut(rest, "&")
		if part == "" {
			continue
		}
		name, value, _ := strings.Cut(part, "=")
		if !slices.Contains(allowed, name) || q.has(name) {
			return nil, false
		}
		q = append(q, queryParam{name, value})
	}
	return q, true
}

// has reports whether name is in q.
func (q query) has(name string) bool {
	_, ok := q.get(name)
	return ok
}

// get returns the value of name and whether it was given.
func (q query) get(name string) (string, bool) {
	for _, p := range q {
		if p.name == name {
			return p.value, true
		}
	}
	return "", false
}

// duration reads a Go duration ("250ms", "5s") of at most max. It must be
// positive, or with allowZero not negative; def is the value when name is absent.
func (q query) duration(name string, def, max time.Duration, allowZero bool) (time.Duration, error) {
	s, ok := q.get(name)
	if !ok {
		return def, nil
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return 0, wire.New(wire.MsgParamValue, name, s, "a duration such as 250ms or 5s")
	case d < 0 && allowZero:
		return 0, wire.New(wire.MsgParamValue, name, s, "a duration of 0 or more, such as 250ms or 5s")
	case d < 0 || (d == 0 && !allowZero):
		return 0, wire.New(wire.MsgParamValue, name, s, "a positive duration, such as 250ms or 5s")
	case d > max:
		return 0, wire.New(wire.MsgParamValue, name, s, fmt.Sprintf("a duration of at most %s", max))
	}
	return d, nil
}

// choice reads one of the values in allowed; absent gives allowed[0].
func (q query) choice(name string, allowed ...string) (string, error) {
	s, ok := q.get(name)
	if !ok {
		return allowed[0], nil
	}
	if !slices.Contains(allowed, s) {
		return "", wire.New(wire.MsgParamValue, name, s, "one of "+strings.Join(allowed, ", "))
	}
	return s, nil
}

// integer reads a decimal integer in [min, max]; absent gives def.
func (q query) integer(name string, def, min, max uint64) (uint64, error) {
	s, ok := q.get(name)
	if !ok {
		return def, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || v < min || v > max {
		return 0, wire.New(wire.MsgParamValue, name, s, fmt.Sprintf("an integer from %d to %d", min, max))
	}
	return v, nil
}

// submitOptions reads the timeout and ack parameters of a write.
func (a *answers) submitOptions(q query) (wire.SubmitOptions, error) {
	timeout, err := q.duration("timeout", a.cfg.DefaultTimeout, a.cfg.MaxTimeout, false)
	if err != nil {
		return wire.SubmitOptions{}, err
	}
	ack, err := q.choice("ack", wire.AckQuorum, wire.AckAll, wire.AckAccepted)
	if err != nil {
		return wire.SubmitOptions{}, err
	}
	return wire.SubmitOptions{Timeout: timeout, Ack: ack}, nil
}

// pathVar returns the unescaped path variable name. The router matches the
// escaped path, so the variable is still escaped.
func pathVar(r *http.Request, name string) (string, error) {
	v, err := url.PathUnescape(mux.Vars(r)[name])
	if err != nil {
		return "", &wire.Error{Code: wire.CodeInvalidParam, Message: fmt.Sprintf("path %s: %v", name, err)}
	}
	return v, nil
}

// paramError is err, from a check of value (decode.go's checkKey and the
// like), as the error of the query parameter name: it names the parameter,
// the value (its first maxEchoBytes) and what is wrong.
func paramError(name, value string, err error) error {
	fe, ok := errors.AsType[*fieldError](err)
	if !ok {
		return err
	}
	if len(value) > maxEchoBytes {
		value = value[:maxEchoBytes] + "…"
	}
	return wire.New(wire.MsgParamInvalid, name, value, wire.Text(fe.m, fe.parts...))
}

// maxEchoBytes bounds the part of a bad value an error message repeats.
const maxEchoBytes = 64

// unknownParam is the error of a parameter name the route does not take
// (allowed).
func unknownParam(name string, allowed []string) error {
	if len(allowed) == 0 {
		return wire.New(wire.MsgUnknownParamNone, name)
	}
	return wire.New(wire.MsgUnknownParam, name, strings.Join(allowed, ", "))
}
