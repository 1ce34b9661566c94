package notify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// Header names of a callback.
const (
	HeaderSignature = "X-Txlog-Signature" // "sha256=<hex of HMAC-SHA256(secret, body)>"
	HeaderDelivery  = "X-Txlog-Delivery"  // the delivery id, stable across retries
)

// Sign returns the X-Txlog-Signature value of body: "sha256=" and the hex
// HMAC-SHA256 of body keyed with secret.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Verify reports whether sig is the signature of body with secret, in
// constant time: what a receiver checks.
func Verify(secret, body []byte, sig string) bool {
	return hmac.Equal([]byte(Sign(secret, body)), []byte(sig))
}
