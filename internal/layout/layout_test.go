package layout

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The prefixes of the contract lines (doc.go).
const (
	lineMustNot       = "// Must not import: "
	lineMustNotDirect = "// Must not import directly: "
	lineOnly          = "// Imports only: "
	lineSole          = "// Sole importer of: "
)

// contract is what one doc.go says of its package's imports.
type contract struct {
	mustNot       []string // patterns no dependency may match
	mustNotDirect []string // patterns no direct import may match
	only          []string // when set, patterns (or "std") every direct import matches
	sole          []string // patterns only this package imports directly
}

// empty reports whether c says nothing.
func (c contract) empty() bool {
	return c.mustNot == nil && c.mustNotDirect == nil && c.only == nil && c.sole == nil
}

// parseContract reads the contract lines of a doc.go. A line that starts like
// one but does not parse (no entries, an empty entry) is an error, so that a
// typo does not silently void a contract.
func parseContract(doc string) (contract, error) {
	var c contract
	sc := bufio.NewScanner(strings.NewReader(doc))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		var dst *[]string
		var rest string
		switch {
		case strings.HasPrefix(line, lineMustNotDirect):
			dst, rest = &c.mustNotDirect, line[len(lineMustNotDirect):]
		case strings.HasPrefix(line, lineMustNot):
			dst, rest = &c.mustNot, line[len(lineMustNot):]
		case strings.HasPrefix(line, lineOnly):
			dst, rest = &c.only, line[len(lineOnly):]
		case strings.HasPrefix(line, lineSole):
			dst, rest = &c.sole, line[len(lineSole):]
		case strings.HasPrefix(line, "// Must not import") || strings.HasPrefix(line, "// Imports only") || strings.HasPrefix(line, "// Sole importer"):
			return contract{}, fmt.Errorf("malformed contract line %q", line)
		default:
			continue
		}
		for p := range strings.SplitSeq(rest, ",") {
			p = strings.TrimSpace(p)
			if p == "" || strings.ContainsAny(p, " \t") {
				return contract{}, fmt.Errorf("contract line %q: bad entry %q", line, p)
			}
			*dst = append(*dst, p)
		}
	}
	return c, sc.Err()
}

// match reports whether path matches pattern: the same path, or for
// "p/..." p itself or a path below it.
func match(pattern, path string) bool {
	if p, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == p || strings.HasPrefix(path, p+"/")
	}
	return path == pattern
}

func matchAny(patterns []string, path string, std bool) bool {
	for _, p := range patterns {
		if (p == "std" && std) || match(p, path) {
			return true
		}
	}
	return false
}

// pkg is one package as go list describes it.
type pkg struct {
	path    string
	std     bool
	module  bool     // a package of this module (not a dependency)
	dir     string   // its directory
	imports []string // direct imports
	deps    []string // every dependency, transitively
}

// violations returns what the packages do against the contract of p.
func violations(p string, c contract, pkgs map[string]pkg) []string {
	var out []string
	me := pkgs[p]
	for _, d := range me.deps {
		if d == p {
			continue
		}
		if matchAny(c.mustNot, d, false) {
			out = append(out, fmt.Sprintf("%s imports %s%s, which its doc.go forbids", p, d, via(p, d, pkgs)))
		}
	}
	for _, d := range me.imports {
		if c.only != nil && !matchAny(c.only, d, pkgs[d].std) {
			out = append(out, fmt.Sprintf("%s imports %s; its doc.go allows only %s", p, d, strings.Join(c.only, ", ")))
		}
		if matchAny(c.mustNotDirect, d, false) {
			out = append(out, fmt.Sprintf("%s imports %s directly, which its doc.go forbids", p, d))
		}
	}
	for _, other := range sortedKeys(pkgs) {
		o := pkgs[other]
		if other == p || !o.module {
			continue
		}
		for _, d := range o.imports {
			if matchAny(c.sole, d, false) {
				out = append(out, fmt.Sprintf("%s imports %s, which %s's doc.go says only %s imports", other, d, p, p))
			}
		}
	}
	return out
}

// via names a direct import of p through which p depends on d, when d is
// not one itself.
func via(p, d string, pkgs map[string]pkg) string {
	if slices.Contains(pkgs[p].imports, d) {
		return ""
	}
	for _, i := range pkgs[p].imports {
		if slices.Contains(pkgs[i].deps, d) {
			return " (through " + i + ")"
		}
	}
	return ""
}

func sortedKeys(m map[string]pkg) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// listModule runs go list -deps over the module at root.
func listModule(t *testing.T, root string) map[string]pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}\t{{.Standard}}\t{{if .Module}}{{.Module.Main}}{{end}}\t{{.Dir}}\t{{join .Imports \",\"}}\t{{join .Deps \",\"}}", "./...")
	cmd.Dir = root
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	pkgs := map[string]pkg{}
	for line := range strings.Lines(string(out)) {
		f := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
		if len(f) != 6 {
			t.Fatalf("go list line %q: %d fields", line, len(f))
		}
		split := func(s string) []string {
			if s == "" {
				return nil
			}
			return strings.Split(s, ",")
		}
		pkgs[f[0]] = pkg{path: f[0], std: f[1] == "true", module: f[2] == "true", dir: f[3], imports: split(f[4]), deps: split(f[5])}
	}
	return pkgs
}

// TestImportContracts checks every doc.go contract of the module against what
// its packages import.
func TestImportContracts(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	pkgs := listModule(t, root)
	checked := 0
	for _, p := range sortedKeys(pkgs) {
		info := pkgs[p]
		if !info.module {
			continue
		}
		doc, err := os.ReadFile(filepath.Join(info.dir, "doc.go"))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		c, err := parseContract(string(doc))
		if err != nil {
			t.Errorf("%s/doc.go: %v", p, err)
			continue
		}
		if c.empty() {
			t.Errorf("%s/doc.go states no import contract (a %q line or another of package layout's forms)", p, strings.TrimSpace(lineMustNot))
			continue
		}
		for _, v := range violations(p, c, pkgs) {
			t.Error(v)
		}
		checked++
	}
	if checked < 10 {
		t.Fatalf("checked the contracts of %d packages; the module has more doc.go files than that", checked)
	}
}

// TestCheckerCatches runs the parser and the checker on a made-up module whose
// packages break each kind of contract line, and on one that keeps them.
func TestCheckerCatches(t *testing.T) {
	fake := map[string]pkg{
		"m/api":     {path: "m/api", module: true, imports: []string{"fmt", "m/wire"}, deps: []string{"fmt", "m/wire", "m/txid"}},
		"m/wire":    {path: "m/wire", module: true, imports: []string{"m/txid"}, deps: []string{"m/txid"}},
		"m/txid":    {path: "m/txid", module: true},
		"m/client":  {path: "m/client", module: true, imports: []string{"m/api"}, deps: []string{"fmt", "m/api", "m/wire", "m/txid"}},
		"m/node":    {path: "m/node", module: true, imports: []string{"net/http", "x/redis"}, deps: []string{"net/http", "x/redis"}},
		"m/parking": {path: "m/parking", module: true, imports: []string{"x/redis"}, deps: []string{"x/redis"}},
		"fmt":       {path: "fmt", std: true},
		"net/http":  {path: "net/http", std: true},
		"x/redis":   {path: "x/redis"},
	}
	tests := []struct {
		name, pkg, doc string
		want           []string // substrings, one per violation
	}{
		{"transitive forbidden", "m/client", "// Must not import: m/txid, m/node/...", []string{"m/client imports m/txid (through m/api)"}},
		{"direct forbidden", "m/client", "// Must not import: m/api", []string{"m/client imports m/api, which"}},
		{"subtree forbidden", "m/client", "// Must not import: m/wire/...", []string{"imports m/wire (through m/api)"}},
		{"kept", "m/api", "// Must not import: m/client, m/node/...", nil},
		{"allow-list broken", "m/wire", "// Imports only: std", []string{"m/wire imports m/txid; its doc.go allows only std"}},
		{"allow-list kept", "m/api", "// Imports only: std, m/wire", nil},
		{"allow-list is of direct imports", "m/client", "// Imports only: m/api", nil},
		{"direct only", "m/node", "// Must not import directly: net/http", []string{"m/node imports net/http directly"}},
		{"sole importer", "m/parking", "// Sole importer of: x/redis", []string{"m/node imports x/redis, which m/parking's doc.go says only m/parking imports"}},
		{"in a doc comment", "m/client", "// Package client.\n//\n// Must not import: m/api\npackage client", []string{"m/client imports m/api"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseContract(tt.doc)
			if err != nil || c.empty() {
				t.Fatalf("parseContract(%q) = %+v, %v", tt.doc, c, err)
			}
			got := violations(tt.pkg, c, fake)
			if len(got) != len(tt.want) {
				t.Fatalf("violations = %q, want %d like %q", got, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("violation %d = %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}

func TestParseContractErrors(t *testing.T) {
	for _, doc := range []string{
		"// Must not import:",
		"// Must not import: a,, b",
		"// Must not import a, b",
		"// Imports only: std b",
		"// Sole importer of: ",
	} {
		if c, err := parseContract(doc); err == nil {
			t.Errorf("parseContract(%q) = %+v, want an error", doc, c)
		}
	}
	c, err := parseContract("// Package x does things.\n// It must not import y.\npackage x")
	if err != nil || !c.empty() {
		t.Errorf("prose about imports: %+v, %v; want no contract and no error", c, err)
	}
}
