package procstat

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	// A command name with a space and a parenthesis; utime 250, stime 50 ticks.
	line := "4242 (tx (log) d) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 50 0 0 20 0 12 0 100 0 0"
	user, sys, err := ParseStat([]byte(line))
	if err != nil {
		t.Fatalf("ParseStat() error = %v", err)
	}
	if user != 2500*time.Millisecond || sys != 500*time.Millisecond {
		t.Fatalf("ParseStat() = %v, %v; want 2.5s, 500ms", user, sys)
	}
	for _, bad := range []string{"4242 txlogd S 1", "4242 (txlogd) S 1 2 3", "4242 (x) S 1 2 3 4 5 6 7 8 9 10 u s"} {
		if _, _, err := ParseStat([]byte(bad)); err == nil {
			t.Errorf("ParseStat(%q) error = nil, want one", bad)
		}
	}
}

func TestParseSwitches(t *testing.T) {
	for _, tt := range []struct {
		name, status string
		want         int64
		wantErr      bool
	}{
		{name: "both", status: "Name:\ttxlogd\nThreads:\t9\nvoluntary_ctxt_switches:\t120\nnonvoluntary_ctxt_switches:\t7\n", want: 127},
		{name: "no final newline", status: "voluntary_ctxt_switches:\t1\nnonvoluntary_ctxt_switches:\t2", want: 3},
		{name: "one missing", status: "voluntary_ctxt_switches:\t120\n", wantErr: true},
		{name: "none", status: "Name:\ttxlogd\n", wantErr: true},
		{name: "not a number", status: "voluntary_ctxt_switches:\tmany\nnonvoluntary_ctxt_switches:\t7\n", wantErr: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSwitches([]byte(tt.status))
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("ParseSwitches = %d, %v; want %d, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// TestSelf reads this process: the test runner has used CPU, and its threads
// have blocked. A pid that cannot exist fails.
func TestSelf(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	if d, err := CPU("self"); err != nil || d < 0 {
		t.Fatalf("CPU(self) = %v, %v", d, err)
	}
	if n, err := Switches("self"); err != nil || n <= 0 {
		t.Fatalf("Switches(self) = %d, %v; want a count", n, err)
	}
	if _, err := CPU("0"); err == nil {
		t.Fatal("CPU(0) = nil error, want one")
	}
	if _, err := Switches("0"); err == nil {
		t.Fatal("Switches(0) = nil error, want one")
	}
}

func TestIsTerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "progress"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) || IsTerminal(&bytes.Buffer{}) {
		t.Fatal("a regular file or a buffer taken for a terminal")
	}
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		defer tty.Close()
		if !IsTerminal(tty) {
			t.Fatal("/dev/tty not taken for a terminal")
		}
	}
}

// TestTakeSample: without nodes a sample has no node figures; with this
// process as the node it has them; a node that cannot be read spoils them.
func TestTakeSample(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	if s := TakeSample(nil); s.NodesOK || s.NodesCS != 0 {
		t.Fatalf("TakeSample(nil) = %+v, want no node figures", s)
	}
	if s := TakeSample(func() []int { return []int{os.Getpid()} }); !s.NodesOK || s.NodesCS <= 0 || s.NodesSys > s.Nodes {
		t.Fatalf("TakeSample(self as node) = %+v, want node figures", s)
	}
	if s := TakeSample(func() []int { return []int{os.Getpid(), 0} }); s.NodesOK {
		t.Fatalf("TakeSample with pid 0 = %+v, want NodesOK false", s)
	}
}

func TestParseMachine(t *testing.T) {
	stat := "cpu  487252 0 338175 697500 45775 0 64278 87277 11 0\ncpu0 274040 0 185151 327238 20489 0 25342 38957 0 0\nintr 1\n"
	m, err := ParseMachine([]byte(stat))
	if err != nil {
		t.Fatal(err)
	}
	want := Machine{Total: 487252 + 338175 + 697500 + 45775 + 64278 + 87277, Idle: 697500, Steal: 87277}
	if m != want {
		t.Fatalf("ParseMachine = %+v, want %+v (guest time is in user already)", m, want)
	}
	old, err := ParseMachine([]byte("cpu  10 0 10 80 0 0 0\n"))
	if err != nil || old != (Machine{Total: 100, Idle: 80}) {
		t.Fatalf("ParseMachine without a steal column = %+v, %v", old, err)
	}
	later := Machine{Total: want.Total + 1000, Idle: want.Idle + 100, Steal: want.Steal + 50}
	steal, idle, ok := later.Share(m)
	if !ok || steal != 5 || idle != 10 {
		t.Fatalf("Share = %v%% stolen, %v%% idle, %v; want 5, 10, true", steal, idle, ok)
	}
	if _, _, ok := m.Share(m); ok {
		t.Fatal("Share over no time: ok")
	}
	for _, bad := range []string{"", "intr 1\n", "cpu 1 2 3\n", "cpu 1 2 x 4 5 6 7 8\n", "cpu0 1 2 3 4 5 6 7 8\n"} {
		if m, err := ParseMachine([]byte(bad)); err == nil {
			t.Errorf("ParseMachine(%q) = %+v, want an error", bad, m)
		}
	}
}

func TestMachineSample(t *testing.T) {
	if _, err := os.Stat("/proc/stat"); err != nil {
		t.Skip("no /proc")
	}
	s0 := TakeSample(nil)
	if !s0.MachineOK || s0.Machine.Total <= 0 || s0.Machine.Idle > s0.Machine.Total || s0.Machine.Steal > s0.Machine.Total {
		t.Fatalf("TakeSample(nil).Machine = %+v, %v", s0.Machine, s0.MachineOK)
	}
	if _, _, ok := MachineShare(s0, Sample{}); ok {
		t.Fatal("MachineShare with an unread sample: ok")
	}
}
