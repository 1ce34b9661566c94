package certgen

import (
	"crypto/x509"
	"testing"
)

func TestIssueVerifies(t *testing.T) {
	ca, err := NewCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewCA("other-ca")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Issue(Options{CommonName: "n1", Hosts: []string{"127.0.0.1", "localhost"}, Server: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: "127.0.0.1"}); err != nil {
		t.Fatalf("verify against its CA: %v", err)
	}
	if _, err := leaf.Cert.Verify(x509.VerifyOptions{Roots: other.Pool(), DNSName: "127.0.0.1"}); err == nil {
		t.Fatal("verified against another CA")
	}
	if _, err := leaf.Cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: "10.1.1.1"}); err == nil {
		t.Fatal("verified for a host it does not name")
	}
	if _, err := leaf.TLSCertificate(); err != nil {
		t.Fatal(err)
	}
}
