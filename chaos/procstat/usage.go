package procstat

import (
	"fmt"
	"strings"
	"time"
)

// Usage is the CPU use over a measured window, from the Samples at its ends,
// in the JSON fields of `txlog bench --json` and tools/etcdbench, which embed
// it at the end of their summaries.
type Usage struct {
	// ClientCPU is the load generator's CPU use in cores over the window;
	// ClientCPUPerReq its CPU time per request in microseconds.
	ClientCPU       float64 `json:"client_cpu_cores"`
	ClientCPUPerReq float64 `json:"client_cpu_us_per_req"`
	// NodesCPU and NodesCPUPerTx are the same for all nodes together, known
	// when both Samples read every node.
	NodesCPU      float64 `json:"nodes_cpu_cores,omitempty"`
	NodesCPUPerTx float64 `json:"nodes_cpu_us_per_tx,omitempty"`
	// NodesSysCPUPerTx is the part of NodesCPUPerTx spent in the kernel (system
	// time), and NodesSwitchesPerTx the context switches of the nodes' threads
	// per transaction, voluntary or not.
	NodesSysCPUPerTx   float64 `json:"nodes_sys_cpu_us_per_tx,omitempty"`
	NodesSwitchesPerTx float64 `json:"nodes_ctx_switches_per_tx,omitempty"`
	// MachineStealPct and MachineIdlePct are the parts of the whole machine's
	// CPU time over the window that the hypervisor gave to other guests
	// (steal) and that was idle, in percent; absent where /proc/stat is not.
	// On a shared virtual machine steal comes and goes, and a run that had
	// some is slower than one that had none (docs/performance.md).
	MachineStealPct *float64 `json:"machine_steal_pct,omitempty"`
	MachineIdlePct  *float64 `json:"machine_idle_pct,omitempty"`
}

// NewUsage returns the usage between the samples s0 and s1, taken elapsed
// apart, over which requests requests carried txs transactions.
func NewUsage(s0, s1 Sample, elapsed time.Duration, requests, txs int64) Usage {
	var u Usage
	nodesOK := s0.NodesOK && s1.NodesOK
	if s := elapsed.Seconds(); s > 0 {
		u.ClientCPU = (s1.Self - s0.Self).Seconds() / s
		if nodesOK {
			u.NodesCPU = (s1.Nodes - s0.Nodes).Seconds() / s
		}
	}
	if steal, idle, ok := MachineShare(s0, s1); ok {
		u.MachineStealPct, u.MachineIdlePct = &steal, &idle
	}
	if requests > 0 {
		u.ClientCPUPerReq = float64((s1.Self - s0.Self).Microseconds()) / float64(requests)
	}
	if txs > 0 && nodesOK {
		u.NodesCPUPerTx = float64((s1.Nodes - s0.Nodes).Microseconds()) / float64(txs)
		u.NodesSysCPUPerTx = float64((s1.NodesSys - s0.NodesSys).Microseconds()) / float64(txs)
		u.NodesSwitchesPerTx = float64(s1.NodesCS-s0.NodesCS) / float64(txs)
	}
	return u
}

// WriteText writes u as the lines of a bench's text summary: the client's
// CPU, the nodes' when known, and the machine's steal and idle when known.
func (u Usage) WriteText(b *strings.Builder) {
	fmt.Fprintf(b, "client CPU   %.2f cores  (%.0fµs per request)\n", u.ClientCPU, u.ClientCPUPerReq)
	if u.NodesCPU > 0 {
		fmt.Fprintf(b, "nodes CPU    %.2f cores  (%.0fµs per tx, %.0fµs of it in the kernel; %.1f context switches per tx)\n",
			u.NodesCPU, u.NodesCPUPerTx, u.NodesSysCPUPerTx, u.NodesSwitchesPerTx)
	}
	if u.MachineStealPct != nil && u.MachineIdlePct != nil {
		fmt.Fprintf(b, "machine      %.1f%% of its CPU time stolen by the host, %.1f%% idle\n", *u.MachineStealPct, *u.MachineIdlePct)
	}
}
