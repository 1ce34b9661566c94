package docexec

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Example is one executed example of a doc: a curl command and, when the doc
// shows one, its answer.
type Example struct {
	File string // the doc, as given to Parse
	Line int    // line of the curl command (1-based)

	Method string      // -X, else GET, or POST with a body
	Host   string      // host:port of the URL, as in the doc
	Target string      // path and query of the URL, as in the doc
	Header http.Header // -H
	Body   string      // -d
	Output string      // -o: the file the answer's body goes to ("": none)
	Skip   string      // the reason of an exec: skip directive; "" runs it

	Answer *Answer // nil: the doc shows none, any 2xx will do
}

// Answer is the answer a doc shows for an example.
type Answer struct {
	Line   int    // line of its ```json fence
	Tag    string // the openapi comment's text: "POST /v1/tx 409"
	Status int
	Body   []byte
}

// Where is the example's position and request, for messages:
// "docs/api.md:251: POST /v1/tx?timeout=2s".
func (e Example) Where() string {
	return fmt.Sprintf("%s:%d: %s %s", e.File, e.Line, e.Method, e.Target)
}

var (
	tagLine   = regexp.MustCompile(`^<!-- openapi: (\S+) (\S+) (\d{3}) -->$`)
	anyTag    = regexp.MustCompile(`^<!-- openapi: .* -->$`)
	skipLine  = regexp.MustCompile(`^<!-- exec: skip: (.+?) -->$`)
	execLine  = regexp.MustCompile(`^<!-- exec:`)
	pathParam = regexp.MustCompile(`\\\{[a-z_]+\\\}`)
)

// Parse returns the executed examples of md, in document order; file names
// it in the examples and in errors. A curl block that cannot be read, an
// answer block without a status, an exec directive it does not know or one
// with no example after it are errors, each naming its line.
func Parse(file string, md []byte) ([]Example, error) {
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(md))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	var out []Example
	var errs []error
	skip, skipAt := "", 0
	for i := 0; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		if m := skipLine.FindStringSubmatch(t); m != nil {
			skip, skipAt = m[1], i+1
			continue
		} else if execLine.MatchString(t) {
			errs = append(errs, fmt.Errorf("%s:%d: exec directive not understood: %s (known: <!-- exec: skip: REASON -->)", file, i+1, t))
			continue
		}
		if !strings.HasPrefix(t, "```") {
			continue
		}
		lang := strings.TrimPrefix(t, "```")
		end := i + 1
		for end < len(lines) && strings.TrimSpace(lines[end]) != "```" {
			end++
		}
		body := lines[i+1 : min(end, len(lines))]
		start := i + 1
		i = end
		hasCurl := slices.ContainsFunc(body, func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "curl ") })
		if lang != "sh" || !hasCurl {
			if skip != "" && lang == "sh" {
				skip = "" // a skipped sh block of other commands
			}
			continue
		}
		var cmd strings.Builder
		for _, l := range body {
			cmd.WriteString(strings.TrimSuffix(l, "\\"))
			cmd.WriteByte('\n')
		}
		ex, err := parseCurl(cmd.String())
		ex.File, ex.Line, ex.Skip = file, start+1, skip
		skip = ""
		if err != nil && ex.Skip != "" {
			out = append(out, ex) // not run: a pipe, a shell variable
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: %w (an example that cannot run has <!-- exec: skip: REASON --> before its block)", file, start+1, err))
			continue
		}
		// The answer: the next ```json block, with only blank lines and
		// comments before it.
		tag := ""
		j := end + 1
		for ; j < len(lines); j++ {
			s := strings.TrimSpace(lines[j])
			if s == "" {
				continue
			}
			if strings.HasPrefix(s, "<!--") && !execLine.MatchString(s) {
				if anyTag.MatchString(s) {
					tag = s
				}
				continue
			}
			break
		}
		if j < len(lines) && strings.TrimSpace(lines[j]) == "```json" {
			a, err := answerAt(file, lines, j, tag, ex)
			if err != nil {
				errs = append(errs, err)
			}
			ex.Answer = a
		}
		out = append(out, ex)
	}
	if skip != "" {
		errs = append(errs, fmt.Errorf("%s:%d: exec: skip with no curl block after it", file, skipAt))
	}
	return out, errors.Join(errs...)
}

// answerAt reads the ```json block at lines[j] as ex's answer, its status
// from tag.
func answerAt(file string, lines []string, j int, tag string, ex Example) (*Answer, error) {
	a := &Answer{Line: j + 1}
	for k := j + 1; k < len(lines) && strings.TrimSpace(lines[k]) != "```"; k++ {
		a.Body = append(append(a.Body, lines[k]...), '\n')
	}
	m := tagLine.FindStringSubmatch(tag)
	if m == nil {
		return nil, fmt.Errorf("%s:%d: the answer of %s has no <!-- openapi: METHOD PATH STATUS --> before it", file, a.Line, ex.Where())
	}
	a.Tag = m[1] + " " + m[2] + " " + m[3]
	a.Status, _ = strconv.Atoi(m[3])
	path, _, _ := strings.Cut(ex.Target, "?")
	re := regexp.MustCompile("^" + pathParam.ReplaceAllString(regexp.QuoteMeta(m[2]), ".+") + "$")
	if m[1] != ex.Method || !re.MatchString(path) {
		return nil, fmt.Errorf("%s:%d: the answer of %s is tagged %s %s", file, a.Line, ex.Where(), m[1], m[2])
	}
	return a, nil
}

// parseCurl reads a curl command: -s, -X METHOD, -H 'Name: value',
// -d 'body', -o FILE and the URL, its words quoted or bare.
func parseCurl(cmd string) (Example, error) {
	var words []string
	for rest := strings.TrimSpace(cmd); rest != ""; rest = strings.TrimLeft(rest, " \t\n") {
		if q := rest[0]; q == '\'' || q == '"' {
			end := strings.IndexByte(rest[1:], q)
			if end < 0 {
				return Example{}, fmt.Errorf("unclosed quote in %q", cmd)
			}
			words = append(words, rest[1:end+1])
			rest = rest[end+2:]
			continue
		}
		end := strings.IndexAny(rest, " \t\n")
		if end < 0 {
			end = len(rest)
		}
		words = append(words, rest[:end])
		rest = rest[end:]
	}
	e := Example{Header: http.Header{}}
	if len(words) == 0 || words[0] != "curl" {
		return e, fmt.Errorf("not a curl command: %q", cmd)
	}
	for i := 1; i < len(words); i++ {
		w := words[i]
		switch {
		case w == "-s":
		case (w == "-X" || w == "-H" || w == "-d" || w == "-o") && i+1 < len(words):
			i++
			switch w {
			case "-X":
				e.Method = words[i]
			case "-H":
				name, value, ok := strings.Cut(words[i], ":")
				if !ok {
					return e, fmt.Errorf("header %q without a colon", words[i])
				}
				e.Header.Add(name, strings.TrimSpace(value))
			case "-d":
				e.Body = words[i]
			case "-o":
				e.Output = words[i]
			}
		case !strings.HasPrefix(w, "-") && e.Host == "":
			u := strings.TrimPrefix(strings.TrimPrefix(w, "http://"), "https://")
			host, target, ok := strings.Cut(u, "/")
			if !ok || host == "" {
				return e, fmt.Errorf("URL %q without a host and a path", w)
			}
			e.Host, e.Target = host, "/"+target
		default:
			return e, fmt.Errorf("curl word %q not understood", w)
		}
	}
	if e.Host == "" {
		return e, fmt.Errorf("curl without a URL: %q", cmd)
	}
	if e.Method == "" {
		e.Method = "GET"
		if e.Body != "" {
			e.Method = "POST"
		}
	}
	return e, nil
}
