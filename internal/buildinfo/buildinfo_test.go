package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// TestLine: what --version prints from the stamped variables and
// the build info, each missing in turn.
func TestLine(t *testing.T) {
	info := func(mainVersion string, settings ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Path: "github.com/txlog/txlog", Version: mainVersion}}
		for i := 0; i+1 < len(settings); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return bi
	}
	platform := " " + runtime.GOOS + "/" + runtime.GOARCH
	for _, tc := range []struct {
		name                   string
		stamped, stampedRev, m string
		info                   *debug.BuildInfo
		ok                     bool
		want                   string
	}{
		{"release build in a checkout", "v1.2.0", "", "", info("(devel)", "vcs.revision", "abc123", "vcs.modified", "false"), true,
			"txlogd v1.2.0 revision abc123 go1.99" + platform},
		{"release build, revision stamped", "v1.2.0", "def456", "", info("(devel)"), true,
			"txlogd v1.2.0 revision def456 go1.99" + platform},
		{"stamped, modified tree", "v1.2.0", "def456", "true", info("(devel)"), true,
			"txlogd v1.2.0 revision def456 (modified) go1.99" + platform},
		{"go build in a changed checkout", "", "", "", info("v0.0.0-20261203-abc123+dirty", "vcs.revision", "abc123", "vcs.modified", "true"), true,
			"txlogd v0.0.0-20261203-abc123+dirty revision abc123 (modified) go1.99" + platform},
		{"build info wins over the stamped revision", "v1", "stale", "true", info("", "vcs.revision", "fresh", "vcs.modified", "false"), true,
			"txlogd v1 revision fresh go1.99" + platform},
		{"no build info", "", "", "", nil, false,
			"txlogd (unknown) revision unknown " + runtime.Version() + platform},
	} {
		t.Run(tc.name, func(t *testing.T) {
			Version, Revision, Modified = tc.stamped, tc.stampedRev, tc.m
			defer func() { Version, Revision, Modified = "", "", "" }()
			if got := Line("txlogd", tc.info, tc.ok); got != tc.want {
				t.Errorf("Line() = %q, want %q", got, tc.want)
			}
		})
	}
	// This test binary's own build info: a line that names txlogd.
	if got := Running("txlogd"); !strings.HasPrefix(got, "txlogd ") {
		t.Errorf("Running() = %q", got)
	}
}
