package main

import (
	"bufio"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// releaseScript is scripts/release.sh, from this package's directory.
var releaseScript = filepath.Join("..", "..", "scripts", "release.sh")

// sumLine is one line of sha256sum's output: the hex digest, two spaces (or
// a space and * for binary mode) and the file name.
var sumLine = regexp.MustCompile(`^([0-9a-f]{64}) [ *]([^/]+)$`)

// verifySums checks dir/SHA256SUMS as `sha256sum -c` would, and more: every
// line parses, each file it lists has that digest, it lists at least one
// file, and every other file in dir is listed.
func verifySums(dir string) error {
	f, err := os.Open(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		return err
	}
	defer f.Close()
	listed := map[string]bool{}
	var errs []error
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		m := sumLine.FindStringSubmatch(sc.Text())
		if m == nil {
			errs = append(errs, fmt.Errorf("SHA256SUMS line %d %q: want <sha256 hex>  <name>", n, sc.Text()))
			continue
		}
		name := m[2]
		if listed[name] {
			errs = append(errs, fmt.Errorf("SHA256SUMS lists %s twice", name))
		}
		listed[name] = true
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			errs = append(errs, fmt.Errorf("SHA256SUMS lists %s: %w", name, err))
			continue
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != m[1] {
			errs = append(errs, fmt.Errorf("%s: sha256 %x, SHA256SUMS says %s", name, sum, m[1]))
		}
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, err)
	}
	if len(listed) == 0 {
		errs = append(errs, errors.New("SHA256SUMS lists no file"))
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() != "SHA256SUMS" && !listed[e.Name()] {
			errs = append(errs, fmt.Errorf("%s is not in SHA256SUMS", e.Name()))
		}
	}
	return errors.Join(errs...)
}

// TestRelease runs scripts/release.sh for the host's platform alone (as the
// Dockerfile's build stage does for the image's) into a directory of the
// test's, then checks SHA256SUMS, that both binaries are static and built
// with -trimpath and CGO_ENABLED=0, and runs them: txlogd --version names the
// version stamped.
func TestRelease(t *testing.T) {
	const version = "v0.0.0-releasetest"
	platform := runtime.GOOS + "/" + runtime.GOARCH
	out := t.TempDir()
	cmd := exec.Command("bash", releaseScript, version, out)
	cmd.Env = append(os.Environ(), "TXLOG_RELEASE_PLATFORMS="+platform)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("release.sh %s %s: %v\n%s", version, out, err, b)
	}
	if err := verifySums(out); err != nil {
		t.Fatalf("SHA256SUMS: %v", err)
	}
	suffix := "-" + version + "-" + runtime.GOOS + "-" + runtime.GOARCH
	for _, name := range []string{"txlogd" + suffix, "txlog" + suffix} {
		bin := filepath.Join(out, name)
		info, err := buildinfo.ReadFile(bin)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		settings := map[string]string{}
		for _, s := range info.Settings {
			settings[s.Key] = s.Value
		}
		// With -trimpath the build info leaves -ldflags out (it may name
		// paths): txlogd --version below shows the version stamped.
		if settings["CGO_ENABLED"] != "0" || settings["-trimpath"] != "true" || settings["GOOS"]+"/"+settings["GOARCH"] != platform {
			t.Errorf("%s: build settings %v, want CGO_ENABLED=0, -trimpath=true, %s", name, settings, platform)
		}
		if runtime.GOOS == "linux" {
			f, err := elf.Open(bin)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if i := slices.IndexFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP }); i >= 0 {
				t.Errorf("%s has a program interpreter (PT_INTERP): not a static binary", name)
			}
			f.Close()
		}
	}

	b, err := exec.Command(filepath.Join(out, "txlogd"+suffix), "--version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(b), "txlogd "+version+" revision ") {
		t.Errorf("txlogd --version = %q, %v; want txlogd %s revision ...", b, err, version)
	}
	if b, err := exec.Command(filepath.Join(out, "txlog"+suffix), "help").CombinedOutput(); err != nil {
		t.Errorf("txlog help: %v\n%s", err, b)
	}

	// A binary changed after the release was built no longer matches.
	bin := filepath.Join(out, "txlogd"+suffix)
	b, err = os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 1
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := verifySums(out); err == nil || !strings.Contains(err.Error(), "txlogd"+suffix+": sha256") {
		t.Errorf("verifySums after a flipped bit = %v, want a mismatch naming txlogd%s", err, suffix)
	}
}

// TestReleaseRefusesBadArguments: release.sh exits 2 and builds nothing for
// a bad VERSION, platform or revision.
func TestReleaseRefusesBadArguments(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  string
	}{
		{"no version", nil, ""},
		{"empty version", []string{""}, ""},
		{"version with a slash", []string{"v1/../../x"}, ""},
		{"version with a space", []string{"v1 x"}, ""},
		{"version starting with a dot", []string{".hidden"}, ""},
		{"too many arguments", []string{"v1", "out", "more"}, ""},
		{"bad platform", []string{"v1"}, "TXLOG_RELEASE_PLATFORMS=linux/amd64;true"},
		{"platform without arch", []string{"v1"}, "TXLOG_RELEASE_PLATFORMS=linux"},
		{"bad revision", []string{"v1"}, "TXLOG_REVISION=$(true)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			script, err := filepath.Abs(releaseScript)
			if err != nil {
				t.Fatal(err)
			}
			args := append([]string{script}, tc.args...)
			if len(tc.args) == 1 {
				args = append(args, filepath.Join(dir, "out"))
			}
			cmd := exec.Command("bash", args...)
			cmd.Dir = dir
			cmd.Env = os.Environ()
			if tc.env != "" {
				cmd.Env = append(cmd.Env, tc.env)
			}
			b, err := cmd.CombinedOutput()
			if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != 2 {
				t.Errorf("release.sh %q: %v (%s), want exit status 2", tc.args, err, b)
			}
			if entries, _ := os.ReadDir(filepath.Join(dir, "out")); len(entries) > 0 {
				t.Errorf("release.sh %q built %d files", tc.args, len(entries))
			}
		})
	}
}

// TestVerifySums: the checksum check fails on every kind of bad
// SHA256SUMS and passes the good one.
func TestVerifySums(t *testing.T) {
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	files := map[string]string{"a": "alpha", "b": "beta"}
	good := sum("alpha") + "  a\n" + sum("beta") + "  b\n"
	for _, tc := range []struct {
		name, sums string
		extra      string // a file written besides a and b
		want       string // "" for nil, else a part of the error
	}{
		{"good", good, "", ""},
		{"binary mode", sum("alpha") + " *a\n" + sum("beta") + " *b\n", "", ""},
		{"wrong digest", sum("alpha") + "  a\n" + sum("gamma") + "  b\n", "", "b: sha256"},
		{"listed, missing", good + sum("x") + "  c\n", "", "lists c"},
		{"not listed", good, "d", "d is not in SHA256SUMS"},
		{"malformed", good + "xyz  a\n", "", "line 3"},
		{"a path", good + sum("x") + "  ../etc/passwd\n", "", "line 3"},
		{"twice", good + sum("alpha") + "  a\n", "", "a twice"},
		{"empty", "", "", "lists no file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, body := range files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tc.extra != "" {
				if err := os.WriteFile(filepath.Join(dir, tc.extra), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(tc.sums), 0o644); err != nil {
				t.Fatal(err)
			}
			err := verifySums(dir)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("verifySums() = %v, want %q", err, tc.want)
			}
		})
	}
}
