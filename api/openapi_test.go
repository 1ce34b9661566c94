package api

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gorilla/mux"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	verrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/docs"
	"github.com/txlog/txlog/internal/docexec"
)

// The OpenAPI document (docs/openapi.yaml) is checked four ways here: its
// paths and methods against the router's routes (both ways), the document
// against the OpenAPI 3.1 specification, the examples of docs/api.md
// against its schemas, and the answers of a Server over the fake backend
// against the schemas of their status. Each checker has a test that feeds
// it a bad case and sees it fail.
//
// The validator is pb33f's libopenapi and libopenapi-validator: they read
// OpenAPI 3.1 whole (JSON Schema 2020-12: const, if/then, type lists,
// unevaluatedProperties) and validate a document against the OpenAPI
// specification's own JSON Schema; kin-openapi's 3.1 support is partial
// (its README still says "soon").

// spec is the parsed OpenAPI document: the JSON tree for walking it, and
// libopenapi's model for validating values against its schemas.
type spec struct {
	tree  map[string]any
	model *v3.Document
	doc   libopenapi.Document
	sv    schema_validation.SchemaValidator
}

// loadSpec parses the JSON form of the document.
func loadSpec(t *testing.T, b []byte) *spec {
	t.Helper()
	s, err := parseSpec(b)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func parseSpec(b []byte) (*spec, error) {
	var tree map[string]any
	if err := json.Unmarshal(b, &tree); err != nil {
		return nil, fmt.Errorf("openapi json: %w", err)
	}
	doc, err := libopenapi.NewDocument(b)
	if err != nil {
		return nil, fmt.Errorf("libopenapi: %w", err)
	}
	m, err := doc.BuildV3Model()
	if err != nil {
		return nil, fmt.Errorf("libopenapi model: %w", err)
	}
	return &spec{tree: tree, model: &m.Model, doc: doc, sv: schema_validation.NewSchemaValidator()}, nil
}

// servedSpec is the document as api serves it.
func servedSpec(t *testing.T) []byte {
	t.Helper()
	b, err := openAPIJSON()
	if err != nil {
		t.Fatalf("openAPIJSON: %v", err)
	}
	return b
}

// httpMethods are the methods an OpenAPI path item may have.
var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// operations returns the document's operations by "METHOD /path".
func (s *spec) operations() map[string]map[string]any {
	out := map[string]map[string]any{}
	paths, _ := s.tree["paths"].(map[string]any)
	for p, item := range paths {
		item, _ := item.(map[string]any)
		for _, m := range httpMethods {
			if op, ok := item[m].(map[string]any); ok {
				out[strings.ToUpper(m)+" "+p] = op
			}
		}
	}
	return out
}

// routeVar matches a path variable of a gorilla/mux template with its
// pattern, {key:.+}: OpenAPI names it {key}.
var routeVar = regexp.MustCompile(`\{([^}:]+):[^}]*\}`)

// routerOperations returns the routes of r by "METHOD /path", the path as
// OpenAPI writes it.
func routerOperations(t *testing.T, r *mux.Router) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, wr := range walkRoutes(t, r) {
		for _, m := range wr.methods {
			out[m+" "+routeVar.ReplaceAllString(wr.tpl, "{$1}")] = true
		}
	}
	return out
}

// checkRoutes returns what differs between the document's operations and
// the router's routes: a route the document does not describe, or an
// operation no route serves.
func checkRoutes(s *spec, routes map[string]bool) []string {
	var out []string
	ops := s.operations()
	for r := range routes {
		if _, ok := ops[r]; !ok {
			out = append(out, fmt.Sprintf("route %s is not in docs/openapi.yaml", r))
		}
	}
	for op := range ops {
		if !routes[op] {
			out = append(out, fmt.Sprintf("docs/openapi.yaml names %s, which no route serves", op))
		}
	}
	slices.Sort(out)
	return out
}

// fullServer is a Server with every optional route: leases, consumer
// groups, the dashboard and /metrics (worldConfig), with auth on or off.
func fullServer(on bool) *Server { return NewServer(worldConfig(on, nil), newWorld()) }

// TestOpenAPIRoutes: every route of the client port is in the document,
// and the document names no route the client port does not serve (the
// peer link's /v1/internal/propose included).
func TestOpenAPIRoutes(t *testing.T) {
	s := loadSpec(t, servedSpec(t))
	srv := fullServer(true)
	routes := routerOperations(t, srv.router)
	if len(routes) < 25 {
		t.Fatalf("the router has %d routes: %v; the walk missed some", len(routes), routes)
	}
	if p := checkRoutes(s, routes); len(p) > 0 {
		t.Fatalf("docs/openapi.yaml and the routes differ:\n%s", strings.Join(p, "\n"))
	}
	// The peer link's router has the internal route too, and the check
	// sees it: the walk reads what is served, not a list.
	peer := routerOperations(t, srv.peerRouter)
	want := []string{"route POST /v1/internal/propose is not in docs/openapi.yaml", "route POST /v1/internal/range is not in docs/openapi.yaml"}
	if p := checkRoutes(s, peer); !slices.Equal(p, want) {
		t.Fatalf("checkRoutes(peer routes) = %q, want %q", p, want)
	}
}

// TestOpenAPIRoutesMutated: the route check fails on a document with a
// route removed, a method changed, or a path no route serves.
func TestOpenAPIRoutesMutated(t *testing.T) {
	routes := routerOperations(t, fullServer(false).router)
	tests := []struct {
		name   string
		mutate func(paths map[string]any)
		want   string
	}{
		{"route removed", func(p map[string]any) { delete(p, "/v1/log/stream") }, "route GET /v1/log/stream is not in"},
		{"method removed", func(p map[string]any) { delete(p["/v1/leases/{name}"].(map[string]any), "delete") }, "route DELETE /v1/leases/{name} is not in"},
		{"method changed", func(p map[string]any) {
			item := p["/v1/cluster/join"].(map[string]any)
			item["put"] = item["post"]
			delete(item, "post")
		}, "names PUT /v1/cluster/join, which no route serves"},
		{"path renamed", func(p map[string]any) {
			p["/v1/kv/{name}"] = p["/v1/kv/{key}"]
			delete(p, "/v1/kv/{key}")
		}, "names GET /v1/kv/{name}, which no route serves"},
		{"internal route", func(p map[string]any) {
			p["/v1/internal/propose"] = map[string]any{"post": map[string]any{"responses": map[string]any{}}}
		}, "names POST /v1/internal/propose, which no route serves"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tree map[string]any
			if err := json.Unmarshal(servedSpec(t), &tree); err != nil {
				t.Fatal(err)
			}
			tt.mutate(tree["paths"].(map[string]any))
			p := checkRoutes(&spec{tree: tree}, routes)
			if !slices.ContainsFunc(p, func(s string) bool { return strings.Contains(s, tt.want) }) {
				t.Fatalf("checkRoutes = %q, want a problem with %q", p, tt.want)
			}
		})
	}
}

// validateDocument validates b against the OpenAPI specification.
func validateDocument(b []byte) error {
	doc, err := libopenapi.NewDocument(b)
	if err != nil {
		return err
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if ok, verrs := v.ValidateDocument(); !ok || len(verrs) > 0 {
		return validationErrors(verrs)
	}
	if _, err := doc.BuildV3Model(); err != nil {
		return fmt.Errorf("build model: %w", err)
	}
	return nil
}

// validationErrors joins libopenapi-validator's errors into one.
func validationErrors[E error](errs []E) error {
	var out []error
	for _, e := range errs {
		out = append(out, e)
	}
	if len(out) == 0 {
		return errors.New("invalid, without a reason")
	}
	return errors.Join(out...)
}

// TestOpenAPIDocument: the document is OpenAPI 3.1 as its specification's
// schema says; one that breaks it is refused.
func TestOpenAPIDocument(t *testing.T) {
	b := servedSpec(t)
	if err := validateDocument(b); err != nil {
		t.Fatalf("docs/openapi.yaml: %v", err)
	}
	s := loadSpec(t, b)
	if v := s.tree["openapi"]; v != "3.1.0" {
		t.Fatalf("openapi = %v, want 3.1.0", v)
	}
	for _, tt := range []struct{ name, from, to string }{
		{"unknown operation field", `"operationId":"health","responses":`, `"operationId":"health","responsez":`},
		{"bad version", `"openapi":"3.1.0"`, `"openapi":"three"`},
		{"path without slash", `"/healthz":`, `"healthz":`},
		{"bad parameter location", `"in":"query"`, `"in":"body"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bad := bytes.Replace(b, []byte(tt.from), []byte(tt.to), 1)
			if bytes.Equal(bad, b) {
				t.Fatalf("%q is not in the document", tt.from)
			}
			if err := validateDocument(bad); err == nil {
				t.Fatal("validateDocument accepted it")
			}
		})
	}
}

// TestOpenAPIServed: GET /v1/openapi.json answers the document, converted
// from docs/openapi.yaml, to a reader (a stranger gets 401 with auth on),
// and refuses query parameters.
func TestOpenAPIServed(t *testing.T) {
	srv := fullServer(true)
	rec := ask(t, srv, "GET", OpenAPIPath, "", "read")
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET %s = %d %q", OpenAPIPath, rec.Code, rec.Header().Get("Content-Type"))
	}
	var served, fromYAML any
	if err := json.Unmarshal(rec.Body.Bytes(), &served); err != nil {
		t.Fatalf("answer: %v", err)
	}
	b, err := yamlToJSON(docs.OpenAPIYAML)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &fromYAML); err != nil {
		t.Fatal(err)
	}
	if !jsonEqual(served, fromYAML) {
		t.Fatal("the served document is not docs/openapi.yaml")
	}
	if rec := ask(t, srv, "GET", OpenAPIPath, "", ""); rec.Code != 401 {
		t.Fatalf("GET %s without a credential = %d, want 401", OpenAPIPath, rec.Code)
	}
	if rec := ask(t, srv, "GET", OpenAPIPath+"?x=1", "", "read"); rec.Code != 400 || errorOf(t, rec).Code != wire.CodeInvalidParam {
		t.Fatalf("GET %s?x=1 = %d %s, want 400 invalid_parameter", OpenAPIPath, rec.Code, rec.Body)
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// TestYAMLToJSON: the conversion takes unquoted numeric keys and aliases,
// and refuses what JSON cannot hold rather than serve it changed.
func TestYAMLToJSON(t *testing.T) {
	for _, tt := range []struct{ in, want, err string }{
		{"a: 1\nb: [x, 'y']\n", `{"a":1,"b":["x","y"]}`, ""},
		{"200: ok\n", `{"200":"ok"}`, ""},
		{"a: &x {k: v}\nb: *x\n", `{"a":{"k":"v"},"b":{"k":"v"}}`, ""},
		{"at: 2026-12-02T12:40:45Z\n", "", "has no JSON form"},
		{"a: [\n", "", "parse yaml"},
		{"a: .inf\n", "", "unsupported value"},
	} {
		got, err := yamlToJSON([]byte(tt.in))
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("yamlToJSON(%q) = %s, %v; want an error with %q", tt.in, got, err, tt.err)
		case tt.err == "" && (err != nil || string(got) != tt.want):
			t.Errorf("yamlToJSON(%q) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}

// ---- the schemas ----

// schemaOf returns the schema a tag names: "schema NAME" (a component),
// "METHOD /path request" (the request body's) or "METHOD /path STATUS" (the
// answer's, application/json).
func (s *spec) schemaOf(tag string) (*base.Schema, error) {
	f := strings.Fields(tag)
	if len(f) == 2 && f[0] == "schema" {
		p, ok := s.model.Components.Schemas.Get(f[1])
		if !ok {
			return nil, fmt.Errorf("no schema %s", f[1])
		}
		return p.Schema(), nil
	}
	if len(f) != 3 {
		return nil, fmt.Errorf("tag %q: want schema NAME, METHOD /path request or METHOD /path STATUS", tag)
	}
	op, err := s.operation(f[0], f[1])
	if err != nil {
		return nil, err
	}
	var content interface {
		Get(string) (*v3.MediaType, bool)
	}
	if f[2] == "request" {
		if op.RequestBody == nil {
			return nil, fmt.Errorf("%s %s has no request body", f[0], f[1])
		}
		content = op.RequestBody.Content
	} else {
		r, ok := op.Responses.Codes.Get(f[2])
		if !ok {
			return nil, fmt.Errorf("%s %s has no answer %s", f[0], f[1], f[2])
		}
		content = r.Content
	}
	mt, ok := content.Get("application/json")
	if !ok || mt.Schema == nil {
		return nil, fmt.Errorf("%s: no application/json schema", tag)
	}
	return mt.Schema.Schema(), nil
}

// operation returns the operation of method on the path template path.
func (s *spec) operation(method, path string) (*v3.Operation, error) {
	item, ok := s.model.Paths.PathItems.Get(path)
	if !ok {
		return nil, fmt.Errorf("no path %s", path)
	}
	op, ok := item.GetOperations().Get(strings.ToLower(method))
	if !ok {
		return nil, fmt.Errorf("no operation %s %s", method, path)
	}
	return op, nil
}

// validate checks the JSON value b against the schema tag names.
func (s *spec) validate(tag string, b []byte) error {
	sch, err := s.schemaOf(tag)
	if err != nil {
		return err
	}
	if !json.Valid(b) {
		return fmt.Errorf("not one JSON value: %s", b)
	}
	if ok, errs := s.sv.ValidateSchemaBytes(sch, b); !ok {
		return schemaErrors(errs)
	}
	return nil
}

// schemaErrors words libopenapi-validator's errors, with the field and
// reason of each schema failure.
func schemaErrors(errs []*verrors.ValidationError) error {
	var out []string
	for _, e := range errs {
		out = append(out, e.Message)
		for _, f := range e.SchemaValidationErrors {
			out = append(out, fmt.Sprintf("  %s: %s", f.FieldPath, f.Reason))
		}
	}
	if len(out) == 0 {
		return errors.New("invalid, without a reason")
	}
	return errors.New(strings.Join(out, "\n"))
}

// matchPath returns the path template of the document that serves the
// concrete path p for method: the one with the most literal text, a
// variable spanning one segment or more ("/" included), as the router's
// {key:.+} does.
func (s *spec) matchPath(method, p string) (string, bool) {
	best, bestLit := "", -1
	for key := range s.operations() {
		m, tpl, _ := strings.Cut(key, " ")
		if m != method {
			continue
		}
		re := "^" + regexp.MustCompile(`\\\{[^}]*\\\}`).ReplaceAllString(regexp.QuoteMeta(tpl), `[^?#]+`)
		if strings.HasSuffix(tpl, "/") {
			re += ".*" // /ui/ serves the files under it too
		}
		re += "$"
		lit := len(regexp.MustCompile(`\{[^}]*\}`).ReplaceAllString(tpl, ""))
		if regexp.MustCompile(re).MatchString(p) && lit > bestLit {
			best, bestLit = tpl, lit
		}
	}
	return best, bestLit >= 0
}

// ---- roles and codes ----

// roleOfNeed is the x-txlog-role of each need of allRoutes (authz_test.go).
var roleOfNeed = map[string]string{"open": "none", "read": "read", "write": "write", "admin": "admin"}

// TestOpenAPIRoles: each operation's x-txlog-role is the role
// TestAuthRoleMatrix finds the route asking for (allRoutes), every
// operation is one that matrix asks, and its security says the same: none
// for the open routes, Basic only on a GET.
func TestOpenAPIRoles(t *testing.T) {
	s := loadSpec(t, servedSpec(t))
	ops := s.operations()
	asked := map[string]bool{}
	for _, rt := range allRoutes {
		if rt.need == "any" {
			continue
		}
		p, _, _ := strings.Cut(rt.target, "?")
		tpl, ok := s.matchPath(rt.method, p)
		if !ok {
			t.Errorf("%s %s: no operation in docs/openapi.yaml", rt.method, rt.target)
			continue
		}
		key := rt.method + " " + tpl
		asked[key] = true
		if got := ops[key]["x-txlog-role"]; got != roleOfNeed[rt.need] {
			t.Errorf("%s: x-txlog-role %v, want %s (the route asks %s)", key, got, roleOfNeed[rt.need], rt.need)
		}
	}
	for key, op := range ops {
		if !asked[key] {
			t.Errorf("%s: no request of allRoutes (authz_test.go) asks it, so its x-txlog-role is unchecked", key)
		}
		if err := checkSecurity(s, key, op); err != nil {
			t.Error(err)
		}
	}
}

// checkSecurity checks the security of the operation key against its role.
func checkSecurity(s *spec, key string, op map[string]any) error {
	sec, ok := op["security"].([]any)
	if !ok {
		sec, _ = s.tree["security"].([]any)
	}
	var schemes []string
	optional := false
	for _, r := range sec {
		r, _ := r.(map[string]any)
		if len(r) == 0 {
			optional = true
		}
		for name := range r {
			schemes = append(schemes, name)
		}
	}
	slices.Sort(schemes)
	role := op["x-txlog-role"]
	get := strings.HasPrefix(key, "GET ") && key != "GET "+wire.TxStreamPath // a stream writes: no Basic
	switch {
	case role == "none":
		if len(schemes) > 0 {
			return fmt.Errorf("%s: role none, but security %v", key, schemes)
		}
	case role != "read" && role != "write" && role != "admin":
		return fmt.Errorf("%s: x-txlog-role %v, want none, read, write or admin", key, role)
	case get && !slices.Equal(schemes, []string{"basicAuth", "bearerAuth", "mutualTLS"}):
		return fmt.Errorf("%s: security %v, want basicAuth, bearerAuth and mutualTLS", key, schemes)
	case !get && !slices.Equal(schemes, []string{"bearerAuth", "mutualTLS"}):
		return fmt.Errorf("%s: security %v, want bearerAuth and mutualTLS (Basic never authorizes a write)", key, schemes)
	case optional && key != "GET /metrics" && key != "GET /ui/" && key != "GET /":
		return fmt.Errorf("%s: security may be empty, but only /metrics, /ui/ and / (its redirect) may be opened", key)
	}
	return nil
}

// TestOpenAPICodes: every code a response lists (x-txlog-codes) has that
// response's status in wire's code table, every error response lists its
// codes, and ErrorCode is the code table of docs/api.md, which is wire's.
func TestOpenAPICodes(t *testing.T) {
	s := loadSpec(t, servedSpec(t))
	if p := checkCodes(s); len(p) > 0 {
		t.Fatalf("docs/openapi.yaml:\n%s", strings.Join(p, "\n"))
	}
	enum := codeEnum(s)
	table := docCodes(t)
	if !slices.Equal(enum, table) {
		t.Fatalf("ErrorCode enum %v\nis not the table of docs/api.md %v", enum, table)
	}
	bad := loadSpec(t, bytes.Replace(servedSpec(t), []byte(`"x-txlog-codes":["lease_held","fenced"]`), []byte(`"x-txlog-codes":["lease_held","not_found"]`), 1))
	if p := checkCodes(bad); len(p) != 1 || !strings.Contains(p[0], "not_found is 404") {
		t.Fatalf("checkCodes(a 409 listing not_found) = %q, want one problem", p)
	}
}

// codeEnum returns the ErrorCode enum, sorted.
func codeEnum(s *spec) []string {
	sch := s.tree["components"].(map[string]any)["schemas"].(map[string]any)["ErrorCode"].(map[string]any)
	var out []string
	for _, c := range sch["enum"].([]any) {
		out = append(out, c.(string))
	}
	slices.Sort(out)
	return out
}

// checkCodes returns the error responses whose codes do not have their
// status in wire's code table, or that list none.
func checkCodes(s *spec) []string {
	var out []string
	enum := codeEnum(s)
	check := func(where, status string, resp map[string]any) {
		n, err := strconv.Atoi(status)
		if err != nil || n < 400 {
			return
		}
		codes, _ := resp["x-txlog-codes"].([]any)
		if len(codes) == 0 {
			out = append(out, fmt.Sprintf("%s %s: no x-txlog-codes", where, status))
		}
		for _, c := range codes {
			c, _ := c.(string)
			got, ok := wire.Status(c)
			switch {
			case !ok:
				out = append(out, fmt.Sprintf("%s %s: %s is not a wire code", where, status, c))
			case got != n:
				out = append(out, fmt.Sprintf("%s %s: %s is %d", where, status, c, got))
			case !slices.Contains(enum, c):
				out = append(out, fmt.Sprintf("%s %s: %s is not in ErrorCode", where, status, c))
			}
		}
	}
	for key, op := range s.operations() {
		rs, _ := op["responses"].(map[string]any)
		for status, r := range rs {
			r, _ := r.(map[string]any)
			if _, ref := r["$ref"]; ref {
				continue // a component, checked below
			}
			check(key, status, r)
		}
	}
	comps, _ := s.tree["components"].(map[string]any)["responses"].(map[string]any)
	for name, r := range comps {
		r := r.(map[string]any)
		codes, _ := r["x-txlog-codes"].([]any)
		for _, c := range codes {
			if st, ok := wire.Status(c.(string)); ok {
				check("components/responses/"+name, strconv.Itoa(st), r)
				break
			}
		}
		if len(codes) == 0 {
			out = append(out, fmt.Sprintf("components/responses/%s: no x-txlog-codes", name))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// docCodes returns the codes of the error code table of docs/api.md,
// checking each row's status against wire's table.
func docCodes(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z0-9_]+)` \\| ([0-9]{3}) \\|")
	var out []string
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		st, ok := wire.Status(m[1])
		if !ok || strconv.Itoa(st) != m[2] {
			t.Errorf("docs/api.md: code %s with status %s; wire says %d (known %v)", m[1], m[2], st, ok)
		}
		out = append(out, m[1])
	}
	slices.Sort(out)
	if len(out) < 30 {
		t.Fatalf("docs/api.md: found %d codes in its table, want them all", len(out))
	}
	return out
}

// ---- the examples of docs/api.md ----

// example is one JSON example of docs/api.md, or the request of a curl
// example.
type example struct {
	line int
	tag  string // what it is: a schemaOf tag
	body []byte
}

// tagLine is the comment that says what the JSON block after it is.
var tagLine = regexp.MustCompile(`^\s*<!-- openapi: (.+?) -->\s*$`)

// jsonExamples returns the ```json blocks of md, each with the tag on the
// line before it; a block without one is an error, so that a new example
// cannot go unchecked.
func jsonExamples(md []byte) ([]example, error) {
	var out []example
	var errs []error
	var cur *example
	prev := ""
	sc := bufio.NewScanner(bytes.NewReader(md))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case cur != nil && trimmed == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.body = append(append(cur.body, line...), '\n')
		case trimmed == "```json":
			m := tagLine.FindStringSubmatch(prev)
			if m == nil {
				errs = append(errs, fmt.Errorf("docs/api.md:%d: a json block without <!-- openapi: ... --> before it", n))
				m = []string{"", ""}
			}
			cur = &example{line: n, tag: m[1]}
		}
		if trimmed != "" {
			prev = line
		}
	}
	return out, errors.Join(errs...)
}

// checkExamples validates md's JSON examples against the schemas their
// tags name, and its curl examples' paths, parameters and bodies against
// the operations they ask.
func checkExamples(s *spec, md []byte) error {
	exs, err := jsonExamples(md)
	errs := []error{err}
	for _, ex := range exs {
		if strings.HasPrefix(ex.tag, "skip") {
			continue
		}
		if err := s.validate(ex.tag, ex.body); err != nil {
			errs = append(errs, fmt.Errorf("docs/api.md:%d (%s): %w", ex.line, ex.tag, err))
		}
	}
	curls, err := curlExamples(md)
	errs = append(errs, err)
	for _, c := range curls {
		if err := s.checkCurl(c); err != nil {
			errs = append(errs, fmt.Errorf("docs/api.md:%d (%s %s): %w", c.Line, c.Method, c.Target, err))
		}
	}
	return errors.Join(errs...)
}

// curlExamples returns the curl examples of md as docexec reads them for
// running (systemtest's TestDocsExecuted), so that the examples checked
// here are the ones that run. A skipped example is checked too when its
// command could be read: it cannot run, but it still asks an operation.
func curlExamples(md []byte) ([]docexec.Example, error) {
	exs, err := docexec.Parse("docs/api.md", md)
	return slices.DeleteFunc(exs, func(e docexec.Example) bool {
		return e.Skip != "" && (e.Method == "" || e.Target == "")
	}), err
}

// checkCurl checks a curl example against the document: its operation
// exists, each query parameter and header it sets is one of the
// operation's with a value its schema takes, and its body is one the
// request body's schema takes.
func (s *spec) checkCurl(c docexec.Example) error {
	p, rawQuery, _ := strings.Cut(c.Target, "?")
	tpl, ok := s.matchPath(c.Method, p)
	if !ok {
		return fmt.Errorf("no operation serves it")
	}
	op, err := s.operation(c.Method, tpl)
	if err != nil {
		return err
	}
	item, _ := s.model.Paths.PathItems.Get(tpl)
	params := append(slices.Clone(item.Parameters), op.Parameters...)
	find := func(in, name string) *v3.Parameter {
		for _, prm := range params {
			if prm.In == in && strings.EqualFold(prm.Name, name) {
				return prm
			}
		}
		return nil
	}
	var errs []error
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return err
	}
	checkParam := func(in, name, value string) {
		prm := find(in, name)
		if prm == nil {
			errs = append(errs, fmt.Errorf("%s parameter %s: not one of %s %s's", in, name, c.Method, tpl))
			return
		}
		v := strconv.Quote(value)
		if _, err := strconv.ParseUint(value, 10, 64); err == nil && slices.Contains(prm.Schema.Schema().Type, "integer") {
			v = value
		}
		if ok, verrs := s.sv.ValidateSchemaString(prm.Schema.Schema(), v); !ok {
			errs = append(errs, fmt.Errorf("%s parameter %s=%s: %w", in, name, value, schemaErrors(verrs)))
		}
	}
	for name, vs := range q {
		checkParam("query", name, vs[0])
	}
	for name, vs := range c.Header {
		if name == "Authorization" {
			continue // the security schemes' (OpenAPI ignores it as a parameter)
		}
		checkParam("header", name, vs[0])
	}
	if c.Body != "" {
		if err := s.validate(c.Method+" "+tpl+" request", []byte(c.Body)); err != nil {
			errs = append(errs, fmt.Errorf("body: %w", err))
		}
	}
	return errors.Join(errs...)
}

// TestOpenAPIDocExamples: every JSON example of docs/api.md is valid by
// the schema its tag names, and every curl example asks an operation of
// the document with parameters and a body it takes.
func TestOpenAPIDocExamples(t *testing.T) {
	s := loadSpec(t, servedSpec(t))
	md, err := os.ReadFile("../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	exs, err := jsonExamples(md)
	if err != nil {
		t.Fatal(err)
	}
	curls, err := curlExamples(md)
	if err != nil {
		t.Fatal(err)
	}
	if len(exs) < 20 || len(curls) < 10 {
		t.Fatalf("found %d JSON and %d curl examples in docs/api.md; the parsers missed some", len(exs), len(curls))
	}
	if err := checkExamples(s, md); err != nil {
		t.Fatal(err)
	}
}

// TestOpenAPIDocExamplesBad: the example check fails on a bad example: a
// field the schema does not have, a wrong type or value, a block without
// a tag, a tag naming nothing, a curl with an unknown parameter or a bad
// body (a skipped one too), a curl that cannot be read.
func TestOpenAPIDocExamplesBad(t *testing.T) {
	s := loadSpec(t, servedSpec(t))
	for _, tt := range []struct{ name, md, want string }{
		{"unknown field", "<!-- openapi: POST /v1/tx 200 -->\n```json\n{\"txid\":\"0AP81P6ZW0800\",\"status\":\"committed\",\"colour\":\"red\"}\n```\n", "(POST /v1/tx 200)"},
		{"bad status", "<!-- openapi: POST /v1/tx 200 -->\n```json\n{\"status\":\"done\"}\n```\n", "(POST /v1/tx 200)"},
		{"ops empty", "<!-- openapi: POST /v1/tx request -->\n```json\n{\"ops\":[]}\n```\n", "(POST /v1/tx request)"},
		{"put without value", "<!-- openapi: schema TxRequest -->\n```json\n{\"ops\":[{\"op\":\"put\",\"key\":\"k\"}]}\n```\n", "(schema TxRequest)"},
		{"bad error code", "<!-- openapi: schema ErrorAnswer -->\n```json\n{\"error\":{\"code\":\"oops\",\"message\":\"m\"}}\n```\n", "(schema ErrorAnswer)"},
		{"not json", "<!-- openapi: schema KV -->\n```json\n{\"key\":\"k\",…}\n```\n", "not one JSON value"},
		{"untagged", "```json\n{}\n```\n", "without <!-- openapi"},
		{"no such answer", "<!-- openapi: GET /v1/kv/{key} 201 -->\n```json\n{}\n```\n", "has no answer 201"},
		{"curl unknown parameter", "```sh\ncurl -s 'localhost:8081/v1/log?form=7'\n```\n", "query parameter form"},
		{"curl bad value", "```sh\ncurl -s 'localhost:8081/v1/kv/k?consistency=eventual'\n```\n", "consistency=eventual"},
		{"curl bad body", "```sh\ncurl -s -X POST localhost:8081/v1/cluster/join -d '{\"id\":\"n4\"}'\n```\n", "body"},
		{"curl no route", "```sh\ncurl -s -X PATCH localhost:8081/v1/tx -d '{}'\n```\n", "no operation serves it"},
		{"curl not read", "```sh\ncurl -s --verbose localhost:8081/v1/cluster\n```\n", `curl word "--verbose" not understood`},
		{"curl skipped, bad parameter", "<!-- exec: skip: needs a token -->\n```sh\ncurl -s 'localhost:8081/v1/log?form=7'\n```\n", "query parameter form"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := checkExamples(s, []byte(tt.md))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("checkExamples = %v, want an error with %q", err, tt.want)
			}
		})
	}
}

// ---- live answers ----

// TestOpenAPILiveAnswers: the answers of a Server over the fake backend,
// to each request of allRoutes as an admin and as a stranger, are valid
// by the schema of their operation and status. The dashboard and /metrics
// are left out: their handlers here are stand-ins.
func TestOpenAPILiveAnswers(t *testing.T) {
	s := loadSpec(t, servedSpec(t))
	srv := fullServer(true)
	checked := 0
	for _, rt := range allRoutes {
		p, _, _ := strings.Cut(rt.target, "?")
		if rt.need == "any" || p == "/metrics" || p == "/v1/backup" || p == "/" || strings.HasPrefix(p, "/ui/") || strings.HasPrefix(p, "/v1/stats") || p == "/v1/events" {
			continue
		}
		tpl, ok := s.matchPath(rt.method, p)
		if !ok {
			t.Errorf("%s %s: no operation", rt.method, rt.target)
			continue
		}
		for _, tok := range []string{"admin", ""} {
			rec := ask(t, srv, rt.method, rt.target, rt.body, tok)
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				if rec.Code != 200 || rt.target != wire.LogStreamPath+"?from=1" || ct != "text/event-stream" {
					t.Errorf("%s %s as %q: %d with Content-Type %q", rt.method, rt.target, tok, rec.Code, ct)
				}
				continue
			}
			tag := fmt.Sprintf("%s %s %d", rt.method, tpl, rec.Code)
			if err := s.validate(tag, rec.Body.Bytes()); err != nil {
				t.Errorf("%s %s as %q: answer %s: %v", rt.method, rt.target, tok, rec.Body, err)
			}
			checked++
		}
	}
	if checked < 30 {
		t.Fatalf("checked %d answers, want every route's", checked)
	}
	// A bad answer fails: the check is not vacuous.
	if err := s.validate("GET /v1/cluster 200", []byte(`{"id":"n1","state":"leader"}`)); err == nil {
		t.Fatal("an answer without members passed")
	}
}
