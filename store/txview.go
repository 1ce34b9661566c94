package store

// ViewTx decodes EncodeTx bytes as DecodeTx does, with the same checks and
// errors, without copying b: the returned Tx's keys are copies, but its op
// values alias b, which the caller must not change while it uses them. It is
// for a reader that only looks (the leader's check of a forwarded
// transaction, node/framecheck.go); Apply decodes with DecodeTx.
func ViewTx(b []byte) (Tx, error) { return decodeTx(b, true) }
