package node

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/txlog/txlog/client"
)

// The credentials --join presents to the member it names (docs/operations.md,
// "The auth file" and "TLS on the client port"): a joining node is not a
// member yet, so it asks on the client port as any client would, and a
// secured client port asks it for a credential like any other.
//
//   - --join-token-file: the admin token (the file's first line, without
//     surrounding spaces), sent as Authorization: Bearer on every request of
//     the join (GET /v1/cluster, POST /v1/cluster/join).
//   - --join-ca-file, else --peer-tls-ca-file: the CA bundle that verifies an
//     https:// member's certificate; neither: the system's roots.
//   - the client certificate it offers a member that asks for one: the peer
//     certificate (--peer-tls-cert-file) when there is one, else the client
//     port's own (--tls-cert-file), read at each handshake.

// joinClient returns the client --join uses toward cfg.Join, with the
// credentials above; an error names the file it could not use.
func joinClient(cfg Config) (*client.Client, error) {
	cc := client.ClientConfig{Endpoints: []string{cfg.Join}}
	if strings.HasPrefix(cfg.Join, "https://") {
		tc, err := joinTLS(cfg)
		if err != nil {
			return nil, err
		}
		cc.TLS = tc
	}
	if cfg.JoinTokenFile != "" {
		b, err := os.ReadFile(cfg.JoinTokenFile)
		if err != nil {
			return nil, fmt.Errorf("join-token-file: %w", err)
		}
		token, _, _ := strings.Cut(string(b), "\n")
		if cc.Token = strings.TrimSpace(token); cc.Token == "" {
			return nil, fmt.Errorf("join-token-file %s: empty", cfg.JoinTokenFile)
		}
	}
	return client.NewClient(cc), nil
}

// joinTLS is the TLS config of a join through an https:// member.
func joinTLS(cfg Config) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	caFile := cfg.JoinCAFile
	if caFile == "" {
		caFile = cfg.PeerTLSCAFile
	}
	if caFile != "" {
		b, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("join-ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("join-ca-file %s: no PEM certificate", caFile)
		}
		tc.RootCAs = pool
	}
	certFile, keyFile := cfg.PeerTLSCertFile, cfg.PeerTLSKeyFile
	if certFile == "" {
		certFile, keyFile = cfg.TLSCertFile, cfg.TLSKeyFile
	}
	if certFile != "" {
		if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
			return nil, fmt.Errorf("join client certificate: %w", err)
		}
		tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			c, err := tls.LoadX509KeyPair(certFile, keyFile)
			if err != nil {
				return nil, errors.Join(errors.New("join client certificate"), err)
			}
			return &c, nil
		}
	}
	return tc, nil
}
