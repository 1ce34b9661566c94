package main

import (
	"errors"
	"flag"
	"strings"
	"testing"
)

// TestHelp: txlogd -h lists the operator's flags and not the testing ones,
// which txlogd -help-testing lists under its heading.
func TestHelp(t *testing.T) {
	err := run([]string{"-h"})
	if !errors.Is(err, flag.ErrHelp) || !strings.Contains(err.Error(), "-redis-addr") {
		t.Fatalf("run(-h) = %v, want the usage", err)
	}
	for _, name := range []string{"-raft-dial", "-raft-serial-append", "-http-fast-path", "-forward"} {
		if strings.Contains(err.Error(), name) {
			t.Errorf("txlogd -h lists %s", name)
		}
	}
	err = run([]string{"-help-testing"})
	if !errors.Is(err, flag.ErrHelp) || !strings.Contains(err.Error(), "testing only — not for production") {
		t.Fatalf("run(-help-testing) = %v, want the testing listing", err)
	}
	for _, name := range []string{"-raft-dial", "-raft-serial-append", "-http-fast-path", "-forward"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("txlogd -help-testing does not list %s", name)
		}
	}
}
