package launcher

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/txlog/txlog/auth/token"
	"github.com/txlog/txlog/internal/certgen"
)

// SecureConfig asks for a cluster with TLS and auth everywhere: a throwaway CA
// and certificates under <Dir>/tls, client TLS on every node's HTTP port, peer
// TLS (mutual) on its Raft port, and an auth file with an admin token.
type SecureConfig struct {
	// MutualTLS makes every node require a client certificate signed by the
	// cluster's CA on its HTTP port (--tls-client-ca-file). Default false:
	// clients verify the nodes, and the token authenticates them.
	MutualTLS bool
	// NoClientTLS leaves the HTTP ports plain: the auth file alone (tokens
	// over plain HTTP; txlog bench measures what TLS adds to them). Default
	// false.
	NoClientTLS bool
	// NoPeerTLS leaves the Raft ports plain. Default false.
	NoPeerTLS bool
}

// Names of the files a secured cluster writes under <Dir>/tls.
const (
	SecureDirName    = "tls"
	secureCAName     = "ca"
	secureClientName = "client"
	secureAuthName   = "auth"
	// AdminName is the name of the admin token's line in the auth file, and
	// the CN of the client certificate, whose cert: line (role admin) is
	// named AdminName+"-cert": every line of the file has a name of its own.
	AdminName = "local-admin"
)

// Security is what a client of a secured cluster needs, and the cluster's
// auth file. The CA and the certificates are made anew by every StartCluster,
// and so is the admin token: only its hash is written to disk.
type Security struct {
	// Dir holds the CA, the certificates and the auth file.
	Dir string
	// CAFile is the PEM certificate of the CA that signed every node's and the
	// client's certificate: the roots of a client (txlog --cacert).
	CAFile string
	// ClientCertFile and ClientKeyFile are a client certificate (CN
	// AdminName, role admin in the auth file) for mutual TLS.
	ClientCertFile, ClientKeyFile string
	// AuthFile is every node's --auth-file.
	AuthFile string
	// AdminToken is a bearer token with role admin.
	AdminToken string
	// Mutual reports whether the nodes require a client certificate.
	Mutual bool
	// ClientTLS reports whether the HTTP ports speak TLS (https URLs).
	ClientTLS bool
	// PeerTLS reports whether the Raft ports speak mutual TLS.
	PeerTLS bool

	ca        *certgen.CA
	nodeFiles map[string]certgen.Files
	clientTLS *tls.Config

	mu sync.Mutex // serializes writes of AuthFile
}

// newSecurity makes the CA, a certificate per node (for the HTTP and the Raft
// port, naming hosts), the client certificate, the admin token and the auth
// file under dir.
func newSecurity(dir string, ids, hosts []string, sc SecureConfig) (*Security, error) {
	ca, err := certgen.NewCA("txlog local CA")
	if err != nil {
		return nil, err
	}
	s := &Security{Dir: dir, ca: ca, nodeFiles: make(map[string]certgen.Files, len(ids)),
		Mutual: sc.MutualTLS && !sc.NoClientTLS, ClientTLS: !sc.NoClientTLS, PeerTLS: !sc.NoPeerTLS}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if s.CAFile, err = ca.WriteFile(dir, secureCAName); err != nil {
		return nil, fmt.Errorf("write CA: %w", err)
	}
	for _, id := range ids {
		leaf, err := ca.Issue(certgen.Options{CommonName: id, Hosts: hosts}) // server and client: peers dial each other
		if err != nil {
			return nil, err
		}
		if s.nodeFiles[id], err = leaf.WriteFiles(dir, id); err != nil {
			return nil, fmt.Errorf("write certificate of %s: %w", id, err)
		}
	}
	cl, err := ca.Issue(certgen.Options{CommonName: AdminName, Client: true})
	if err != nil {
		return nil, err
	}
	files, err := cl.WriteFiles(dir, secureClientName)
	if err != nil {
		return nil, fmt.Errorf("write client certificate: %w", err)
	}
	s.ClientCertFile, s.ClientKeyFile = files.Cert, files.Key
	cert, err := cl.TLSCertificate()
	if err != nil {
		return nil, err
	}
	s.clientTLS = &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if s.AdminToken, err = token.New(); err != nil {
		return nil, err
	}
	s.AuthFile = filepath.Join(dir, secureAuthName)
	content := "# written by the launcher; only hashes of tokens are stored\n" +
		token.Line(token.Hash(s.AdminToken), "admin", AdminName, nil) + "\n" +
		"cert:" + AdminName + " admin " + AdminName + "-cert\n"
	if err := writeFileAtomic(s.AuthFile, []byte(content)); err != nil {
		return nil, fmt.Errorf("write auth file: %w", err)
	}
	return s, nil
}

// nodeArgs are the txlogd flags of node id in a secured cluster.
func (s *Security) nodeArgs(id string) []string {
	f := s.nodeFiles[id]
	args := []string{"--auth-file=" + s.AuthFile}
	if s.ClientTLS {
		args = append(args, "--tls-cert-file="+f.Cert, "--tls-key-file="+f.Key)
	}
	if s.PeerTLS {
		args = append(args, "--peer-tls-cert-file="+f.Cert, "--peer-tls-key-file="+f.Key, "--peer-tls-ca-file="+s.CAFile)
	}
	if s.Mutual {
		args = append(args, "--tls-client-ca-file="+s.CAFile)
	}
	return args
}

// TLSConfig returns a new client TLS configuration: the cluster's CA as
// roots, and the client certificate.
func (s *Security) TLSConfig() *tls.Config { return s.clientTLS.Clone() }

// AddAuthLine appends line (see token.Line) to the auth file, replacing the
// file at once so that a node never reads half of it.
func (s *Security) AddAuthLine(line string) error {
	if strings.ContainsAny(line, "\r\n") {
		return fmt.Errorf("auth line %q: one line, please", line)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := os.ReadFile(s.AuthFile)
	if err != nil {
		return err
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	return writeFileAtomic(s.AuthFile, append(b, line+"\n"...))
}

// AddToken makes a new token with role and name, scoped to prefixes if any,
// adds its line to the auth file and returns it.
func (s *Security) AddToken(role, name string, prefixes ...string) (string, error) {
	tok, err := token.New()
	if err != nil {
		return "", err
	}
	return tok, s.AddAuthLine(token.Line(token.Hash(tok), role, name, prefixes))
}

// IssueClientCert makes a client certificate with CommonName cn signed by
// the cluster's CA and writes it under Dir as name.crt and name.key; a
// "cert:<cn>" line of the auth file gives it a role.
func (s *Security) IssueClientCert(cn, name string) (certgen.Files, error) {
	leaf, err := s.ca.Issue(certgen.Options{CommonName: cn, Client: true})
	if err != nil {
		return certgen.Files{}, err
	}
	return leaf.WriteFiles(s.Dir, name)
}

// writeFileAtomic replaces path with b: a temporary file in its directory,
// renamed over it.
func writeFileAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	err = errors.Join(err, f.Sync(), f.Close())
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
