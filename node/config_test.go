package node

import (
	"context"
	"errors"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/store"

	"github.com/prometheus/client_golang/prometheus"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestParseConfig(t *testing.T) {
	const cluster = "n1=127.0.0.1:7101,n2=127.0.0.1:7102,n3=127.0.0.1:7103"
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		check   func(t *testing.T, c Config)
		wantErr string
	}{
		{
			name: "flags",
			args: []string{"--id", "n2", "--raft-addr", "127.0.0.1:7102", "--cluster", cluster, "--http-addr", "127.0.0.1:0"},
			check: func(t *testing.T, c Config) {
				if c.ID != "n2" || c.NodeNumber != 0 || len(c.Cluster) != 3 || c.DataDir != "data/n2" {
					t.Fatalf("config = %+v", c)
				}
				if c.DedupWindow != 24*time.Hour || c.MaxBodyBytes != 1<<20 || c.Forward != ForwardStream || c.LogRetention.On() {
					t.Fatalf("defaults not filled: %+v", c)
				}
			},
		},
		{
			name: "the HTTP fast path: on by default, off by flag or environment",
			args: []string{"--id", "n1"},
			check: func(t *testing.T, c Config) {
				if c.NoHTTPFastPath {
					t.Fatal("the fast path is off by default")
				}
				for _, off := range []struct {
					args []string
					env  map[string]string
				}{
					{[]string{"--id", "n1", "--http-fast-path=false"}, nil},
					{[]string{"--id", "n1"}, map[string]string{"TXLOG_HTTP_FAST_PATH": "false"}},
				} {
					c, err := ParseConfig(off.args, env(off.env))
					if err != nil || !c.NoHTTPFastPath {
						t.Fatalf("%v %v: NoHTTPFastPath %v, %v", off.args, off.env, c.NoHTTPFastPath, err)
					}
				}
				if _, err := ParseConfig([]string{"--id", "n1", "--http-fast-path=maybe"}, nil); err == nil {
					t.Fatal("--http-fast-path=maybe accepted")
				}
			},
		},
		{
			name: "client stream bound: 1024 by default, set by flag, never negative",
			args: []string{"--id", "n1"},
			check: func(t *testing.T, c Config) {
				if c.ClientStreamInflight != 1024 {
					t.Fatalf("ClientStreamInflight = %d, want 1024", c.ClientStreamInflight)
				}
				if c, err := ParseConfig([]string{"--id", "n1", "--client-stream-inflight", "8"}, nil); err != nil || c.ClientStreamInflight != 8 {
					t.Fatalf("--client-stream-inflight 8: %d, %v", c.ClientStreamInflight, err)
				}
				if _, err := ParseConfig([]string{"--id", "n1", "--client-stream-inflight", "-1"}, nil); err == nil || !strings.Contains(err.Error(), "client-stream-inflight") {
					t.Fatalf("--client-stream-inflight -1: %v, want an error naming it", err)
				}
			},
		},
		{
			name: "env fills what flags leave out",
			args: []string{"--id", "n1"},
			env:  map[string]string{"TXLOG_ID": "ignored", "TXLOG_RAFT_ADDR": "127.0.0.1:7101", "TXLOG_CLUSTER": cluster, "TXLOG_DEDUP_WINDOW": "1h"},
			check: func(t *testing.T, c Config) {
				if c.ID != "n1" || c.RaftAddr != "127.0.0.1:7101" || c.DedupWindow != time.Hour {
					t.Fatalf("config = %+v", c)
				}
			},
		},
		{
			name: "join",
			args: []string{"--id", "n4", "--join", "http://127.0.0.1:8081"},
			check: func(t *testing.T, c Config) {
				if c.Join != "http://127.0.0.1:8081" || c.NodeNumber != 0 {
					t.Fatalf("config = %+v", c)
				}
			},
		},
		{
			name: "forward",
			args: []string{"--id", "n1"},
			env:  map[string]string{"TXLOG_FORWARD": "http"},
			check: func(t *testing.T, c Config) {
				if c.Forward != ForwardHTTP || c.IntakeWAL != IntakeParallel {
					t.Fatalf("config = %+v", c)
				}
			},
		},
		{
			name: "intake WAL segment size",
			args: []string{"--id", "n1", "--max-body-bytes", "65536", "--intake-wal-segment-bytes", "131072"},
			check: func(t *testing.T, c Config) {
				if c.IntakeWALSegmentBytes != 128<<10 {
					t.Fatalf("IntakeWALSegmentBytes = %d, want 128 KiB", c.IntakeWALSegmentBytes)
				}
			},
		},
		{
			name: "intake WAL segment size by default",
			args: []string{"--id", "n1"},
			check: func(t *testing.T, c Config) {
				if c.IntakeWALSegmentBytes != 64<<20 {
					t.Fatalf("IntakeWALSegmentBytes = %d, want 64 MiB", c.IntakeWALSegmentBytes)
				}
			},
		},
		{name: "intake WAL segment smaller than a body", args: []string{"--id", "n1", "--intake-wal-segment-bytes", "1048576"}, wantErr: "intake-wal-segment-bytes 1048576: at least max-body-bytes + 1024 (1049600)"},
		{name: "bad forward", args: []string{"--id", "n1", "--forward", "pigeon"}, wantErr: "forward \"pigeon\""},
		{name: "missing id", args: nil, wantErr: "id: required"},
		{name: "cluster and join", args: []string{"--id", "n1", "--cluster", cluster, "--join", "http://x:1"}, wantErr: "give one, not both"},
		{name: "cluster without self", args: []string{"--id", "n9", "--cluster", cluster}, wantErr: "does not list"},
		{name: "raft addr mismatch", args: []string{"--id", "n1", "--raft-addr", "127.0.0.1:9", "--cluster", cluster}, wantErr: "does not match raft-addr"},
		{name: "bad cluster entry", args: []string{"--id", "n1", "--cluster", "n1"}, wantErr: "want id=host:port"},
		{name: "bad env duration", args: []string{"--id", "n1"}, env: map[string]string{"TXLOG_DEDUP_WINDOW": "soon"}, wantErr: "TXLOG_DEDUP_WINDOW"},
		{
			name: "node numbers in --cluster",
			args: []string{"--id", "b", "--raft-addr", "127.0.0.1:7102", "--cluster", "a=127.0.0.1:7101@7,b=127.0.0.1:7102,c=127.0.0.1:7103@9"},
			check: func(t *testing.T, c Config) {
				if c.Cluster[0].NodeNumber != 7 || c.Cluster[0].RaftAddr != "127.0.0.1:7101" || c.Cluster[1].NodeNumber != 0 || c.Cluster[2].NodeNumber != 9 {
					t.Fatalf("Cluster = %+v", c.Cluster)
				}
			},
		},
		{name: "node number out of range", args: []string{"--id", "n1", "--node-number", "1024"}, wantErr: "node-number 1024"},
		{name: "duplicate node numbers in --cluster", args: []string{"--id", "a", "--raft-addr", "127.0.0.1:7101", "--cluster", "a=127.0.0.1:7101@3,b=127.0.0.1:7102@3"}, wantErr: "node number 3 given to both a and b"},
		{name: "node number in --cluster out of range", args: []string{"--id", "a", "--raft-addr", "127.0.0.1:7101", "--cluster", "a=127.0.0.1:7101@0"}, wantErr: "node number \"0\""},
		{name: "--node-number differs from --cluster", args: []string{"--id", "a", "--raft-addr", "127.0.0.1:7101", "--node-number", "4", "--cluster", "a=127.0.0.1:7101@3"}, wantErr: "a has node number 3, node-number says 4"},
		{name: "node number in --raft-dial", args: []string{"--id", "n1", "--raft-dial", "n2=127.0.0.1:9@2"}, wantErr: "without @"},
		{
			name: "log retention: off by default, by flag or environment",
			args: []string{"--id", "n1", "--log-retention", "1000000,24h", "--retention-respects-consumers"},
			check: func(t *testing.T, c Config) {
				if want := (store.Retention{Entries: 1000000, Age: 24 * time.Hour, RespectConsumers: true}); c.LogRetention != want {
					t.Fatalf("LogRetention = %+v, want %+v", c.LogRetention, want)
				}
			},
		},
		{
			name: "log retention from the environment",
			args: []string{"--id", "n1"},
			env:  map[string]string{"TXLOG_LOG_RETENTION": "1000"},
			check: func(t *testing.T, c Config) {
				if c.LogRetention != (store.Retention{Entries: 1000}) {
					t.Fatalf("LogRetention = %+v", c.LogRetention)
				}
			},
		},
		{
			name: "store kv flush records",
			args: []string{"--id", "n1", "--store-kv-flush-records", "200"},
			check: func(t *testing.T, c Config) {
				if c.StoreKVFlushRecords != 200 {
					t.Fatalf("StoreKVFlushRecords = %d, want 200", c.StoreKVFlushRecords)
				}
			},
		},
		{name: "negative store kv flush records", args: []string{"--id", "n1", "--store-kv-flush-records", "-1"}, wantErr: "store-kv-flush-records"},
		{name: "bad log retention", args: []string{"--id", "n1", "--log-retention", "soon"}, wantErr: "log-retention"},
		{name: "bad log level", args: []string{"--id", "n1", "--log-level", "loud"}, wantErr: "log-level"},
		{name: "stray argument", args: []string{"--id", "n1", "extra"}, wantErr: "unexpected arguments"},
		{name: "several problems at once", args: []string{"--id", "", "--http-addr", "nope", "--dedup-window", "1s"}, wantErr: "dedup-window"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseConfig(tt.args, env(tt.env))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseConfig() error = %v, want it to mention %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseConfig() error = %v", err)
			}
			tt.check(t, c)
		})
	}
}

func TestEnvName(t *testing.T) {
	if got := EnvName("http-addr"); got != "TXLOG_HTTP_ADDR" {
		t.Fatalf("EnvName(http-addr) = %q", got)
	}
}

func TestFileRSS(t *testing.T) {
	rss, ok := fileRSS()
	if _, err := os.Stat("/proc/self/status"); err != nil {
		if ok {
			t.Errorf("fileRSS() = %d, true without /proc/self/status", rss)
		}
		return
	}
	if !ok || rss <= 0 {
		t.Errorf("fileRSS() = %d, %v; want the process's file-backed RSS (its binary at least)", rss, ok)
	}
}

// TestParseConfigTestingFlags: the flags only tests and A/B runs use are
// absent from -h, listed by -help-testing under its heading, and still parse
// from arguments and the environment.
func TestParseConfigTestingFlags(t *testing.T) {
	_, err := ParseConfig([]string{"-h"}, nil)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: error %v, want flag.ErrHelp", err)
	}
	help := err.Error()
	for _, name := range []string{"-id", "-http-addr", "-intake-wal", "-store-commit-interval", "-help-testing"} {
		if !strings.Contains(help, "\n  "+name+" ") && !strings.Contains(help, "\n  "+name+"\n") {
			t.Errorf("-h does not list %s:\n%s", name, help)
		}
	}
	_, err = ParseConfig([]string{"-help-testing"}, nil)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-help-testing: error %v, want flag.ErrHelp", err)
	}
	testingHelp := err.Error()
	if !strings.Contains(testingHelp, "testing only — not for production") {
		t.Errorf("-help-testing has no heading:\n%s", testingHelp)
	}
	if strings.Contains(testingHelp, "\n  -id ") || strings.Contains(testingHelp, "\n  -http-addr ") {
		t.Errorf("-help-testing lists the operator's flags:\n%s", testingHelp)
	}
	for _, name := range []string{"raft-dial", "raft-serial-append", "http-fast-path", "forward"} {
		if strings.Contains(help, "-"+name) {
			t.Errorf("-h lists %s:\n%s", name, help)
		}
		if !strings.Contains(testingHelp, "\n  -"+name+" ") && !strings.Contains(testingHelp, "\n  -"+name+"\n") {
			t.Errorf("-help-testing does not list %s:\n%s", name, testingHelp)
		}
	}

	check := func(t *testing.T, c Config) {
		if c.RaftDial["n2"] != "127.0.0.1:9" || !c.RaftSerialAppend || !c.NoHTTPFastPath || c.Forward != ForwardHTTP {
			t.Fatalf("config = %+v", c)
		}
	}
	c, err := ParseConfig([]string{"--id", "n1", "--raft-dial", "n2=127.0.0.1:9", "--raft-serial-append", "--http-fast-path=false", "--forward", "http"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	check(t, c)
	c, err = ParseConfig([]string{"--id", "n1"}, env(map[string]string{
		"TXLOG_RAFT_DIAL": "n2=127.0.0.1:9", "TXLOG_RAFT_SERIAL_APPEND": "true", "TXLOG_HTTP_FAST_PATH": "false", "TXLOG_FORWARD": "http",
		"TXLOG_HELP_TESTING": "true",
	}))
	if err != nil {
		t.Fatal(err)
	}
	check(t, c)
}

// TestConfigMetrics: a node opened with a registry registers its metrics and
// those of its parts in it, and a second Open with the same registry is
// refused (a registry serves one Open).
func TestConfigMetrics(t *testing.T) {
	addrs := freeAddrs(t, 1)
	reg := prometheus.NewRegistry()
	n, err := Open(context.Background(), Config{
		ID:       "n1",
		DataDir:  t.TempDir(),
		HTTPAddr: "127.0.0.1:0",
		RaftAddr: addrs[0],
		Cluster:  []Peer{{ID: "n1", RaftAddr: addrs[0]}},
		Metrics:  reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather() = %v", err)
	}
	got := map[string]bool{}
	for _, f := range families {
		got[f.GetName()] = true
	}
	for _, name := range []string{"txlog_tx_total", "txlog_http_request_duration_seconds", "txlog_raft_state", "txlog_fsync_duration_seconds", "txlog_store_bytes", "txlog_intake_unresolved"} {
		if !got[name] {
			t.Errorf("Gather() has no %s; has %v", name, got)
		}
	}
	addrs2 := freeAddrs(t, 1)
	if n2, err := Open(context.Background(), Config{ID: "n2", DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", RaftAddr: addrs2[0],
		Cluster: []Peer{{ID: "n2", RaftAddr: addrs2[0]}}, Metrics: reg}); err == nil {
		n2.Close()
		t.Fatal("second Open with the same registry: nil error, want a registration error")
	}
}

// TestParseConfigDebugAddr: --debug-addr (or TXLOG_DEBUG_ADDR) is off unless
// given, and an address without a port is refused with the flag's name.
func TestParseConfigDebugAddr(t *testing.T) {
	c, err := ParseConfig([]string{"--id", "n1"}, nil)
	if err != nil || c.DebugAddr != "" {
		t.Fatalf("default: DebugAddr %q, %v; want off", c.DebugAddr, err)
	}
	for _, on := range []struct {
		args []string
		env  map[string]string
	}{
		{[]string{"--id", "n1", "--debug-addr", "127.0.0.1:0"}, nil},
		{[]string{"--id", "n1"}, map[string]string{"TXLOG_DEBUG_ADDR": "127.0.0.1:0"}},
	} {
		c, err := ParseConfig(on.args, env(on.env))
		if err != nil || c.DebugAddr != "127.0.0.1:0" {
			t.Fatalf("%v %v: DebugAddr %q, %v; want 127.0.0.1:0", on.args, on.env, c.DebugAddr, err)
		}
	}
	for _, bad := range []struct {
		args []string
		env  map[string]string
	}{
		{[]string{"--id", "n1", "--debug-addr", "127.0.0.1"}, nil},
		{[]string{"--id", "n1"}, map[string]string{"TXLOG_DEBUG_ADDR": "localhost:6060:1"}},
	} {
		if _, err := ParseConfig(bad.args, env(bad.env)); err == nil || !strings.Contains(err.Error(), "debug-addr") {
			t.Errorf("%v %v: ParseConfig() = %v, want a debug-addr error", bad.args, bad.env, err)
		}
	}
}

// TestParseConfigMetricsAddr: --metrics-addr (or TXLOG_METRICS_ADDR) is off
// unless given, and an address without a port is refused with the flag's name.
func TestParseConfigMetricsAddr(t *testing.T) {
	if c, err := ParseConfig([]string{"--id", "n1"}, nil); err != nil || c.MetricsAddr != "" {
		t.Fatalf("default: MetricsAddr %q, %v; want off", c.MetricsAddr, err)
	}
	if c, err := ParseConfig([]string{"--id", "n1"}, env(map[string]string{"TXLOG_METRICS_ADDR": "127.0.0.1:0"})); err != nil || c.MetricsAddr != "127.0.0.1:0" {
		t.Fatalf("TXLOG_METRICS_ADDR: MetricsAddr %q, %v; want 127.0.0.1:0", c.MetricsAddr, err)
	}
	if c, err := ParseConfig([]string{"--id", "n1"}, env(map[string]string{"TXLOG_METRICS": "false"})); err != nil || !c.NoMetrics {
		t.Fatalf("TXLOG_METRICS=false: NoMetrics %v, %v; want true", c.NoMetrics, err)
	}
	if _, err := ParseConfig([]string{"--id", "n1", "--metrics-addr", "127.0.0.1"}, nil); err == nil || !strings.Contains(err.Error(), "metrics-addr") {
		t.Errorf("--metrics-addr 127.0.0.1: ParseConfig() = %v, want a metrics-addr error", err)
	}
}

func TestParseConfigAlerts(t *testing.T) {
	c, err := ParseConfig([]string{"--id", "n1", "--alert-webhook", "http://127.0.0.1:1/a", "--alert-webhook", "http://127.0.0.1:1/b",
		"--alert-format", "slack", "--alert-no-leader-for", "2s", "--alert-disk-free-percent", "5"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Alert.Webhooks) != 2 || c.Alert.Format != "slack" || c.Alert.NoLeaderFor != 2*time.Second || c.Alert.DiskFreePercent != 5 || c.Alert.ParkedMax != 1000 {
		t.Fatalf("alert config %+v", c.Alert)
	}
	c, err = ParseConfig([]string{"--id", "n1"}, env(map[string]string{"TXLOG_ALERT_WEBHOOK": "http://127.0.0.1:1/a"}))
	if err != nil || len(c.Alert.Webhooks) != 1 {
		t.Fatalf("env: %+v, %v", c.Alert.Webhooks, err)
	}
	for _, bad := range [][]string{{"--alert-format", "xml"}, {"--alert-webhook", "ftp://x"}, {"--alert-disk-free-percent", "x"}} {
		if _, err := ParseConfig(append([]string{"--id", "n1"}, bad...), nil); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}
