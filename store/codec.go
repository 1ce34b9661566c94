package store

// EncodeTx encodes a transaction. These bytes go unchanged into the WAL, Redis and
// (inside a Command) the Raft log.
func EncodeTx(tx Tx) []byte { panic("TODO") }

// DecodeTx decodes EncodeTx bytes; bad input gives an error wrapping ErrCorrupt.
func DecodeTx(b []byte) (Tx, error) { panic("TODO") }

// EncodeNode encodes a NodeInfo.
func EncodeNode(n NodeInfo) []byte { panic("TODO") }

// DecodeNode decodes EncodeNode bytes.
func DecodeNode(b []byte) (NodeInfo, error) { panic("TODO") }

// EncodeCommand encodes a command: a small header followed by the payload as is.
func EncodeCommand(c Command) []byte { panic("TODO") }

// DecodeCommand decodes EncodeCommand bytes. The payload aliases b.
func DecodeCommand(b []byte) (Command, error) { panic("TODO") }
