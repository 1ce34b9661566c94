package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// memStatus is a process's memory use as /proc/PID/status reports it.
type memStatus struct {
	RSSBytes int64 // VmRSS: resident now
	HWMBytes int64 // VmHWM: the most that was ever resident
	// AnonBytes and FileBytes split VmRSS: anonymous memory (the Go heap and
	// stacks) and pages of mapped files (bbolt maps its files). 0 on kernels
	// before 4.5, which do not report them.
	AnonBytes int64 // RssAnon
	FileBytes int64 // RssFile
}

// readMemStatus reads /proc/PID/status of process pid.
func readMemStatus(pid int) (memStatus, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return memStatus{}, err
	}
	defer f.Close()
	m, err := parseMemStatus(f)
	if err != nil {
		return memStatus{}, fmt.Errorf("/proc/%d/status: %w", pid, err)
	}
	return m, nil
}

// parseMemStatus reads VmRSS, VmHWM, RssAnon and RssFile from the text of
// /proc/PID/status, lines such as "VmRSS:\t   12345 kB". VmRSS and VmHWM must
// be there.
func parseMemStatus(r io.Reader) (memStatus, error) {
	var m memStatus
	fields := map[string]*int64{
		"VmRSS": &m.RSSBytes, "VmHWM": &m.HWMBytes, "RssAnon": &m.AnonBytes, "RssFile": &m.FileBytes,
	}
	var haveRSS, haveHWM bool
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || fields[name] == nil {
			continue
		}
		f := strings.Fields(value)
		if len(f) != 2 || f[1] != "kB" {
			return memStatus{}, fmt.Errorf("%s: %q: want <number> kB", name, strings.TrimSpace(value))
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || kb < 0 {
			return memStatus{}, fmt.Errorf("%s: %q: want <number> kB", name, strings.TrimSpace(value))
		}
		*fields[name] = kb << 10
		haveRSS = haveRSS || name == "VmRSS"
		haveHWM = haveHWM || name == "VmHWM"

	}
	if err := sc.Err(); err != nil {
		return memStatus{}, err
	}
	if !haveRSS || !haveHWM {
		return memStatus{}, errors.New("no VmRSS or no VmHWM line")
	}
	return m, nil
}

// diskEntry is the size of one entry of a node's data dir: a file, or a
// directory with everything in it.
type diskEntry struct {
	Name  string `json:"name"` // relative to the data dir, with '/'
	Bytes int64  `json:"bytes"`
}

// expandDirs are the data-dir entries whose children are reported one by one:
// raft/ holds the Raft log (raft.db, or wal/ with --raft-log=wal) next to the
// snapshots.
var expandDirs = []string{"raft"}

// dirUsage returns the apparent size of every top-level entry of dir, and of
// the children of the entries in expandDirs instead of the entries
// themselves, sorted by name. Files that vanish while it looks (a snapshot
// being replaced) are skipped.
func dirUsage(dir string) ([]diskEntry, error) {
	var out []diskEntry
	var walk func(rel string, expand bool) error
	walk = func(rel string, expand bool) error {
		ents, err := os.ReadDir(filepath.Join(dir, rel))
		if err != nil {
			return err
		}
		for _, e := range ents {
			name := e.Name()
			if rel != "" {
				name = rel + "/" + name
			}
			if expand && e.IsDir() && slices.Contains(expandDirs, name) {
				if err := walk(name, false); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return err
				}
				continue
			}
			n, err := treeBytes(filepath.Join(dir, filepath.FromSlash(name)))
			if err != nil {
				return err
			}
			out = append(out, diskEntry{Name: name, Bytes: n})
		}
		return nil
	}
	if err := walk("", true); err != nil {
		return nil, fmt.Errorf("size of %s: %w", dir, err)
	}
	slices.SortFunc(out, func(a, b diskEntry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// treeBytes returns the summed apparent size of the regular files at or
// under path; what vanishes meanwhile counts as 0.
func treeBytes(path string) (int64, error) {
	var n int64
	err := filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		n += fi.Size()
		return nil
	})
	return n, err
}

// Kinds of data-dir entries in the table.
const (
	kindStore     = "store"     // state.db, the bbolt state machine
	kindRaftLog   = "raft log"  // raft/raft.db or raft/wal
	kindSnapshots = "snapshots" // raft/snapshots
	kindIntake    = "intake"    // wal/, the intake WAL
	kindOther     = "other"
)

// diskKind names what a data-dir entry from dirUsage holds.
func diskKind(name string) string {
	switch {
	case name == "state.db":
		return kindStore
	case name == "raft/snapshots":
		return kindSnapshots
	case strings.HasPrefix(name, "raft/"):
		return kindRaftLog
	case name == "wal":
		return kindIntake
	}
	return kindOther
}

// diskByKind sums entries by diskKind.
func diskByKind(es []diskEntry) map[string]int64 {
	m := map[string]int64{}
	for _, e := range es {
		m[diskKind(e.Name)] += e.Bytes
	}
	return m
}
