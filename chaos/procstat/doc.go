// Package procstat reads what the load generators and the scale tool report of
// the processes they measure, from Linux's /proc: CPU time, user and system, and
// the context switches of a process's threads, the whole machine's CPU time
// from /proc/stat (how much of it idle, and how much the hypervisor stole), and
// a Sample of this process, a cluster's nodes and the machine at once; the
// Usage between two Samples that `txlog bench` and tools/etcdbench report, in
// their JSON fields and text lines; and it tells whether a writer is a
// terminal, for progress output that redraws in place. On a system without
// /proc the readers return errors.
//
// It imports only the standard library, and it sees a process from outside, as
// the rest of chaos does: a PID, never a node's insides.
//
// Imports only: std
package procstat
