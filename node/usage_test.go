package node

import (
	"errors"
	"flag"
	"strings"
	"testing"
)

// helpSections splits a listing of printGroups into the flags under each
// heading, in the order they appear; a flag listed twice is reported.
func helpSections(t *testing.T, help string) (order []string, groupOfFlag map[string]string) {
	t.Helper()
	groupOfFlag = map[string]string{}
	heading := ""
	for line := range strings.SplitSeq(help, "\n") {
		switch {
		case strings.HasSuffix(line, ":") && !strings.HasPrefix(line, " "):
			heading = strings.TrimSuffix(line, ":")
			order = append(order, heading)
		case strings.HasPrefix(line, "  -"):
			name, _, _ := strings.Cut(strings.TrimPrefix(line, "  -"), " ")
			if g, ok := groupOfFlag[name]; ok {
				t.Errorf("-%s listed twice (under %q and %q)", name, g, heading)
			}
			groupOfFlag[name] = heading
		}
	}
	return order, groupOfFlag
}

// TestUsageGrouped: txlogd -h lists each operator flag once, under the
// heading flagGroup names, the headings in flagGroups' order.
func TestUsageGrouped(t *testing.T) {
	_, err := ParseConfig([]string{"-h"}, nil)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: error %v, want flag.ErrHelp", err)
	}
	order, got := helpSections(t, err.Error())
	var headings []string
	for _, h := range order {
		if h != otherGroup {
			headings = append(headings, h)
		}
	}
	if strings.Join(headings, ",") != strings.Join(flagGroups, ",") {
		t.Errorf("-h headings = %v, want %v", order, flagGroups)
	}
	for name, g := range got {
		if g != groupOf(name) {
			t.Errorf("-%s listed under %q, want %q", name, g, groupOf(name))
		}
		if testingFlags[name] {
			t.Errorf("-h lists the testing flag -%s", name)
		}
	}
	for name, want := range map[string]string{
		"id": "cluster", "cluster": "cluster", "join": "cluster",
		"data-dir": "storage", "log-retention": "storage",
		"http-addr": "network", "raft-addr": "network",
		"tls-cert-file": "security", "auth-file": "security", "peer-tls-mode": "security",
		"max-body-bytes": "tuning", "alert-parked-max": "tuning", "help-testing": "tuning",
	} {
		if got[name] != want {
			t.Errorf("-%s listed under %q, want %q", name, got[name], want)
		}
	}
}

// TestPrintGroupsOther: a flag flagGroup does not name is listed under
// "other", after the named groups, and a heading without flags is left out.
func TestPrintGroupsOther(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.String("data-dir", "", "a named flag")
	fs.String("zz-unnamed", "", "a flag no group names")
	fs.Bool("id", false, "kept out by keep")
	var b strings.Builder
	printGroups(&b, fs, func(name string) bool { return name != "id" })
	order, got := helpSections(t, b.String())
	if strings.Join(order, ",") != "storage,other" {
		t.Errorf("headings = %v, want [storage other]:\n%s", order, b.String())
	}
	if got["zz-unnamed"] != otherGroup || got["data-dir"] != "storage" {
		t.Errorf("groups = %v, want zz-unnamed under other, data-dir under storage", got)
	}
	if _, ok := got["id"]; ok {
		t.Errorf("printGroups listed -id, which keep left out:\n%s", b.String())
	}
}
