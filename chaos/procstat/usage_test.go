package procstat

import (
	"strings"
	"testing"
	"time"
)

func TestNewUsage(t *testing.T) {
	s0 := Sample{
		Self: time.Second, Nodes: 4 * time.Second, NodesSys: time.Second, NodesCS: 100, NodesOK: true,
		Machine: Machine{Steal: 10, Idle: 100, Total: 1000}, MachineOK: true,
	}
	s1 := Sample{
		Self: 3 * time.Second, Nodes: 10 * time.Second, NodesSys: 3 * time.Second, NodesCS: 500, NodesOK: true,
		Machine: Machine{Steal: 60, Idle: 300, Total: 2000}, MachineOK: true,
	}
	notNodes, notMachine := s1, s1
	notNodes.NodesOK = false
	notMachine.MachineOK = false
	for _, tt := range []struct {
		name           string
		s1             Sample
		elapsed        time.Duration
		requests, txs  int64
		want           Usage
		steal, idle    float64
		machine, nodes bool
		text           string
	}{
		{
			name: "all", s1: s1, elapsed: 2 * time.Second, requests: 100, txs: 200,
			want:    Usage{ClientCPU: 1, ClientCPUPerReq: 20000, NodesCPU: 3, NodesCPUPerTx: 30000, NodesSysCPUPerTx: 10000, NodesSwitchesPerTx: 2},
			machine: true, steal: 5, idle: 20,
			text: "client CPU   1.00 cores  (20000µs per request)\n" +
				"nodes CPU    3.00 cores  (30000µs per tx, 10000µs of it in the kernel; 2.0 context switches per tx)\n" +
				"machine      5.0% of its CPU time stolen by the host, 20.0% idle\n",
		},
		{
			name: "a node not read", s1: notNodes, elapsed: 2 * time.Second, requests: 100, txs: 200,
			want: Usage{ClientCPU: 1, ClientCPUPerReq: 20000}, machine: true, steal: 5, idle: 20,
			text: "client CPU   1.00 cores  (20000µs per request)\n" +
				"machine      5.0% of its CPU time stolen by the host, 20.0% idle\n",
		},
		{
			name: "no machine", s1: notMachine, elapsed: 2 * time.Second, requests: 100, txs: 200,
			want: Usage{ClientCPU: 1, ClientCPUPerReq: 20000, NodesCPU: 3, NodesCPUPerTx: 30000, NodesSysCPUPerTx: 10000, NodesSwitchesPerTx: 2},
			text: "client CPU   1.00 cores  (20000µs per request)\n" +
				"nodes CPU    3.00 cores  (30000µs per tx, 10000µs of it in the kernel; 2.0 context switches per tx)\n",
		},
		{
			name: "empty window", s1: notMachine,
			want: Usage{},
			text: "client CPU   0.00 cores  (0µs per request)\n",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := NewUsage(s0, tt.s1, tt.elapsed, tt.requests, tt.txs)
			if (got.MachineStealPct != nil) != tt.machine || (got.MachineIdlePct != nil) != tt.machine {
				t.Fatalf("NewUsage() machine = %v, %v; want set: %v", got.MachineStealPct, got.MachineIdlePct, tt.machine)
			}
			if tt.machine && (*got.MachineStealPct != tt.steal || *got.MachineIdlePct != tt.idle) {
				t.Fatalf("NewUsage() steal, idle = %v, %v; want %v, %v", *got.MachineStealPct, *got.MachineIdlePct, tt.steal, tt.idle)
			}
			var b strings.Builder
			got.WriteText(&b)
			if b.String() != tt.text {
				t.Errorf("WriteText() = %q, want %q", b.String(), tt.text)
			}
			got.MachineStealPct, got.MachineIdlePct = nil, nil
			if got != tt.want {
				t.Fatalf("NewUsage() = %+v, want %+v", got, tt.want)
			}
		})
	}
}
