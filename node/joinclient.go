package node

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"github.com/txlog/txlog/client"
)

// joinClientConfig returns the settings of the client that --join uses on
// the client port of the member it names, a node that is not a member yet
// joining as any client would: the admin token of --join-token-file, the
// roots of --join-ca-file (else --peer-tls-ca-file, else the system's) and,
// with peer TLS, the peer certificate as its client certificate (a member
// with --tls-client-ca-file may ask for one). The files are read once, at
// start: a join is a start's business.
func joinClientConfig(cfg Config) (client.ClientConfig, error) {
	cc := client.ClientConfig{Endpoints: []string{cfg.Join}}
	if cfg.JoinTokenFile != "" {
		b, err := os.ReadFile(cfg.JoinTokenFile)
		if err != nil {
			return cc, fmt.Errorf("join-token-file: %w", err)
		}
		tok := string(bytes.TrimSpace(b))
		if tok == "" || bytes.ContainsAny([]byte(tok), " \t\r\n") {
			return cc, errors.New("join-token-file: want one token on one line")
		}
		cc.Token = tok
	}
	ca := cfg.JoinCAFile
	if ca == "" {
		ca = cfg.PeerTLSCAFile
	}
	tc, err := client.TLSConfig(ca, cfg.PeerTLSCertFile, cfg.PeerTLSKeyFile)
	if err != nil {
		return cc, fmt.Errorf("join over TLS: %w", err)
	}
	cc.TLS = tc
	return cc, nil
}
