package node

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/api/wire"
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

// checkJoiner probes the peer link of a node that asks to join, before the
// leader adds it to the configuration, when this node's link is secured
// (peer TLS or a shared secret): a joiner whose certificate the peer CA did
// not sign, whose CN is not allowed, or that does not prove the secret, is
// refused with 403 forbidden, and never becomes a voter that Raft cannot
// reach. The refusal is logged at Warn: the joiner may be an intruder.
func (n *Node) checkJoiner(ctx context.Context, req wire.JoinRequest) error {
	if n.peerSec == nil {
		return nil
	}
	if _, err := n.link.Probe(ctx, req.RaftAddr); err != nil {
		n.log.Warn("join refused: the joiner's peer link failed the check", "peer", req.ID, "raft_addr", req.RaftAddr, "err", err)
		// The reason without the peer link's "peer link to <addr>: ", which
		// would name the address a second time.
		reason := strings.ReplaceAll(err.Error(), "peer link to "+req.RaftAddr+": ", "")
		return &wire.Error{Code: wire.CodeForbidden, Message: fmt.Sprintf("join of %s refused: its peer link at %s did not pass this cluster's peer TLS or shared secret: %s", req.ID, req.RaftAddr, reason)}
	}
	return nil
}
