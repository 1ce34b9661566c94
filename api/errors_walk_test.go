package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gorilla/mux"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/txid"
)

// walkRoute is one route of the router, as the walk finds it.
type walkRoute struct {
	tpl     string   // the path template, "/v1/kv/{key:.+}"
	path    string   // the template with each variable filled with a missing id
	ids     []string // those ids
	methods []string
}

// walkRoutes returns the routes of r, each path variable filled with an id
// that names nothing: the walk reads what is served, so that a route added
// later is walked without an edit here.
func walkRoutes(t *testing.T, r *mux.Router) []walkRoute {
	t.Helper()
	var out []walkRoute
	err := r.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		tpl, err := route.GetPathTemplate()
		if err != nil {
			return err
		}
		methods, err := route.GetMethods()
		if err != nil {
			return fmt.Errorf("route %s: %w", tpl, err)
		}
		wr := walkRoute{tpl: tpl, methods: methods}
		wr.path = pathVarName.ReplaceAllStringFunc(routeVar.ReplaceAllString(tpl, "{$1}"), func(v string) string {
			id := "no-such-" + strings.Trim(v, "{}")
			if v == "{txid}" {
				id = txid.ID(0xdead).String()
			}
			wr.ids = append(wr.ids, id)
			return id
		})
		out = append(out, wr)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// pathVarName matches a path variable as OpenAPI writes it, {key}.
var pathVarName = regexp.MustCompile(`\{[^}]+\}`)

// walkMethods are the methods the walk sends to every route.
var walkMethods = []string{"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"}

// walkAnswer is one answer of the walk.
type walkAnswer struct {
	method, target string
	status         int
	header         http.Header
	body           []byte
}

// send sends a request to h with a context already done: a request that is
// not refused ends at once (a stream or a long poll) instead of running.
func send(h http.Handler, method, target, body string) walkAnswer {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequestWithContext(ctx, method, target, strings.NewReader(body))
	req.Host = testHost
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return walkAnswer{method: method, target: target, status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

// peerAddr matches an IP address with a port, such as a peer's address.
var peerAddr = regexp.MustCompile(`\b\d{1,3}(\.\d{1,3}){3}:\d+\b`)

// errorProblems is the checker of one error answer: its problems, none when
// the body is {"error":{"code","message"}} with a code of wire's table whose
// status is the answer's, and a message that names at least one of causes
// (all of must), says no clause twice, and names no URL or address.
func errorProblems(a walkAnswer, causes, must []string) []string {
	where := a.method + " " + a.target
	var e struct {
		Error *wire.ErrorBody `json:"error"`
	}
	if err := json.Unmarshal(a.body, &e); err != nil || e.Error == nil || e.Error.Code == "" {
		return []string{fmt.Sprintf("%s = %d %q: not an error object", where, a.status, a.body)}
	}
	var out []string
	bad := func(format string, args ...any) {
		out = append(out, fmt.Sprintf("%s = %d %s: ", where, a.status, a.body)+fmt.Sprintf(format, args...))
	}
	if st, ok := wire.Status(e.Error.Code); !ok {
		bad("code %q is not in wire's table", e.Error.Code)
	} else if st != a.status {
		bad("code %q has status %d in wire's table", e.Error.Code, st)
	}
	msg := e.Error.Message
	if len(causes) > 0 && !slices.ContainsFunc(causes, func(c string) bool { return strings.Contains(msg, c) }) {
		bad("the message names none of %q", causes)
	}
	for _, m := range must {
		if !strings.Contains(msg, m) {
			bad("the message does not name %q", m)
		}
	}
	if r := repeated(msg); r != "" {
		bad("the message says %q twice", r)
	}
	if strings.Contains(msg, "http://") || strings.Contains(msg, "https://") || peerAddr.MatchString(msg) {
		bad("the message names a URL or an address")
	}
	return out
}

// repeated returns a clause (a part between ": " or "; "), a quoted value
// or a run of three words that msg says twice; "" when none.
func repeated(msg string) string {
	quoted := map[string]bool{}
	for _, q := range regexp.MustCompile(`"(\\.|[^"\\])*"`).FindAllString(msg, -1) {
		if quoted[q] {
			return q
		}
		quoted[q] = true
	}
	seen := map[string]bool{}
	for _, c := range regexp.MustCompile(`: |; `).Split(msg, -1) {
		c = strings.TrimSpace(c)
		if c != "" && seen[c] {
			return c
		}
		seen[c] = true
	}
	words := strings.Fields(msg)
	runs := map[string]bool{}
	for i := 0; i+3 <= len(words); i++ {
		run := strings.Trim(strings.Join(words[i:i+3], " "), ":;,")
		if runs[run] {
			return run
		}
		runs[run] = true
	}
	return ""
}

// takes returns the parameters a route takes, as its answer to an unknown
// one names them ("this route takes: a, b").
func takes(a walkAnswer) []string {
	var e struct {
		Error wire.ErrorBody `json:"error"`
	}
	json.Unmarshal(a.body, &e)
	_, list, ok := strings.Cut(e.Error.Message, "this route takes: ")
	if !ok {
		return nil
	}
	return strings.Split(list, ", ")
}

// walkErrors sends bad input to every route of h's router and returns the
// problems of the error answers, and how many routes refused an unknown
// parameter.
func walkErrors(t *testing.T, h http.Handler, routes []walkRoute) (problems []string, refusedUnknown int) {
	checked := map[int]int{}
	defer func() { t.Logf("error answers checked, by status: %v", checked) }()
	check := func(a walkAnswer, causes, must []string) {
		if a.status == http.StatusUnauthorized || a.status == http.StatusForbidden {
			// The credential is the cause, whatever else is wrong.
			causes, must = []string{"credential"}, nil
		}
		if a.status >= 400 && a.status < 500 {
			checked[a.status]++
			if testing.Verbose() && a.status != 405 {
				t.Logf("%s %s = %d %s", a.method, a.target, a.status, a.body)
			}
			problems = append(problems, errorProblems(a, causes, must)...)
		}
	}
	for _, rt := range routes {
		for _, m := range rt.methods {
			// An unknown parameter.
			a := send(h, m, rt.path+"?bogus=1", "")
			if a.status == http.StatusBadRequest {
				refusedUnknown++
				check(a, nil, []string{`unknown parameter "bogus"`})
			}
			params := takes(a)
			// Each parameter it takes, with bad values.
			for _, p := range params {
				for _, v := range []string{"-1", "bogus", "", "99999999999999999999999"} {
					// Sent without a body: a POST or PUT may name that first.
					check(send(h, m, rt.path+"?"+p+"="+url.QueryEscape(v), ""), append([]string{p, fmt.Sprintf("%q", v), "body"}, params...), nil)
				}
				check(send(h, m, rt.path+"?"+p+"=1&"+p+"=2", ""), nil, []string{fmt.Sprintf("%q", p)})
				check(send(h, m, rt.path+"?"+p+"=%zz", ""), nil, []string{"%zz"})
			}
			// Each id of the path too long to be one (and no txid).
			for i, id := range rt.ids {
				long := strings.Repeat("x", 300)
				a := send(h, m, strings.Replace(rt.path, id, long, 1), "")
				name := strings.Trim(pathVarName.FindAllString(routeVar.ReplaceAllString(rt.tpl, "{$1}"), -1)[i], "{}")
				check(a, append([]string{name, long, "body"}, params...), nil)
			}
			// The ids of the path, which name nothing.
			if len(rt.ids) > 0 {
				a := send(h, m, rt.path, "")
				if a.status == http.StatusNotFound {
					check(a, rt.ids, nil)
				} else {
					check(a, append(slices.Concat(rt.ids, []string{"body"}), params...), nil)
				}
			}
			// A bad body.
			if m == "POST" || m == "PUT" {
				for _, body := range []string{`{"bad`, `[]`, `{"unknown_field":1}`} {
					check(send(h, m, rt.path, body), append([]string{"body", "JSON", "json", "unknown_field"}, params...), nil)
				}
			}
		}
		// Every method the route does not take.
		for _, m := range walkMethods {
			if slices.Contains(rt.methods, m) {
				continue
			}
			a := send(h, m, rt.path, "")
			if a.status != http.StatusMethodNotAllowed {
				continue // another route of the path takes it
			}
			check(a, nil, []string{m, rt.path})
			allow := a.header.Get("Allow")
			if allow == "" {
				problems = append(problems, fmt.Sprintf("%s %s = 405 without Allow", m, rt.path))
			}
			for am := range strings.SplitSeq(allow, ", ") {
				if b := send(h, am, rt.path, ""); b.status == http.StatusMethodNotAllowed {
					problems = append(problems, fmt.Sprintf("%s %s: Allow: %s, but %s is 405 too", m, rt.path, allow, am))
				}
			}
			for _, rm := range rt.methods {
				if !strings.Contains(allow, rm) {
					problems = append(problems, fmt.Sprintf("%s %s: Allow: %s, without %s", m, rt.path, allow, rm))
				}
			}
		}
	}
	// A path no route serves.
	check(send(h, "GET", "/v1/nope", ""), nil, []string{"GET /v1/nope"})
	return problems, refusedUnknown
}

// walkServer is a server over a backend that knows nothing by the walk's
// ids and answers its lookups with the bare wire.ErrNotFound: the handlers
// name what is missing. With auth, it takes testAuth's credentials.
func walkServer(auth bool) *Server {
	w := newWorld()
	b := &w.memLog.fakeBackend
	b.GetFunc = func(context.Context, string, wire.ReadOptions) (wire.KV, error) { return wire.KV{}, wire.ErrNotFound }
	b.RemoveFunc = func(context.Context, string) error { return wire.ErrNotFound }
	return NewServer(worldConfig(auth, nil), w)
}

// withToken returns h with the Bearer token on every request ("": none).
func withToken(h http.Handler, token string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		h.ServeHTTP(w, r)
	})
}

// TestErrorWalk: every route of the router (walked, not listed), sent an
// unknown parameter, bad values of each parameter it takes, ids that name
// nothing, a bad body and every method it does not take, answers each with
// an error that names its cause (errorProblems), and a 405 with Allow;
// with auth off, with auth on and an admin's token, and with a reader's
// and no token (401s and 403s checked as the rest).
func TestErrorWalk(t *testing.T) {
	for _, tc := range []struct {
		name  string
		auth  bool
		token string
		// minRefused is the least number of routes that must refuse an
		// unknown parameter: every JSON route, when the credential reaches it.
		minRefused int
	}{
		{"auth off", false, "", 20},
		{"admin", true, "admin", 20},
		{"reader", true, "read", 10},
		{"scoped admin", true, "admal", 10},
		{"no credential", true, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := walkServer(tc.auth)
			routes := walkRoutes(t, srv.router)
			if len(routes) < 20 {
				t.Fatalf("the walk found %d routes: %v", len(routes), routes)
			}
			problems, refused := walkErrors(t, withToken(srv, tc.token), routes)
			for _, p := range problems {
				t.Error(p)
			}
			if refused < tc.minRefused {
				t.Errorf("%d routes refused an unknown parameter, want %d or more", refused, tc.minRefused)
			}
		})
	}
	t.Run("peer link", func(t *testing.T) {
		srv := walkServer(false)
		problems, refused := walkErrors(t, srv.PeerHandler(), walkRoutes(t, srv.peerRouter))
		for _, p := range problems {
			t.Error(p)
		}
		if refused < 21 {
			t.Errorf("%d routes refused an unknown parameter, want 21 or more (the internal one too)", refused)
		}
	})
}

// TestErrorCheckerCatches: the walk's checker fails the answers this issue
// was about, and passes a good one.
func TestErrorCheckerCatches(t *testing.T) {
	answer := func(status int, code, msg string) walkAnswer {
		b, _ := json.Marshal(errorAnswer{Error: wire.ErrorBody{Code: code, Message: msg}})
		return walkAnswer{method: "GET", target: "/x", status: status, body: b}
	}
	for _, tc := range []struct {
		name   string
		a      walkAnswer
		causes []string
		bad    bool
	}{
		{"good", answer(404, wire.CodeNotFound, `consumer group "nogroup" has no committed offset`), []string{`"nogroup"`}, false},
		{"repeats itself", answer(404, wire.CodeNotFound, `consumer group "nogroup": not found: consumer group "nogroup": no committed offset`), []string{`"nogroup"`}, true},
		{"says a value twice", answer(400, wire.CodeInvalidParam, `path txid "zzz": invalid txid "zzz": length 3, want 13`), nil, true},
		{"names no id", answer(404, wire.CodeNotFound, "not found"), []string{`"k"`}, true},
		{"internal URL", answer(504, wire.CodeTimeout, `peer 127.0.0.1:7001: Post "http://127.0.0.1:7001/v1/cluster/transfer-leadership": context deadline exceeded`), nil, true},
		{"peer address", answer(503, wire.CodeNoLeader, `leader at 10.0.0.2:7001 did not answer`), nil, true},
		{"code not in table", answer(400, "oops", `parameter wait="x": want a duration`), nil, true},
		{"status not the code's", answer(500, wire.CodeInvalidParam, `parameter wait="x": want a duration`), nil, true},
		{"not JSON", walkAnswer{method: "GET", target: "/x", status: 404, body: []byte("404 page not found")}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := errorProblems(tc.a, tc.causes, nil)
			if (len(p) > 0) != tc.bad {
				t.Fatalf("errorProblems(%s) = %q, want problems: %v", tc.a.body, p, tc.bad)
			}
		})
	}
	// The walk itself fails a router whose 405 has no Allow and whose 404
	// names no id.
	r := mux.NewRouter()
	r.Handle("/v1/things/{id}", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(404)
		w.Write([]byte(`{"error":{"code":"not_found","message":"not found"}}`))
	})).Methods("GET")
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(405)
		w.Write([]byte(`{"error":{"code":"method_not_allowed","message":"not allowed"}}`))
	})
	problems, _ := walkErrors(t, r, walkRoutes(t, r))
	var noAllow, noID bool
	for _, p := range problems {
		noAllow = noAllow || strings.Contains(p, "without Allow")
		noID = noID || strings.Contains(p, "names none of")
	}
	if !noAllow || !noID {
		t.Fatalf("walk of a bad router: %q; want a 405 without Allow and a 404 naming no id", problems)
	}
}
