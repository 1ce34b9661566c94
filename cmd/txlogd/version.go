package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// version and revision are stamped by scripts/release.sh with
// -ldflags "-X main.version=... -X main.revision=...": the release's name and
// the commit it was built from. A plain `go build` leaves them empty, and
// --version then says what the build info holds.
var (
	version  string
	revision string
	// modified is "true" when release.sh built from a tree with changes
	// not committed.
	modified string
)

// versionLine is what `txlogd --version` prints: the version (the stamped
// one, else the main module's from the build info), the VCS revision (the
// build info's vcs.revision, which go build records inside a git checkout,
// else the stamped one) with "modified" when the tree had uncommitted
// changes, and the Go version and platform. info and ok are what
// debug.ReadBuildInfo returned.
func versionLine(info *debug.BuildInfo, ok bool) string {
	v, rev, dirty := version, revision, modified == "true"
	goVersion := runtime.Version()
	if ok {
		if v == "" {
			v = info.Main.Version
		}
		goVersion = info.GoVersion
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if v == "" {
		v = "(unknown)"
	}
	if rev == "" {
		rev = "unknown"
	} else if dirty {
		rev += " (modified)"
	}
	return fmt.Sprintf("txlogd %s revision %s %s %s/%s", v, rev, goVersion, runtime.GOOS, runtime.GOARCH)
}
