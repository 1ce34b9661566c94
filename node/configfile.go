package node

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The config file (txlogd --config FILE, or TXLOG_CONFIG) is one YAML
// mapping whose keys are txlogd's flag names, without the dashes, and whose
// values are what the flag takes:
//
//	id: n1
//	http-addr: 127.0.0.1:8080
//	store-commit-interval: 5ms     # a Go duration
//	metrics-open: true             # a YAML boolean, for a boolean flag
//	cluster: [n1=10.0.0.1:7101, n2=10.0.0.2:7101]  # or "n1=...,n2=..."
//	alert-webhook: [https://a.example/hook]        # repeatable: one per item
//
// A value goes through the flag's own parser, so it means exactly what the
// flag means; a relative path is relative to txlogd's working directory, as
// on the command line. Precedence: a flag on the command line, then its
// TXLOG_* variable, then the file, then the default. The file is strict:
// an unknown key, a key given twice, a value of the wrong type (a list or
// a mapping for a single-valued flag, anything but true or false for a
// boolean one, a value the flag's parser refuses), a document that is not
// a mapping, a second document, an alias, and the key config itself are
// refused with the file, the line and the key named; txlogd then does not
// start.
//
// Who may write the file decides how the node runs: it names auth-file,
// peer-secret-file, the TLS keys and the data directory, so a file every
// user may write would let any local user give the node their own
// credentials file. Such a file is refused whatever it holds, as sshd
// refuses a world-writable authorized_keys. A file that holds
// webhook-secret itself (not a path) is refused also when every user may
// read it.

// maxConfigFileBytes bounds the config file txlogd reads.
const maxConfigFileBytes = 1 << 20

// listFlags are the flags a config file may give as a YAML list: a comma
// list joins its items with commas into one value; repeated calls the flag
// once per item, as the flag given that many times.
var listFlags = map[string]listKind{
	"cluster":              commaList,
	"raft-dial":            commaList,
	"webhook-allow":        commaList,
	"peer-cert-allowed-cn": commaList,
	"allowed-origins":      commaList,
	"allowed-hosts":        commaList,
	"alert-webhook":        repeated,
}

type listKind int

const (
	commaList listKind = iota + 1
	repeated
)

// secretKeys are the keys whose value is a secret itself, not a path.
var secretKeys = map[string]bool{"webhook-secret": true}

// fileSetting is one key of a config file: the values to give its flag's
// Set, one call each, and the line the key is on.
type fileSetting struct {
	name   string
	values []string
	line   int
}

// applyConfigFile reads the config file at path and sets each flag of fs it
// names that skip does not (those set on the command line or by a TXLOG_*
// variable).
func applyConfigFile(fs *flag.FlagSet, path string, skip map[string]bool) error {
	data, mode, err := readConfigFile(path)
	if err != nil {
		return err
	}
	settings, err := parseConfigFile(fs, path, data)
	if err != nil {
		return err
	}
	if mode&0o002 != 0 {
		return fmt.Errorf("config file %s: every user may write it (mode %v), and it decides the node's credentials files: chmod o-w %s", path, mode, path)
	}
	for _, s := range settings {
		if secretKeys[s.name] && mode&0o004 != 0 {
			return fmt.Errorf("config file %s line %d: %s: the file holds a secret and every user may read it (mode %v): chmod o-r %s", path, s.line, s.name, mode, path)
		}
	}
	for _, s := range settings {
		if skip[s.name] {
			continue
		}
		for _, v := range s.values {
			if err := fs.Set(s.name, v); err != nil {
				return fmt.Errorf("config file %s line %d: %s: %q: %w", path, s.line, s.name, v, err)
			}
		}
	}
	return nil
}

// readConfigFile reads a regular file of at most maxConfigFileBytes, and
// returns its permission bits as they were when it was opened.
func readConfigFile(path string) ([]byte, os.FileMode, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("config file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("config file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("config file %s: not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxConfigFileBytes+1))
	if err != nil {
		return nil, 0, fmt.Errorf("config file %s: %w", path, err)
	}
	if len(data) > maxConfigFileBytes {
		return nil, 0, fmt.Errorf("config file %s: larger than %d bytes", path, maxConfigFileBytes)
	}
	return data, fi.Mode().Perm(), nil
}

// parseConfigFile parses a config file's bytes into the settings it
// makes, in the file's order, checking each key against the flags of fs;
// name is the file's name for the errors. It sets nothing.
func parseConfigFile(fs *flag.FlagSet, name string, data []byte) ([]fileSetting, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
		return nil, nil // empty, or comments alone
	} else if err != nil {
		return nil, fmt.Errorf("config file %s: %w", name, err)
	}
	var next yaml.Node
	if err := dec.Decode(&next); err == nil {
		return nil, fmt.Errorf("config file %s line %d: a second YAML document: want one mapping of flag names to values", name, next.Line)
	} else if !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("config file %s: %w", name, err)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil, nil // "---" alone, or "~"
	}
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("config file %s line %d: want a mapping of flag names to values, found %s", name, root.Line, kindName(root))
	}
	var out []fileSetting
	first := map[string]int{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Tag != "!!str" {
			return nil, fmt.Errorf("config file %s line %d: key %s: want a flag's name", name, k.Line, kindName(k))
		}
		key := k.Value
		at := func(format string, args ...any) error {
			return fmt.Errorf("config file %s line %d: %s: %s", name, k.Line, key, fmt.Sprintf(format, args...))
		}
		if line, ok := first[key]; ok {
			return nil, at("given twice (first on line %d)", line)
		}
		first[key] = k.Line
		if key == "config" {
			return nil, at("a config file cannot name another")
		}
		f := fs.Lookup(key)
		if f == nil || key == "help-testing" {
			return nil, at("unknown key: want a txlogd flag's name without the dashes (txlogd -h)")
		}
		values, err := settingValues(f, v)
		if err != nil {
			return nil, at("%v", err)
		}
		out = append(out, fileSetting{name: key, values: values, line: k.Line})
	}
	return out, nil
}

// settingValues checks that v has the type flag f takes and returns the
// values to give f.Value.Set.
func settingValues(f *flag.Flag, v *yaml.Node) ([]string, error) {
	isBool := false
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok {
		isBool = b.IsBoolFlag()
	}
	scalar := func(n *yaml.Node) (string, error) {
		switch {
		case n.Kind != yaml.ScalarNode:
			return "", fmt.Errorf("wrong type: want a single value, found %s", kindName(n))
		case n.Tag == "!!null":
			return "", errors.New("no value")
		case isBool && n.Tag != "!!bool":
			return "", fmt.Errorf("wrong type: want true or false, found %q", n.Value)
		case !isBool && n.Tag == "!!bool":
			return "", fmt.Errorf("wrong type: want a value, found the boolean %s", n.Value)
		}
		return n.Value, nil
	}
	if v.Kind != yaml.SequenceNode {
		s, err := scalar(v)
		if err != nil {
			return nil, err
		}
		return []string{s}, nil
	}
	kind := listFlags[f.Name]
	if kind == 0 {
		return nil, errors.New("wrong type: want a single value, found a list")
	}
	var items []string
	for _, n := range v.Content {
		s, err := scalar(n)
		if err != nil {
			return nil, fmt.Errorf("line %d: list item: %w", n.Line, err)
		}
		items = append(items, s)
	}
	if kind == commaList {
		return []string{strings.Join(items, ",")}, nil
	}
	return items, nil
}

// kindName names a YAML node's kind for an error.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias (*" + n.Value + ")"
	case yaml.ScalarNode:
		return fmt.Sprintf("the %s %q", strings.TrimPrefix(n.Tag, "!!"), n.Value)
	}
	return "a document"
}
