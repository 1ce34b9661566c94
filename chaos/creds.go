package chaos

import (
	"crypto/tls"
	"flag"

	"github.com/txlog/txlog/client"
)

// TokenEnv is the environment variable a child of the run (a contender, a
// consumer) reads its bearer token from: on its command line it would show in
// ps.
const TokenEnv = "TXLOG_TOKEN"

// Credentials are what every client of a run presents to a secured cluster:
// the workload's clients, the monitor, the checks' reads, the contenders and
// the consumers. The zero value is for a plain cluster.
type Credentials struct {
	// Token is sent as "Authorization: Bearer"; it needs role write (admin
	// for nothing the verifier does).
	Token string
	// CAFile is the PEM CA the nodes' certificates are verified against.
	CAFile string
	// CertFile and KeyFile are a client certificate for mutual TLS.
	CertFile, KeyFile string

	tls *tls.Config // of the files, once load ran
}

// load reads the TLS files.
func (c *Credentials) load() error {
	cfg, err := client.TLSConfig(c.CAFile, c.CertFile, c.KeyFile)
	c.tls = cfg
	return err
}

// apply returns cfg with c's token and TLS configuration.
func (c Credentials) apply(cfg client.ClientConfig) client.ClientConfig {
	cfg.Token, cfg.TLS = c.Token, c.tls
	return cfg
}

// args are the flags that hand the TLS files to a child (define parses them).
func (c Credentials) args() []string {
	var out []string
	for _, f := range []struct{ name, v string }{{"cacert", c.CAFile}, {"cert", c.CertFile}, {"cert-key", c.KeyFile}} {
		if f.v != "" {
			out = append(out, "--"+f.name+"="+f.v)
		}
	}
	return out
}

// env is the environment that hands the token to a child.
func (c Credentials) env() []string {
	if c.Token == "" {
		return nil
	}
	return []string{TokenEnv + "=" + c.Token}
}

// define adds the flags of args to fs.
func (c *Credentials) define(fs *flag.FlagSet) {
	fs.StringVar(&c.CAFile, "cacert", "", "PEM CA of the nodes' certificates")
	fs.StringVar(&c.CertFile, "cert", "", "PEM client certificate")
	fs.StringVar(&c.KeyFile, "cert-key", "", "PEM key of the client certificate")
}
