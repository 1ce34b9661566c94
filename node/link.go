package node

import (
	"errors"
	"net/http"
	"time"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/peerlink"
)

// openLink listens for the peer link on the Raft address. The node's
// identity (identity.go) fills the link's hooks: the cluster ID it presents,
// the answer to bootstrap probes, and the policy (identity.accept); its
// peer TLS material and shared secrets (peertls.go), which the caller
// closes after the link, its TLS mode and secrets. Everything on the link
// goes through them: Raft's transport (Link.Raft), the propose streams,
// the internal requests and the bootstrap probes all dial with Link.Dial.
func openLink(cfg Config, ident *identity) (*peerlink.Link, *peerSecurity, error) {
	ps, err := openPeerSecurity(cfg)
	if err != nil {
		return nil, nil, err
	}
	lc := peerlink.Config{
		NodeID:    cfg.ID,
		ClusterID: ident.clusterID,
		Accept:    ident.accept,
		Bootstrap: ident.answerProbe,
		Logger:    cfg.Logger,
	}
	ps.linkConfig(&lc)
	l, err := peerlink.Listen(cfg.RaftAddr, lc)
	if err != nil {
		ps.close()
		return nil, nil, err
	}
	return l, ps, nil
}

// newPeerServer returns the server of the internal router (api.Server's
// PeerHandler) on the peer link's KindHTTP connections: the requests other
// nodes send this one. A request's context names the node that sent it
// (peerlink.RemoteNode).
func newPeerServer(a *api.Server) *http.Server {
	return &http.Server{
		Handler:           a.PeerHandler(),
		ConnContext:       peerlink.ConnContext,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       peerlink.DefaultIdleTimeout,
	}
}

// servePeers serves the peer link's internal requests and propose streams
// until Close; a server that fails reports on serveErr.
func (n *Node) servePeers(serveErr chan<- error) {
	n.wg.Go(func() {
		if err := n.peerSrv.Serve(n.link.Listener(peerlink.KindHTTP)); !errors.Is(err, http.ErrServerClosed) {
			select {
			case serveErr <- err:
			default:
			}
		}
	})
	limit := n.api.Config().MaxInternalBodyBytes
	n.wg.Go(func() {
		if err := n.streamSrv.Serve(n.link.Listener(peerlink.KindStream), limit, n.api.ProposeAnswer); err != nil {
			select {
			case serveErr <- err:
			default:
			}
		}
	})
}
