package node

import (
	"flag"
	"io"
)

// flagGroups are the headings of `txlogd -h`, in the order it prints them.
var flagGroups = []string{"cluster", "storage", "network", "security", "tuning"}

// otherGroup is the heading of the operator's flags that flagGroup does not
// name; -h prints it last, and only when it has a flag.
const otherGroup = "other"

// flagGroup says under which heading of `txlogd -h` each operator flag is
// listed. A flag it does not name is listed under otherGroup: name a new flag
// here. Some names are flags that are not defined yet (backup, restore,
// recovery, the config file); an entry without its flag lists nothing.
var flagGroup = map[string]string{
	// cluster: who the members are and how this node becomes one.
	"id":          "cluster",
	"cluster":     "cluster",
	"join":        "cluster",
	"node-number": "cluster",
	"restore":     "cluster",
	"recover":     "cluster",
	"config":      "cluster",

	// storage: what the node keeps on disk and for how long.
	"data-dir":                     "storage",
	"raft-log":                     "storage",
	"intake-wal":                   "storage",
	"intake-wal-segment-bytes":     "storage",
	"store-commit-interval":        "storage",
	"log-retention":                "storage",
	"retention-respects-consumers": "storage",
	"dedup-window":                 "storage",
	"backup-dir":                   "storage",
	"backup-interval":              "storage",
	"backup-keep":                  "storage",

	// network: where it listens and what it reaches.
	"http-addr":           "network",
	"advertise-http-addr": "network",
	"raft-addr":           "network",
	"redis-addr":          "network",
	"debug-addr":          "network",
	"metrics-addr":        "network",
	"webhook-allow":       "network",

	// security: TLS, credentials and what a browser or a callback may do.
	"tls-cert-file":         "security",
	"tls-key-file":          "security",
	"tls-client-ca-file":    "security",
	"peer-tls-cert-file":    "security",
	"peer-tls-key-file":     "security",
	"peer-tls-ca-file":      "security",
	"peer-cert-allowed-cn":  "security",
	"peer-tls-mode":         "security",
	"peer-secret-file":      "security",
	"auth-file":             "security",
	"metrics-open":          "security",
	"ui-open":               "security",
	"allowed-origins":       "security",
	"allowed-hosts":         "security",
	"webhook-allow-private": "security",
	"webhook-secret":        "security",
	"join-token-file":       "security",
	"join-ca-file":          "security",

	// tuning: bounds, timeouts, logging and alert thresholds.
	"max-unresolved":           "tuning",
	"max-body-bytes":           "tuning",
	"max-streams":              "tuning",
	"shutdown-timeout":         "tuning",
	"log-level":                "tuning",
	"webhook-horizon":          "tuning",
	"alert-webhook":            "tuning",
	"alert-format":             "tuning",
	"alert-no-leader-for":      "tuning",
	"alert-leader-changed-for": "tuning",
	"alert-unreachable-for":    "tuning",
	"alert-parked-max":         "tuning",
	"alert-parked-age":         "tuning",
	"alert-fsync-p99":          "tuning",
	"alert-fsync-for":          "tuning",
	"alert-disk-free-percent":  "tuning",
	"help-testing":             "tuning",
}

// groupOf returns the heading of -h that lists flag name.
func groupOf(name string) string {
	if g, ok := flagGroup[name]; ok {
		return g
	}
	return otherGroup
}

// printGroups writes the flags of fs that keep says to keep under the
// headings of flagGroups (then otherGroup), each heading followed by
// flag.PrintDefaults's listing of its flags; a heading with no flag is left
// out.
func printGroups(w io.Writer, fs *flag.FlagSet, keep func(name string) bool) {
	groups := append(append([]string(nil), flagGroups...), otherGroup)
	for _, g := range groups {
		in := func(name string) bool { return keep(name) && groupOf(name) == g }
		found := false
		fs.VisitAll(func(f *flag.Flag) { found = found || in(f.Name) })
		if !found {
			continue
		}
		io.WriteString(w, "\n"+g+":\n")
		printDefaults(w, fs, in)
	}
}
