package wire

import "time"

// AuditRecord is the value of an audit record: one admin action on a node's
// HTTP API (membership, leadership transfer), written to the log by the node
// under the key auth.AuditPrefix + a txid the node takes for the record.
type AuditRecord struct {
	// Who is the credential's name in the auth file; Role its role; Via
	// "token" or "cert".
	Who  string `json:"who"`
	Role string `json:"role"`
	Via  string `json:"via,omitempty"`
	// Action is the request: method and escaped path ("DELETE
	// /v1/cluster/nodes/n3").
	Action string `json:"action"`
	// From is the client's address (host:port) as the node saw it.
	From string `json:"from"`
	// At is when the node answered, on its clock.
	At time.Time `json:"at"`
	// Status is the HTTP status of the answer.
	Status int `json:"status"`
	// Node is the ID of the node that took the request.
	Node string `json:"node"`
}
