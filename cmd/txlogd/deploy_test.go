package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/txlog/txlog/node"
)

// The deploy files, from this package's directory.
var (
	unitPath       = filepath.Join("..", "..", "deploy", "systemd", "txlogd.service")
	envExamplePath = filepath.Join("..", "..", "deploy", "systemd", "txlogd.env")
	dockerfilePath = filepath.Join("..", "..", "Dockerfile")
	k8sDir         = filepath.Join("..", "..", "deploy", "k8s")
)

// flagEnvNames returns the TXLOG_* variable of every flag `txlogd -h` lists.
func flagEnvNames(t *testing.T) map[string]bool {
	t.Helper()
	_, err := node.ParseConfig([]string{"-h"}, nil)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("ParseConfig(-h) = %v, want the usage", err)
	}
	names := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`).FindAllStringSubmatch(err.Error(), -1) {
		names[node.EnvName(m[1])] = true
	}
	if !names["TXLOG_ID"] || !names["TXLOG_DATA_DIR"] {
		t.Fatalf("flags read from -h: %v, want TXLOG_ID and TXLOG_DATA_DIR among them", names)
	}
	return names
}

// readEnvFile reads a systemd EnvironmentFile of KEY=VALUE lines, with
// blank lines and # comments.
func readEnvFile(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%s:%d: %q: want KEY=VALUE", path, n, line)
		}
		env[k] = v
	}
	return env, nil
}

// parseUnit returns the settings of a unit file's [Service] section, each
// key with its values in order.
func parseUnit(text string) map[string][]string {
	unit := map[string][]string{}
	section := ""
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = line
		case section == "[Service]":
			if k, v, ok := strings.Cut(line, "="); ok {
				unit[k] = append(unit[k], v)
			}
		}
	}
	return unit
}

// checkUnit reports what in a unit's [Service] settings does not fit a
// txlogd whose data directory is dataDir.
func checkUnit(unit map[string][]string, dataDir string) []error {
	var errs []error
	want := func(key, value string) {
		if !slices.Contains(unit[key], value) {
			errs = append(errs, fmt.Errorf("%s=%v, want %s", key, unit[key], value))
		}
	}
	want("Type", "notify")
	want("ProtectSystem", "strict")
	want("NoNewPrivileges", "true")
	if len(unit["LimitNOFILE"]) == 0 {
		errs = append(errs, errors.New("LimitNOFILE: not set"))
	}
	if len(unit["NotifyAccess"]) > 0 && !slices.Contains(unit["NotifyAccess"], "main") && !slices.Contains(unit["NotifyAccess"], "all") {
		errs = append(errs, fmt.Errorf("NotifyAccess=%v: txlogd's main process must be heard", unit["NotifyAccess"]))
	}
	if f := strings.Join(unit["RestrictAddressFamilies"], " "); f != "" && !slices.Contains(strings.Fields(f), "AF_UNIX") {
		errs = append(errs, fmt.Errorf("RestrictAddressFamilies=%s: without AF_UNIX txlogd cannot reach the notify socket", f))
	}
	if !slices.ContainsFunc(unit["ReadWritePaths"], func(v string) bool { return slices.Contains(strings.Fields(v), dataDir) }) {
		errs = append(errs, fmt.Errorf("ReadWritePaths=%v: does not name the data directory %s, which ProtectSystem=strict leaves read-only", unit["ReadWritePaths"], dataDir))
	}
	for _, d := range unit["StateDirectory"] {
		if "/var/lib/"+d != dataDir {
			errs = append(errs, fmt.Errorf("StateDirectory=%s is /var/lib/%s, not the data directory %s", d, d, dataDir))
		}
	}
	if start := unit["ExecStart"]; len(start) != 1 || !strings.HasSuffix(strings.Fields(start[0])[0], "/txlogd") {
		errs = append(errs, fmt.Errorf("ExecStart=%v, want txlogd", start))
	}
	return errs
}

// TestSystemdUnit: the example environment file names only txlogd's flags
// and parses as its configuration, and the unit runs it as Type=notify,
// hardened, with that configuration's data directory writable.
func TestSystemdUnit(t *testing.T) {
	env, err := readEnvFile(envExamplePath)
	if err != nil {
		t.Fatal(err)
	}
	flags := flagEnvNames(t)
	for k := range env {
		if !flags[k] {
			t.Errorf("%s sets %s, which is no flag of txlogd -h", envExamplePath, k)
		}
	}
	cfg, err := node.ParseConfig(nil, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatalf("%s does not parse: %v", envExamplePath, err)
	}
	b, err := os.ReadFile(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	unit := parseUnit(string(b))
	if errs := checkUnit(unit, cfg.DataDir); len(errs) > 0 {
		t.Errorf("%s: %v", unitPath, errors.Join(errs...))
	}
	if files := unit["EnvironmentFile"]; len(files) != 1 || filepath.Base(files[0]) != filepath.Base(envExamplePath) {
		t.Errorf("EnvironmentFile=%v, want the file %s is an example of", files, envExamplePath)
	}

	// The checker finds each thing missing.
	bad := func(edit func(u map[string][]string)) map[string][]string {
		u := map[string][]string{}
		for k, v := range unit {
			u[k] = slices.Clone(v)
		}
		edit(u)
		return u
	}
	for name, tc := range map[string]struct {
		unit map[string][]string
		want string
	}{
		"simple":           {bad(func(u map[string][]string) { u["Type"] = []string{"simple"} }), "Type="},
		"no ProtectSystem": {bad(func(u map[string][]string) { delete(u, "ProtectSystem") }), "ProtectSystem="},
		"no AF_UNIX":       {bad(func(u map[string][]string) { u["RestrictAddressFamilies"] = []string{"AF_INET AF_INET6"} }), "AF_UNIX"},
		"other data dir":   {bad(func(u map[string][]string) { u["ReadWritePaths"] = []string{"/srv/txlog"} }), "ReadWritePaths="},
		"no LimitNOFILE":   {bad(func(u map[string][]string) { delete(u, "LimitNOFILE") }), "LimitNOFILE"},
		"NotifyAccess":     {bad(func(u map[string][]string) { u["NotifyAccess"] = []string{"none"} }), "NotifyAccess"},
	} {
		if err := errors.Join(checkUnit(tc.unit, cfg.DataDir)...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("checkUnit(%s) = %v, want an error naming %s", name, err, tc.want)
		}
	}
}

// dockerInstructions returns a Dockerfile's instructions in order, each as
// its keyword and its arguments, continuation lines joined.
func dockerInstructions(text string) [][2]string {
	var out [][2]string
	var cur strings.Builder
	for line := range strings.SplitSeq(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") || (trimmed == "" && cur.Len() == 0) {
			continue
		}
		if more, ok := strings.CutSuffix(trimmed, `\`); ok {
			cur.WriteString(more + " ")
			continue
		}
		cur.WriteString(trimmed)
		kw, args, _ := strings.Cut(strings.TrimSpace(cur.String()), " ")
		out = append(out, [2]string{strings.ToUpper(kw), strings.TrimSpace(args)})
		cur.Reset()
	}
	return out
}

// checkDockerfile reports what in a Dockerfile does not fit txlogd: its
// build stage must run scripts/release.sh for the image's platform, as
// TestRelease runs it for the host's; its runtime stage must be scratch, run
// as a non-root user with /data as a volume and TXLOG_DATA_DIR, set only
// txlogd's variables (flags holds them), and check /healthz with txlogd
// --healthcheck.
func checkDockerfile(text string, flags map[string]bool) []error {
	var errs []error
	var froms, runs []string
	var user, volume, health string
	env := map[string]string{}
	for _, in := range dockerInstructions(text) {
		switch in[0] {
		case "FROM":
			froms = append(froms, in[1])
		case "RUN":
			runs = append(runs, in[1])
		case "USER":
			user = in[1]
		case "VOLUME":
			volume = in[1]
		case "HEALTHCHECK":
			health = in[1]
		case "ENV":
			for _, kv := range strings.Fields(in[1]) {
				k, v, _ := strings.Cut(kv, "=")
				env[k] = v
			}
		}
	}
	if len(froms) < 2 || froms[len(froms)-1] != "scratch" {
		errs = append(errs, fmt.Errorf("FROM %v: want a build stage, then scratch", froms))
	}
	if !slices.ContainsFunc(runs, func(r string) bool {
		return strings.Contains(r, `TXLOG_RELEASE_PLATFORMS="${TARGETOS}/${TARGETARCH}"`) && strings.Contains(r, "scripts/release.sh ")
	}) {
		errs = append(errs, fmt.Errorf("no RUN of scripts/release.sh with TXLOG_RELEASE_PLATFORMS=\"${TARGETOS}/${TARGETARCH}\" (the build TestRelease tests): %q", runs))
	}
	if u, _, _ := strings.Cut(user, ":"); u == "" || u == "0" || u == "root" {
		errs = append(errs, fmt.Errorf("USER %q: want a non-root user", user))
	}
	if !strings.Contains(volume, `"/data"`) || env["TXLOG_DATA_DIR"] != "/data" {
		errs = append(errs, fmt.Errorf("VOLUME %s, TXLOG_DATA_DIR=%q: want /data for both", volume, env["TXLOG_DATA_DIR"]))
	}
	for k := range env {
		if strings.HasPrefix(k, "TXLOG_") && !flags[k] {
			errs = append(errs, fmt.Errorf("ENV %s: no flag of txlogd -h", k))
		}
	}
	_, cmd, _ := strings.Cut(health, "CMD ")
	var args []string
	for _, a := range strings.Split(strings.Trim(cmd, "[] "), ",") {
		args = append(args, strings.Trim(strings.TrimSpace(a), `"`))
	}
	if len(args) < 2 || filepath.Base(args[0]) != "txlogd" {
		return append(errs, fmt.Errorf("HEALTHCHECK %q: want CMD [\"…/txlogd\", \"--healthcheck\", URL]", health))
	}
	if u, ok, err := healthcheckURL(args[1:]); !ok || err != nil || !strings.HasSuffix(u, "/healthz") {
		errs = append(errs, fmt.Errorf("HEALTHCHECK %q: txlogd would take it as %q, %v, %v; want --healthcheck of /healthz", health, u, ok, err))
	}
	return errs
}

// TestDockerfile: the Dockerfile passes checkDockerfile, and the check
// finds each thing broken.
func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile(dockerfilePath)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	flags := flagEnvNames(t)
	if err := errors.Join(checkDockerfile(text, flags)...); err != nil {
		t.Fatalf("%s: %v", dockerfilePath, err)
	}
	for _, tc := range []struct{ name, old, new, want string }{
		{"distro runtime", "FROM scratch", "FROM debian", "FROM"},
		{"root", "USER 65532:65532", "USER root", "USER"},
		{"other build", "scripts/release.sh \"${VERSION}\"", "go build ./cmd/txlogd", "no RUN of scripts/release.sh"},
		{"readyz", "8080/healthz", "8080/readyz", "HEALTHCHECK"},
		{"curl", `CMD ["/usr/local/bin/txlogd", "--healthcheck",`, `CMD ["curl", "-f",`, "HEALTHCHECK"},
		{"no volume", `VOLUME ["/data"]`, `VOLUME ["/var/lib/txlog"]`, "VOLUME"},
		{"unknown variable", "ENV TXLOG_DATA_DIR=/data", "ENV TXLOG_DATADIR=/data TXLOG_DATA_DIR=/data", "TXLOG_DATADIR"},
	} {
		if !strings.Contains(text, tc.old) {
			t.Fatalf("%s: the Dockerfile has no %q to change", tc.name, tc.old)
		}
		err := errors.Join(checkDockerfile(strings.Replace(text, tc.old, tc.new, 1), flags)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("checkDockerfile(%s) = %v, want an error naming %s", tc.name, err, tc.want)
		}
	}
}

// checkStatefulSet reports what in statefulset.yaml does not fit txlogd:
// its TXLOG_* variables must be txlogd's (flags holds them) and, with a
// pod's name and namespace put in, parse as a configuration whose ID is the
// pod's name among the --cluster members, for each of the replicas; the pods
// start in parallel; liveness and startup ask /healthz, readiness /readyz.
func checkStatefulSet(text string, flags map[string]bool) []error {
	var errs []error
	env := map[string]string{}
	for _, m := range regexp.MustCompile(`- name: (TXLOG_\w+)\n\s+value: (.*)`).FindAllStringSubmatch(text, -1) {
		if !flags[m[1]] {
			errs = append(errs, fmt.Errorf("%s: no flag of txlogd -h", m[1]))
		}
		env[m[1]] = strings.TrimSpace(m[2])
	}
	if !strings.Contains(text, "podManagementPolicy: Parallel") {
		errs = append(errs, errors.New("podManagementPolicy: not Parallel (txlog-0 would wait for a readiness that needs txlog-1)"))
	}
	replicas := regexp.MustCompile(`(?m)^  replicas: (\d+)$`).FindStringSubmatch(text)
	if replicas == nil {
		return append(errs, errors.New("replicas: not found"))
	}
	n, _ := strconv.Atoi(replicas[1])
	for i := range n {
		pod := fmt.Sprintf("txlog-%d", i)
		cfg, err := node.ParseConfig(nil, func(k string) (string, bool) {
			v, ok := env[k]
			return strings.NewReplacer("$(POD_NAME)", pod, "$(POD_NAMESPACE)", "default").Replace(v), ok
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("pod %s: the variables do not parse: %w", pod, err))
			continue
		}
		if cfg.ID != pod || len(cfg.Cluster) != n {
			errs = append(errs, fmt.Errorf("pod %s: id %q, cluster %v: want its own name among %d members", pod, cfg.ID, cfg.Cluster, n))
		}
	}
	for kind, want := range map[string]string{"livenessProbe": "/healthz", "startupProbe": "/healthz", "readinessProbe": "/readyz"} {
		_, rest, _ := strings.Cut(text, kind+":")
		m := regexp.MustCompile(`path: (\S+)`).FindStringSubmatch(rest)
		if m == nil || m[1] != want {
			errs = append(errs, fmt.Errorf("%s: path %v, want %s", kind, m, want))
		}
	}
	return errs
}

// TestK8sManifests: statefulset.yaml passes checkStatefulSet, the check
// finds each thing broken, and the Services and the budget are there.
func TestK8sManifests(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(k8sDir, "statefulset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	flags := flagEnvNames(t)
	if err := errors.Join(checkStatefulSet(text, flags)...); err != nil {
		t.Fatalf("statefulset.yaml: %v", err)
	}
	for _, tc := range []struct{ name, old, new, want string }{
		{"ordered", "podManagementPolicy: Parallel", "podManagementPolicy: OrderedReady", "podManagementPolicy"},
		{"readiness on healthz", "path: /readyz", "path: /healthz", "readinessProbe"},
		{"liveness on readyz", "path: /healthz", "path: /readyz", "livenessProbe"},
		{"four replicas", "replicas: 3", "replicas: 4", "txlog-3"},
		{"raft address off its entry", "value: $(POD_NAME).txlog-peers:7101", "value: $(POD_NAME).txlog:7101", "does not match raft-addr"},
		{"unknown variable", "name: TXLOG_DATA_DIR", "name: TXLOG_DATADIR", "TXLOG_DATADIR"},
	} {
		if !strings.Contains(text, tc.old) {
			t.Fatalf("%s: statefulset.yaml has no %q to change", tc.name, tc.old)
		}
		err := errors.Join(checkStatefulSet(strings.Replace(text, tc.old, tc.new, 1), flags)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("checkStatefulSet(%s) = %v, want an error naming %s", tc.name, err, tc.want)
		}
	}
	for _, f := range []string{"service.yaml", "pdb.yaml"} {
		if _, err := os.Stat(filepath.Join(k8sDir, f)); err != nil {
			t.Error(err)
		}
	}
}
