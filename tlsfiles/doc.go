// Package tlsfiles holds a node's TLS material — a certificate, its key and an
// optional CA bundle, each a PEM file — and keeps it current: the files are
// re-read when they change and on Reload (SIGHUP), and every new handshake uses
// what was read last. Certificates, keys and CA bundles all rotate without a
// restart: the server side builds each handshake's tls.Config from the current
// material in GetConfigForClient, so a CA added to or dropped from the bundle
// counts from the next connection on (etcd reloads certificates but keeps the
// CA pool it started with, etcd-io/etcd#11555).
//
// # Files are polled, not watched
//
// Every Interval (default 250 ms) the watcher stats the three files and
// re-reads them when one's modification time, size or inode differs. Polling
// was chosen over inotify (fsnotify) because the ways certificates are really
// rotated defeat a watch on the file: an atomic rename (write a temporary
// file, rename it over the old one) replaces the inode the watch was on, and a
// Kubernetes secret or cert-manager volume swaps a symlink to a new directory,
// so the path names another file while the watched one never changes. os.Stat
// follows the path as it is now, whatever was renamed or re-linked, at the cost
// of three stats per interval. A rotation is therefore seen within one
// Interval; Reload reads at once.
//
// # A bad file keeps the old material
//
// A file that does not parse — half written, a key that does not match the
// certificate, a bundle with no certificate or with bytes that are not PEM —
// is logged at Error and counted as txlog_tls_reloads_total{name,result="error"};
// the material in use stays what it was. A certificate and its key rotated by
// two separate writes therefore fail once (the new certificate with the old
// key) and load when the second file lands. txlog_tls_cert_expiry_seconds{name}
// is the current certificate's NotAfter as a Unix time.
//
// # What it must not import
//
// tlsfiles is a leaf: crypto/tls and crypto/x509 as they are, the standard
// library and Prometheus' client; nothing of txlog's.
//
// Imports only: std, github.com/prometheus/client_golang/prometheus
package tlsfiles
