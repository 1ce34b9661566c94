package node

import "errors"

// Reload re-reads what the node reads from files while it runs — the client
// port's certificate, key and CA bundle, the auth file — as txlogd does on SIGHUP. The files
// are also re-read when they change; Reload is for an operator who wants it
// now. A part whose files do not load keeps what it had and says why in its
// own log line, at error level; Reload logs the outcome (a warning when a
// part kept its old material) and returns the parts' errors joined.
func (n *Node) Reload() error {
	err := errors.Join(n.reloadClientTLS(), n.reloadAuth(), n.peerSec.reloadPeer())
	if err != nil {
		n.log.Warn("reload incomplete", "err", err)
	} else {
		n.log.Info("reloaded")
	}
	return err
}
