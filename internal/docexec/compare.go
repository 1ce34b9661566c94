package docexec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Shape is how a field whose value changes from run to run is matched.
type Shape string

// The shapes.
const (
	ShapeTxID      Shape = "a txid"                       // 13 characters of Crockford base32, not all zero
	ShapeUint      Shape = "a non-negative integer"       // a JSON number without fraction or sign
	ShapeTime      Shape = "an RFC 3339 time"             // time.RFC3339Nano
	ShapeDuration  Shape = "a Go duration"                // time.ParseDuration
	ShapeClusterID Shape = "a cluster ID (32 hex digits)" // lowercase
)

// Shapes maps the name of each field that changes from run to run to the
// shape its value is matched by, wherever the field is in an answer, when
// the doc's value has that shape (an unreadable entry's "txid":"" is
// compared exactly). Every other field is compared exactly.
var Shapes = map[string]Shape{
	"txid":          ShapeTxID,
	"index":         ShapeUint,
	"term":          ShapeUint,
	"commit_index":  ShapeUint,
	"applied_index": ShapeUint,
	"next":          ShapeUint,
	"first_index":   ShapeUint,
	"token":         ShapeUint,
	"lag":           ShapeUint,
	"time":          ShapeTime,
	"at":            ShapeTime,
	"updated_at":    ShapeTime,
	"expires_in":    ShapeDuration,
	"last_contact":  ShapeDuration,
	"cluster_id":    ShapeClusterID,
}

var (
	txidRE      = regexp.MustCompile(`^[0-9A-HJKMNP-TV-Z]{13}$`)
	uintRE      = regexp.MustCompile(`^(0|[1-9][0-9]*)$`)
	clusterIDRE = regexp.MustCompile(`^[0-9a-f]{32}$`)
)

// Mismatch is one difference between a doc's answer and a real one.
type Mismatch struct {
	Path string // the field: ".conflict.actual", ".members[1].id"; "" for the whole body
	Want string // what the doc shows, or the shape
	Got  string // what the answer has
}

func (m Mismatch) String() string {
	p := m.Path
	if p == "" {
		p = "(body)"
	}
	return fmt.Sprintf("%s: want %s, got %s", p, m.Want, m.Got)
}

// Binding is a value of the doc that an answer matched by shape, with the
// real value: Doc is the doc's JSON text ("\"0AP81P6ZW0800\"", "8123").
type Binding struct {
	Field    string
	Doc, Got string
}

// Compare compares an answer's body with the doc's, as the package doc
// says, and returns every difference (none: they match) and the values
// matched by shape.
func Compare(want, got []byte) ([]Mismatch, []Binding) {
	w, err := decode(want)
	if err != nil {
		return []Mismatch{{Want: "the doc's answer to be one JSON value", Got: err.Error()}}, nil
	}
	g, err := decode(got)
	if err != nil {
		return []Mismatch{{Want: "one JSON value", Got: fmt.Sprintf("%q (%v)", clip(got), err)}}, nil
	}
	var c comparer
	c.value("", "", w, g)
	return c.out, c.bound
}

type comparer struct {
	out   []Mismatch
	bound []Binding
}

func (c *comparer) miss(path, want, got string) {
	c.out = append(c.out, Mismatch{Path: path, Want: want, Got: got})
}

// value compares w (the doc's) with g at path; field is the name of the
// object member that holds them, "" in an array or at the top.
func (c *comparer) value(path, field string, w, g any) {
	if shape, ok := Shapes[field]; ok && hasShape(shape, w) {
		c.shaped(path, field, shape, w, g)
		return
	}
	switch w := w.(type) {
	case map[string]any:
		g, ok := g.(map[string]any)
		if !ok {
			c.miss(path, "an object", text(g))
			return
		}
		for _, k := range sortedKeys(w) {
			gv, ok := g[k]
			if !ok {
				c.miss(path+"."+k, text(w[k]), "no such field")
				continue
			}
			c.value(path+"."+k, k, w[k], gv)
		}
		for _, k := range sortedKeys(g) {
			if _, ok := w[k]; !ok {
				c.miss(path+"."+k, "no such field (the doc does not show it)", text(g[k]))
			}
		}
	case []any:
		g, ok := g.([]any)
		if !ok {
			c.miss(path, "an array", text(g))
			return
		}
		if len(w) != len(g) {
			c.miss(path, fmt.Sprintf("%d elements", len(w)), fmt.Sprintf("%d: %s", len(g), clip([]byte(text(g)))))
		}
		for i := range min(len(w), len(g)) {
			c.value(fmt.Sprintf("%s[%d]", path, i), "", w[i], g[i])
		}
	case string:
		gs, ok := g.(string)
		if !ok || !elided(w, gs) {
			c.miss(path, text(w), text(g))
		}
	default:
		if text(w) != text(g) {
			c.miss(path, text(w), text(g))
		}
	}
}

// shaped matches g against shape, the shape of w, the doc's value.
func (c *comparer) shaped(path, field string, shape Shape, w, g any) {
	if !hasShape(shape, g) {
		c.miss(path, string(shape), text(g))
		return
	}
	if shape == ShapeTxID || shape == ShapeClusterID || field == "token" || field == "index" {
		c.bound = append(c.bound, Binding{Field: field, Doc: text(w), Got: text(g)})
	}
}

func hasShape(shape Shape, v any) bool {
	switch shape {
	case ShapeUint:
		n, ok := v.(json.Number)
		return ok && uintRE.MatchString(string(n))
	}
	s, ok := v.(string)
	if !ok {
		return false
	}
	switch shape {
	case ShapeTxID:
		return txidRE.MatchString(s) && s != "0000000000000"
	case ShapeTime:
		_, err := time.Parse(time.RFC3339Nano, s)
		return err == nil
	case ShapeDuration:
		_, err := time.ParseDuration(s)
		return err == nil
	case ShapeClusterID:
		return clusterIDRE.MatchString(s)
	}
	return false
}

// elided reports whether got is want, each "…" of want standing for any text.
func elided(want, got string) bool {
	if !strings.Contains(want, "…") {
		return want == got
	}
	parts := strings.Split(want, "…")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile(`(?s)^` + strings.Join(parts, ".*") + `$`).MatchString(got)
}

func decode(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return v, nil
}

// text is v as compact JSON.
func text(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func clip(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…(" + strconv.Itoa(len(b)) + " bytes)"
	}
	return string(b)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
