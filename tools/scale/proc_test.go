package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const statusText = `Name:	txlogd
Umask:	0022
State:	S (sleeping)
Pid:	4242
VmPeak:	 1290520 kB
VmSize:	 1290520 kB
VmHWM:	   81234 kB
VmRSS:	   61000 kB
RssAnon:	   40000 kB
RssFile:	   20900 kB
RssShmem:	     100 kB
Threads:	12
`

func TestParseMemStatus(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		want    memStatus
		wantErr string
	}{
		{"txlogd", statusText, memStatus{RSSBytes: 61000 << 10, HWMBytes: 81234 << 10, AnonBytes: 40000 << 10, FileBytes: 20900 << 10}, ""},
		{"old kernel", "VmHWM:\t2 kB\nVmRSS:\t1 kB\n", memStatus{RSSBytes: 1 << 10, HWMBytes: 2 << 10}, ""},
		{"no VmHWM", "VmRSS:\t100 kB\n", memStatus{}, "no VmRSS or no VmHWM"},
		{"kernel thread", "Name:\tkthreadd\nState:\tS\n", memStatus{}, "no VmRSS or no VmHWM"},
		{"bad unit", "VmRSS:\t100 MB\nVmHWM:\t100 kB\n", memStatus{}, "VmRSS"},
		{"bad number", "VmRSS:\t10x kB\nVmHWM:\t100 kB\n", memStatus{}, "VmRSS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseMemStatus(strings.NewReader(tt.text))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseMemStatus() error = %v, want one about %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseMemStatus() error = %v", err)
			}
			if got != tt.want {
				t.Fatalf("parseMemStatus() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestReadMemStatusSelf(t *testing.T) {
	m, err := readMemStatus(os.Getpid())
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	if m.RSSBytes <= 0 || m.HWMBytes < m.RSSBytes {
		t.Fatalf("readMemStatus(self) = %+v, want 0 < RSS <= HWM", m)
	}
}

func TestDirUsage(t *testing.T) {
	dir := t.TempDir()
	files := map[string]int{
		"state.db":                    4096,
		"raft/raft.db":                8192,
		"raft/snapshots/2-10-1/state": 1000,
		"raft/snapshots/2-10-1/meta":  24,
		"wal/00000001.seg":            300,
		"wal/00000002.seg":            200,
		"txid.hwm":                    8,
	}
	for name, size := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := dirUsage(dir)
	if err != nil {
		t.Fatalf("dirUsage() error = %v", err)
	}
	want := []diskEntry{
		{"raft/raft.db", 8192},
		{"raft/snapshots", 1024},
		{"state.db", 4096},
		{"txid.hwm", 8},
		{"wal", 500},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("dirUsage() = %v, want %v", got, want)
	}
	kinds := diskByKind(got)
	wantKinds := map[string]int64{kindStore: 4096, kindRaftLog: 8192, kindSnapshots: 1024, kindIntake: 500, kindOther: 8}
	if !reflect.DeepEqual(kinds, wantKinds) {
		t.Fatalf("diskByKind() = %v, want %v", kinds, wantKinds)
	}
}

func TestCheckpointTargets(t *testing.T) {
	tests := []struct {
		total, step int64
		want        []int64
	}{
		{1_000_000, 100_000, []int64{0, 100_000, 200_000, 300_000, 400_000, 500_000, 600_000, 700_000, 800_000, 900_000, 1_000_000}},
		{25, 10, []int64{0, 10, 20, 25}},
		{10, 100, []int64{0, 10}},
		{0, 10, []int64{0}},
	}
	for _, tt := range tests {
		if got := checkpointTargets(tt.total, tt.step); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("checkpointTargets(%d, %d) = %v, want %v", tt.total, tt.step, got, tt.want)
		}
	}
}

func TestFillFlagsRoundsUpToBatches(t *testing.T) {
	got := fillFlags(16, 100, 9901)
	want := []string{"--clients", "16", "--batch", "100", "--n", "10000"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fillFlags(16, 100, 9901) = %q, want %q", got, want)
	}
}
