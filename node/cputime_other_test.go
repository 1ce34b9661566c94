//go:build !unix

package node

import "time"

// cpuTime returns 0: the benchmarks report no CPU time here.
func cpuTime() time.Duration { return 0 }
