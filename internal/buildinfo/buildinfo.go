package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version, Revision and Modified are stamped by scripts/release.sh: the
// release's name, the commit it was built from, and "true" when it was
// built from a tree with uncommitted changes.
var (
	Version  string
	Revision string
	Modified string
)

// Line is what `PROG --version` prints: the version (the stamped one, else
// the main module's from the build info), the VCS revision (the build
// info's vcs.revision, which go build records inside a git checkout, else
// the stamped one) with "(modified)" when the tree had uncommitted changes,
// and the Go version and platform. info and ok are what
// debug.ReadBuildInfo returned.
func Line(prog string, info *debug.BuildInfo, ok bool) string {
	v, rev, dirty := Version, Revision, Modified == "true"
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
	return fmt.Sprintf("%s %s revision %s %s %s/%s", prog, v, rev, goVersion, runtime.GOOS, runtime.GOARCH)
}

// Running is Line for the running binary.
func Running(prog string) string {
	info, ok := debug.ReadBuildInfo()
	return Line(prog, info, ok)
}
