package node

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// writeConfig writes a config file with mode 0600 into a new directory and
// returns its path.
func writeConfig(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "txlogd.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestConfigFileEveryFlag walks every flag txlogd defines and checks that a
// config file may set it, so that the flags and the file's keys cannot
// drift apart.
func TestConfigFileEveryFlag(t *testing.T) {
	fs := newFlagSet(&Config{}, &flagVars{})
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name == "config" || f.Name == "help-testing" {
			return
		}
		n++
		value := strconv.Quote(f.DefValue)
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			value = "true"
		}
		doc := fmt.Sprintf("# %s\n%s: %s\n", f.Usage, f.Name, value)
		got, err := parseConfigFile(fs, "every.yaml", []byte(doc))
		if err != nil || len(got) != 1 || got[0].name != f.Name || got[0].line != 2 {
			t.Errorf("flag %s: parseConfigFile(%q) = %+v, %v; want it accepted", f.Name, doc, got, err)
		}
	})
	if n < 60 {
		t.Fatalf("walked %d flags; txlogd has more", n)
	}
	for name := range listFlags {
		if fs.Lookup(name) == nil {
			t.Errorf("listFlags names %s, which is not a flag", name)
		}
	}
}

func TestConfigFilePrecedence(t *testing.T) {
	file := writeConfig(t, `# every layer sets some of these
id: n1
http-addr: 127.0.0.1:7001      # from the file alone
raft-addr: 127.0.0.1:7201
redis-addr: 127.0.0.1:6379     # TXLOG_REDIS_ADDR wins
log-level: debug               # --log-level wins
max-unresolved: 500
dedup-window: 90m
retention-respects-consumers: true
cluster: [n1=127.0.0.1:7201, "n2=127.0.0.1:7102@7"]
allowed-hosts: a.example,b.example
alert-webhook:
  - http://127.0.0.1:1/a
  - http://127.0.0.1:1/b
`)
	tests := []struct {
		name  string
		args  []string
		env   map[string]string
		check func(t *testing.T, c Config)
	}{
		{
			name: "flag over environment over file over default",
			args: []string{"--config", file, "--log-level", "warn"},
			env:  map[string]string{"TXLOG_REDIS_ADDR": "127.0.0.1:6380", "TXLOG_LOG_LEVEL": "error"},
			check: func(t *testing.T, c Config) {
				if c.ID != "n1" || c.HTTPAddr != "127.0.0.1:7001" || c.RedisAddr != "127.0.0.1:6380" || c.LogLevel != "warn" {
					t.Fatalf("id %q http %q redis %q log-level %q", c.ID, c.HTTPAddr, c.RedisAddr, c.LogLevel)
				}
				if c.MaxUnresolved != 500 || c.DedupWindow != 90*time.Minute || !c.LogRetention.RespectConsumers || c.MaxBodyBytes != DefaultMaxBodyBytes {
					t.Fatalf("max-unresolved %d dedup %v respects-consumers %v max-body %d", c.MaxUnresolved, c.DedupWindow, c.LogRetention.RespectConsumers, c.MaxBodyBytes)
				}
				if len(c.Cluster) != 2 || c.Cluster[1].NodeNumber != 7 || strings.Join(c.AllowedHosts, " ") != "a.example b.example" {
					t.Fatalf("cluster %+v allowed-hosts %q", c.Cluster, c.AllowedHosts)
				}
				if strings.Join(c.Alert.Webhooks, " ") != "http://127.0.0.1:1/a http://127.0.0.1:1/b" {
					t.Fatalf("alert webhooks %q: want the file's two", c.Alert.Webhooks)
				}
			},
		},
		{
			name: "TXLOG_CONFIG names the file",
			env:  map[string]string{"TXLOG_CONFIG": file},
			check: func(t *testing.T, c Config) {
				if c.ID != "n1" || c.HTTPAddr != "127.0.0.1:7001" || c.LogLevel != "debug" || c.RedisAddr != "127.0.0.1:6379" {
					t.Fatalf("id %q http %q log-level %q", c.ID, c.HTTPAddr, c.LogLevel)
				}
			},
		},
		{
			name: "a repeatable flag on the command line replaces the file's list",
			args: []string{"--config", file, "--alert-webhook", "http://127.0.0.1:1/c", "--retention-respects-consumers=false"},
			check: func(t *testing.T, c Config) {
				if strings.Join(c.Alert.Webhooks, " ") != "http://127.0.0.1:1/c" || c.LogRetention.RespectConsumers {
					t.Fatalf("alert webhooks %q respects-consumers %v: want the flags'", c.Alert.Webhooks, c.LogRetention.RespectConsumers)
				}
			},
		},
		{
			name: "an empty file sets nothing",
			args: []string{"--id", "n9", "--config", writeConfig(t, "# nothing yet\n")},
			check: func(t *testing.T, c Config) {
				if c.ID != "n9" || c.HTTPAddr != DefaultHTTPAddr {
					t.Fatalf("id %q http %q", c.ID, c.HTTPAddr)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseConfig(tt.args, env(tt.env))
			if err != nil {
				t.Fatalf("ParseConfig: %v", err)
			}
			tt.check(t, c)
		})
	}
}

// TestConfigFileRefused feeds bad config files and checks each is refused
// with the file, the line and the key named.
func TestConfigFileRefused(t *testing.T) {
	tests := []struct {
		name string
		text string
		mode os.FileMode // default 0600
		want []string    // each in the error, besides the file's name
	}{
		{"unknown key", "id: n1\nhttp-adr: 127.0.0.1:1\n", 0, []string{"line 2", "http-adr", "unknown key"}},
		{"a flag with its dashes", "--http-addr: 127.0.0.1:1\n", 0, []string{"line 1", "--http-addr", "unknown key"}},
		{"duplicate key", "id: n1\nlog-level: info\nlog-level: debug\n", 0, []string{"line 3", "log-level", "given twice (first on line 2)"}},
		{"a list for a single value", "id: n1\nhttp-addr: [a, b]\n", 0, []string{"line 2", "http-addr", "wrong type", "a list"}},
		{"a mapping for a value", "id: n1\nraft-addr:\n  host: a\n", 0, []string{"line 2", "raft-addr", "a mapping"}},
		{"yes for a boolean", "id: n1\nmetrics-open: yes\n", 0, []string{"line 2", "metrics-open", "want true or false"}},
		{"a quoted boolean", "id: n1\nui-open: \"true\"\n", 0, []string{"line 2", "ui-open", "want true or false"}},
		{"a boolean for a string", "id: n1\nlog-level: false\n", 0, []string{"line 2", "log-level", "the boolean"}},
		{"no value", "id: n1\nredis-addr:\n", 0, []string{"line 2", "redis-addr", "no value"}},
		{"not a number", "id: n1\nmax-unresolved: lots\n", 0, []string{"line 2", "max-unresolved", `"lots": parse error`}},
		{"not a duration", "id: n1\ndedup-window: 3 days\n", 0, []string{"line 2", "dedup-window", `"3 days": parse error`}},
		{"a bad list item", "id: n1\ncluster: [n1=127.0.0.1:1, [x]]\n", 0, []string{"line 2", "cluster", "list item"}},
		{"a list of a nonlist flag's", "id: n1\nalert-format: [json]\n", 0, []string{"line 2", "alert-format", "a list"}},
		{"an alias", "id: &a n1\nrestore: *a\n", 0, []string{"line 2", "restore", "alias"}},
		{"config in the file", "id: n1\nconfig: other.yaml\n", 0, []string{"line 2", "config", "cannot name another"}},
		{"help-testing in the file", "help-testing: true\n", 0, []string{"line 1", "help-testing", "unknown key"}},
		{"a list document", "- id: n1\n", 0, []string{"line 1", "want a mapping", "a list"}},
		{"a scalar document", "id=n1\n", 0, []string{"line 1", "want a mapping", "id=n1"}},
		{"a second document", "id: n1\n---\nid: n2\n", 0, []string{"line 2", "second YAML document"}},
		{"a key that is not a string", "id: n1\n7: x\n", 0, []string{"line 2", "want a flag's name"}},
		{"a YAML syntax error", "id: n1\nhttp-addr: [\n", 0, []string{"yaml"}},
		{"tabs", "id: n1\n\thttp-addr: x\n", 0, []string{"yaml", "line 2"}},
		{"a world-writable file", "id: n1\n", 0o666, []string{"every user may write it"}},
		{"a world-readable secret", "id: n1\nwebhook-secret: s3cret\n", 0o644, []string{"line 2", "webhook-secret", "every user may read it"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := writeConfig(t, tt.text)
			if tt.mode != 0 {
				if err := os.Chmod(file, tt.mode); err != nil {
					t.Fatal(err)
				}
			}
			_, err := ParseConfig([]string{"--config", file}, nil)
			if err == nil {
				t.Fatalf("ParseConfig(%q) accepted it", tt.text)
			}
			for _, w := range append([]string{file}, tt.want...) {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("ParseConfig(%q) = %v; want %q in it", tt.text, err, w)
				}
			}
		})
	}
	t.Run("a missing file", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "none.yaml")
		if _, err := ParseConfig([]string{"--id", "n1", "--config", missing}, nil); err == nil || !strings.Contains(err.Error(), missing) {
			t.Fatalf("ParseConfig = %v; want the missing file named", err)
		}
	})
	t.Run("a directory", func(t *testing.T) {
		dir := t.TempDir()
		if _, err := ParseConfig([]string{"--id", "n1", "--config", dir}, nil); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("ParseConfig = %v; want a directory refused", err)
		}
	})
	t.Run("a file past the size bound", func(t *testing.T) {
		file := writeConfig(t, "id: n1\n"+strings.Repeat("# padding\n", maxConfigFileBytes/10+1))
		if _, err := ParseConfig([]string{"--config", file}, nil); err == nil || !strings.Contains(err.Error(), "larger than") {
			t.Fatalf("ParseConfig = %v; want it refused", err)
		}
	})
	t.Run("a bad file is refused even when flags set its keys", func(t *testing.T) {
		file := writeConfig(t, "id: n1\nid: n2\n")
		if _, err := ParseConfig([]string{"--id", "n3", "--config", file}, nil); err == nil {
			t.Fatal("ParseConfig accepted a file with a duplicate key")
		}
	})
}

// FuzzConfigFile: parseConfigFile never panics, and every setting it
// returns names a flag and carries at least one value unless it is a list.
func FuzzConfigFile(f *testing.F) {
	for _, s := range []string{
		"id: n1\nhttp-addr: 127.0.0.1:8080\n",
		"cluster: [n1=127.0.0.1:7101, n2=127.0.0.1:7102]\nalert-webhook: []\n",
		"metrics-open: true\ndedup-window: 1h\n",
		"a: &x 1\nb: *x\n",
		"- 1\n- 2\n",
		"id: n1\n---\nid: n2\n",
		"? [a]\n: b\n",
	} {
		f.Add([]byte(s))
	}
	fs := newFlagSet(&Config{}, &flagVars{})
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := parseConfigFile(fs, "fuzz.yaml", data)
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.yaml") {
				t.Fatalf("error %v does not name the file", err)
			}
			return
		}
		for _, s := range got {
			if fs.Lookup(s.name) == nil || s.name == "config" {
				t.Fatalf("setting %+v: not a flag a file may set", s)
			}
			if len(s.values) == 0 && listFlags[s.name] != repeated {
				t.Fatalf("setting %+v: no value", s)
			}
		}
	})
}
