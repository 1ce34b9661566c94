package procstat

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of the CPU times in /proc/PID/stat; it is
// 100 on every Linux architecture Go supports.
const clockTicks = 100

// CPU returns the user plus system CPU time process pid ("self" for this one)
// has used so far.
func CPU(pid string) (time.Duration, error) {
	user, sys, err := Times(pid)
	return user + sys, err
}

// Times returns the user and the system CPU time process pid has used so far.
func Times(pid string) (user, sys time.Duration, err error) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, 0, err
	}
	user, sys, err = ParseStat(b)
	if err != nil {
		return 0, 0, fmt.Errorf("/proc/%s/stat: %w", pid, err)
	}
	return user, sys, nil
}

// ParseStat returns utime and stime (fields 14 and 15) of the text of
// /proc/PID/stat. The command name, in parentheses, may hold spaces and
// parentheses of its own, so fields are counted from the last ')'.
func ParseStat(b []byte) (user, sys time.Duration, err error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, errors.New("no command name")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state), so utime and stime are f[11] and f[12].
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("%d fields, want at least 15", len(f)+2)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, 0, err
	}
	return time.Duration(utime) * time.Second / clockTicks, time.Duration(stime) * time.Second / clockTicks, nil
}

// Switches returns the context switches, voluntary (the thread blocked) and
// involuntary (it was preempted), of the live threads of process pid, from
// /proc/PID/task/*/status. A thread that ended takes its count with it; a Go
// runtime keeps its threads.
func Switches(pid string) (int64, error) {
	dir := "/proc/" + pid + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/status")
		if errors.Is(err, fs.ErrNotExist) {
			continue // the thread ended since ReadDir
		}
		if err != nil {
			return 0, err
		}
		c, err := ParseSwitches(b)
		if err != nil {
			return 0, fmt.Errorf("%s/%s/status: %w", dir, t.Name(), err)
		}
		n += c
	}
	return n, nil
}

// ParseSwitches adds up the voluntary_ctxt_switches and
// nonvoluntary_ctxt_switches lines of a /proc status file.
func ParseSwitches(status []byte) (int64, error) {
	var n int64
	found := 0
	for line := range strings.Lines(string(status)) {
		name, value, ok := strings.Cut(line, ":")
		if !ok || (name != "voluntary_ctxt_switches" && name != "nonvoluntary_ctxt_switches") {
			continue
		}
		c, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", name, err)
		}
		n += c
		found++
	}
	if found != 2 {
		return 0, errors.New("no voluntary_ctxt_switches and nonvoluntary_ctxt_switches lines")
	}
	return n, nil
}

// IsTerminal reports whether w is a character device, such as a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Machine is the whole machine's CPU time so far, from the first line of
// /proc/stat, in clock ticks summed over its CPUs: all of it, the time idle,
// and the time stolen (the hypervisor ran something else while this virtual
// machine had work for the CPU).
type Machine struct {
	Total, Idle, Steal int64
}

// ReadMachine reads the machine's CPU time from /proc/stat.
func ReadMachine() (Machine, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return Machine{}, err
	}
	m, err := ParseMachine(b)
	if err != nil {
		return Machine{}, fmt.Errorf("/proc/stat: %w", err)
	}
	return m, nil
}

// ParseMachine reads the "cpu" line of the text of /proc/stat: user, nice,
// system, idle, iowait, irq, softirq and steal (kernels before 2.6.11 have no
// steal column, which reads as 0). guest and guest_nice are already in user
// and nice, so they are not added again.
func ParseMachine(b []byte) (Machine, error) {
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return Machine{}, errors.New(`no "cpu" line with at least 7 times`)
	}
	var m Machine
	for i := 1; i < len(f) && i <= 8; i++ {
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return Machine{}, fmt.Errorf("cpu time %d: %w", i, err)
		}
		m.Total += v
		switch i {
		case 4:
			m.Idle = v
		case 8:
			m.Steal = v
		}
	}
	return m, nil
}

// Share returns what part of the machine's CPU time from m0 to m was stolen
// and idle, in percent; ok is false when no time passed.
func (m Machine) Share(m0 Machine) (stealPct, idlePct float64, ok bool) {
	total := m.Total - m0.Total
	if total <= 0 {
		return 0, 0, false
	}
	return 100 * float64(m.Steal-m0.Steal) / float64(total), 100 * float64(m.Idle-m0.Idle) / float64(total), true
}

// Sample is the CPU time used so far by this process and by others (a
// cluster's nodes), with the others' system time and the context switches of
// their threads, and the machine's. The load generators take one at each end
// of their measured window and report the differences.
type Sample struct {
	Self      time.Duration // this process, user plus system
	Nodes     time.Duration // the others, user plus system
	NodesSys  time.Duration // the others' system time
	NodesCS   int64         // the others' context switches
	NodesOK   bool          // every other process was read (false without any)
	Machine   Machine       // the whole machine
	MachineOK bool          // Machine was read
}

// MachineShare is Machine.Share between two samples; ok is false unless both
// read the machine.
func MachineShare(s0, s1 Sample) (stealPct, idlePct float64, ok bool) {
	if !s0.MachineOK || !s1.MachineOK {
		return 0, 0, false
	}
	return s1.Machine.Share(s0.Machine)
}

// TakeSample reads this process and the processes whose PIDs nodePIDs returns;
// with nodePIDs nil, this process only.
func TakeSample(nodePIDs func() []int) Sample {
	var s Sample
	s.Self, _ = CPU("self")
	m, err := ReadMachine()
	s.Machine, s.MachineOK = m, err == nil
	if nodePIDs == nil {
		return s
	}
	s.NodesOK = true
	for _, pid := range nodePIDs() {
		p := strconv.Itoa(pid)
		user, sys, err1 := Times(p)
		cs, err2 := Switches(p)
		if err1 != nil || err2 != nil {
			s.NodesOK = false
		}
		s.Nodes += user + sys
		s.NodesSys += sys
		s.NodesCS += cs
	}
	return s
}
