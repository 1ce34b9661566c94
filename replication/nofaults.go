//go:build !txlogfaults

package replication

// withFaults returns ls: fault injection is only in builds with the txlogfaults
// tag (faults.go).
func withFaults(_ Config, ls logStore) logStore { return ls }
