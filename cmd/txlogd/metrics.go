package main

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/txlog/txlog/replication"
)

// newRegistry returns the registry of the node this process runs (its own,
// not prometheus's global default): the Go runtime's and the process's
// collectors, and hashicorp/raft's go-metrics; the node registers its own
// metrics in it (node.Config.Metrics) and serves it at GET /metrics.
func newRegistry() (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	err := errors.Join(
		reg.Register(collectors.NewGoCollector()),
		reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})),
		replication.ExportRaftMetrics(reg),
	)
	return reg, err
}
