// Package buildinfo says which build of txlog is running: the one line
// that `txlogd --version` and `txlog --version` print.
//
// scripts/release.sh stamps Version, Revision and Modified with
// -ldflags "-X github.com/txlog/txlog/internal/buildinfo.Version=…"; a plain
// go build leaves them empty, and Line then says what the Go build info
// holds.
//
// # What it must not import
//
// It is a leaf: the standard library only.
//
// Must not import: github.com/txlog/txlog/...
package buildinfo
