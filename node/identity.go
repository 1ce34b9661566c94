package node

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/txlog/txlog/dirsync"
	"github.com/txlog/txlog/peerlink"
	"github.com/txlog/txlog/replication"
)

// Cluster identity. A cluster has one ID, 16 bytes that every member keeps in
// its data directory (cluster.id) and presents in the header of every peer
// link connection, so that a node refuses the traffic of another cluster's
// nodes. A data directory gets its ID once:
//
//   - an initial member of a static bootstrap (--cluster) with an empty data
//     directory (no Raft state, nothing applied) first persists a random
//     candidate (cluster.candidate) and, before it starts Raft, asks every
//     listed peer over the link's bootstrap probe (kind 'B') what it holds
//     (probeAnswer). It bootstraps once every peer has answered that it is
//     empty too (decideBootstrap); the cluster ID is then a hash of all the
//     members' candidates (roundID), which every member of the same fresh
//     bootstrap computes alike, and each keeps the candidates it came from
//     (cluster.round). A peer that holds state (or an ID) answers with its
//     round: if this node's candidate is in it, that peer finished this same
//     bootstrap a moment earlier and this node takes its ID; if not, this
//     node refuses to start (ErrClusterHeld), naming the recovery. A peer
//     that does not answer makes it wait, never elect. So a node whose disk
//     was replaced never bootstraps a new cluster over the old one's
//     history: its new candidate is in no round the others hold.
//   - a member that joins with --join takes the ID from GET /v1/cluster of
//     the member it joins through, before its Raft starts (Node.awaitJoinID),
//     and checks it against the join's answer (cluster_id); one added by hand
//     (POST /v1/cluster/join by an operator) takes it from the first Raft
//     connection of a member while it has neither an ID nor state
//     (identity.accept).
//   - a data directory with state and no ID (made by a version without
//     cluster.id) derives one from its latest Raft configuration (legacyID),
//     which the members of a cluster at rest share.
//
// The candidate and round files stay after the bootstrap: a member answers
// probes with them, so that a member of the same fresh bootstrap that
// decides a moment later takes the same ID.

const (
	clusterIDFile = "cluster.id"
	candidateFile = "cluster.candidate"
	roundFile     = "cluster.round"
)

// Bootstrap probe timing (identity.awaitBootstrap).
const (
	probeInterval = 250 * time.Millisecond // between two rounds of probes
	probeTimeout  = time.Second            // one probe
	waitLogEvery  = 5 * time.Second        // the Warn that names the peers not heard from (the first after 1 s)
)

// maxProbeBytes bounds a probe answer, as the peer link does.
const maxProbeBytes = peerlink.MaxProbeBytes

// maxRound bounds the candidates of a round: the members of a static
// bootstrap (their answer fits maxProbeBytes).
const maxRound = 64

// ErrClusterHeld is wrapped by the error of a node with an empty data
// directory whose --cluster peers hold a cluster's state: it must not
// bootstrap a new cluster over theirs.
var ErrClusterHeld = errors.New("a peer holds the cluster's state")

// clusterID names a cluster. The zero value is none.
type clusterID [16]byte

// String returns the ID in hex, or "" for none.
func (c clusterID) String() string {
	if c.isZero() {
		return ""
	}
	return hex.EncodeToString(c[:])
}

func (c clusterID) isZero() bool { return c == clusterID{} }

// parseClusterID parses 32 hex digits; "" is the zero ID.
func parseClusterID(s string) (clusterID, error) {
	var c clusterID
	if s == "" {
		return c, nil
	}
	if len(s) != 2*len(c) {
		return c, fmt.Errorf("cluster id %q: want %d hex digits", s, 2*len(c))
	}
	if _, err := hex.Decode(c[:], []byte(s)); err != nil {
		return c, fmt.Errorf("cluster id %q: %w", s, err)
	}
	return c, nil
}

// newCandidate returns 16 random bytes, never zero.
func newCandidate() (clusterID, error) {
	var c clusterID
	for c.isZero() {
		if _, err := rand.Read(c[:]); err != nil {
			return c, fmt.Errorf("cluster candidate: %w", err)
		}
	}
	return c, nil
}

// roundID is the cluster ID of a fresh static bootstrap: the first 16 bytes
// of the SHA-256 of the members' candidates, sorted, in hex, one a line. It
// depends only on the set of candidates, so every member computes the same.
func roundID(cands []clusterID) clusterID {
	hexes := make([]string, len(cands))
	for i, c := range cands {
		hexes[i] = c.String()
	}
	slices.Sort(hexes)
	sum := sha256.Sum256([]byte("txlog cluster\n" + strings.Join(hexes, "\n") + "\n"))
	var id clusterID
	copy(id[:], sum[:])
	return id
}

// legacyID is the cluster ID of a data directory made by a version without
// cluster.id: the first 16 bytes of the SHA-256 of its latest Raft
// configuration's servers, "id=addr" sorted, one a line. Members whose
// latest configurations agree (a cluster at rest: no membership change in
// flight) derive the same ID.
func legacyID(servers []Peer) clusterID {
	lines := make([]string, len(servers))
	for i, s := range servers {
		lines[i] = s.ID + "=" + s.RaftAddr
	}
	slices.Sort(lines)
	sum := sha256.Sum256([]byte("txlog legacy cluster\n" + strings.Join(lines, "\n") + "\n"))
	var id clusterID
	copy(id[:], sum[:])
	return id
}

// readIDFile reads a cluster.id or cluster.candidate file: 32 hex digits and
// a newline. A missing file gives the zero ID.
func readIDFile(path string) (clusterID, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return clusterID{}, nil
	}
	if err != nil {
		return clusterID{}, fmt.Errorf("read %s: %w", path, err)
	}
	id, err := parseClusterID(strings.TrimSpace(string(b)))
	if err != nil || id.isZero() {
		return clusterID{}, fmt.Errorf("read %s: %q is not a cluster id (32 hex digits); restore the file from another member's data directory (cluster.id is the same on every member)", path, b)
	}
	return id, nil
}

// writeIDFile writes a cluster.id or cluster.candidate file durably: a
// temporary file, its fsync, a rename and syncDir of the directory.
//
//	<32 lowercase hex digits> '\n'
func writeIDFile(path string, id clusterID, syncDir func(string) error) error {
	return dirsync.WriteFile(path, []byte(id.String()+"\n"), 0o644, syncDir)
}

// readRoundFile reads a cluster.round file: the candidates of the bootstrap
// the data directory's ID came from, one per line. A missing file gives none.
func readRoundFile(path string) ([]clusterID, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	round, err := parseRound(strings.Fields(string(b)))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w; restore it from another initial member's data directory", path, err)
	}
	return round, nil
}

// writeRoundFile writes a cluster.round file durably, as writeIDFile does:
//
//	<32 hex digits> '\n'   one line per candidate, sorted
func writeRoundFile(path string, round []clusterID, syncDir func(string) error) error {
	var b strings.Builder
	for _, h := range roundStrings(round) {
		b.WriteString(h + "\n")
	}
	return dirsync.WriteFile(path, []byte(b.String()), 0o644, syncDir)
}

// parseRound parses a round's candidates: at most maxRound, each non-zero.
func parseRound(hexes []string) ([]clusterID, error) {
	if len(hexes) > maxRound {
		return nil, fmt.Errorf("round of %d candidates, over %d", len(hexes), maxRound)
	}
	round := make([]clusterID, 0, len(hexes))
	for _, h := range hexes {
		c, err := parseClusterID(h)
		if err != nil || c.isZero() {
			return nil, fmt.Errorf("round candidate %q: want 32 hex digits, not all zero", h)
		}
		round = append(round, c)
	}
	return round, nil
}

// roundStrings returns a round's candidates in hex, sorted.
func roundStrings(round []clusterID) []string {
	hexes := make([]string, len(round))
	for i, c := range round {
		hexes[i] = c.String()
	}
	slices.Sort(hexes)
	return hexes
}

// probeAnswer is the payload of a bootstrap probe's answer (the link's kind
// 'B'), JSON of at most maxProbeBytes:
//
//	{"id":"n2","has_state":false,"cluster_id":"","candidate":"5f0c…(32 hex)"}
//	{"id":"n3","has_state":true,"cluster_id":"…","candidate":"…","round":["…","…","…"]}
//
// ID is the answering node's; HasState says that its data directory holds
// Raft state or applied entries; ClusterID is its cluster's ID ("" while it
// has none); Candidate its bootstrap candidate ("" for a node that never
// bootstrapped: one that joined, or one whose ID was derived); Round the
// candidates its ID came from, sorted (none unless it came from a round).
type probeAnswer struct {
	ID        string   `json:"id"`
	HasState  bool     `json:"has_state"`
	ClusterID string   `json:"cluster_id"`
	Candidate string   `json:"candidate"`
	Round     []string `json:"round,omitempty"`
}

// decodeProbeAnswer decodes and checks a probe answer from the network.
func decodeProbeAnswer(b []byte) (probeAnswer, error) {
	var a probeAnswer
	if len(b) > maxProbeBytes {
		return a, fmt.Errorf("probe answer: %d bytes, over %d", len(b), maxProbeBytes)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	if err := d.Decode(&a); err != nil {
		return probeAnswer{}, fmt.Errorf("probe answer: %w", err)
	}
	if d.More() {
		return probeAnswer{}, errors.New("probe answer: data after the JSON object")
	}
	if a.ID == "" || len(a.ID) > 64 {
		return probeAnswer{}, fmt.Errorf("probe answer: id of %d bytes, want 1..64", len(a.ID))
	}
	if _, err := parseClusterID(a.ClusterID); err != nil {
		return probeAnswer{}, fmt.Errorf("probe answer: cluster_id: %w", err)
	}
	if _, err := parseClusterID(a.Candidate); err != nil {
		return probeAnswer{}, fmt.Errorf("probe answer: candidate: %w", err)
	}
	if _, err := parseRound(a.Round); err != nil {
		return probeAnswer{}, fmt.Errorf("probe answer: %w", err)
	}
	return a, nil
}

// encode returns the answer's JSON.
func (a probeAnswer) encode() []byte {
	b, _ := json.Marshal(a) // strings and a bool: cannot fail
	return b
}

// verdict is what a node with an empty data directory does about a static
// bootstrap after a round of probes.
type verdict int

const (
	verdictWait      verdict = iota // some peer has not answered (usably)
	verdictBootstrap                // bootstrap Raft under bootstrapDecision.id
	verdictRefuse                   // a peer holds state: do not start
)

// bootstrapDecision is decideBootstrap's result.
type bootstrapDecision struct {
	verdict verdict
	id      clusterID   // verdictBootstrap: the cluster ID
	round   []clusterID // verdictBootstrap: the candidates id comes from
	// waiting names, for verdictWait, the peers not heard from (with why, when
	// they answered something unusable).
	waiting []string
	// holder and holderID name, for verdictRefuse, the peer that holds state
	// and the cluster ID it holds it under ("" for none).
	holder, holderID string
}

// decideBootstrap decides, for node self with an empty data directory and
// bootstrap candidate own, what to do about the static bootstrap of cluster
// (the --cluster list, self included), given answers, the latest probe
// answer of each peer that answered in this round (by listed ID). It is pure:
// every member that sees the same answers decides the same.
//
//   - a peer that holds state or a cluster ID: if its round holds own and
//     its ID is that round's, it bootstrapped this same cluster a moment ago:
//     take its ID (bootstrap). Else (another round, or no round: it joined, or
//     derived its ID) this node must not bootstrap: refuse, at once;
//   - a peer not heard from, that answered as another node, or empty without
//     a candidate: wait;
//   - every peer empty: bootstrap with roundID of all the candidates.
func decideBootstrap(self string, own clusterID, cluster []Peer, answers map[string]probeAnswer) bootstrapDecision {
	var waiting []string
	cands := []clusterID{own}
	for _, p := range cluster {
		if p.ID == self {
			continue
		}
		a, ok := answers[p.ID]
		if !ok {
			waiting = append(waiting, p.ID)
			continue
		}
		if a.ID != p.ID {
			waiting = append(waiting, fmt.Sprintf("%s (answered as %q)", p.ID, a.ID))
			continue
		}
		if a.HasState || a.ClusterID != "" {
			round, err := parseRound(a.Round)
			id, _ := parseClusterID(a.ClusterID)
			if err != nil || !slices.Contains(round, own) || id.isZero() || roundID(round) != id {
				return bootstrapDecision{verdict: verdictRefuse, holder: p.ID, holderID: a.ClusterID}
			}
			return bootstrapDecision{verdict: verdictBootstrap, id: id, round: round}
		}
		cand, err := parseClusterID(a.Candidate)
		if err != nil || cand.isZero() {
			waiting = append(waiting, p.ID+" (no candidate)")
			continue
		}
		cands = append(cands, cand)
	}
	if len(waiting) > 0 {
		return bootstrapDecision{verdict: verdictWait, waiting: waiting}
	}
	return bootstrapDecision{verdict: verdictBootstrap, id: roundID(cands), round: cands}
}

// identity is this node's cluster ID and bootstrap candidate: it answers the
// peer link's probes and hooks (ClusterID, accept), waits for the peers at a
// static bootstrap, and persists the ID.
type identity struct {
	self    string
	dir     string // the data directory
	syncDir func(string) error
	log     *slog.Logger
	// joining says that this node, with no ID and no state, takes the ID of
	// the first member whose Raft connects to it (accept): it is to be joined
	// by hand (neither --cluster nor --join).
	joining bool

	id        atomic.Pointer[clusterID]   // nil: none yet
	candidate clusterID                   // zero: none; set before the link serves
	round     atomic.Pointer[[]clusterID] // the candidates id came from; nil: none
	hasState  atomic.Bool
	waiting   atomic.Pointer[string] // the peers not heard from, while awaitBootstrap waits
	mu        sync.Mutex             // serializes set
}

// openIdentity reads the data directory's cluster ID and candidate.
func openIdentity(self, dir string, log *slog.Logger, syncDir func(string) error) (*identity, error) {
	i := &identity{self: self, dir: dir, log: log, syncDir: syncDir}
	id, err := readIDFile(filepath.Join(dir, clusterIDFile))
	if err != nil {
		return nil, err
	}
	if !id.isZero() {
		i.id.Store(&id)
	}
	if i.candidate, err = readIDFile(filepath.Join(dir, candidateFile)); err != nil {
		return nil, err
	}
	round, err := readRoundFile(filepath.Join(dir, roundFile))
	if err != nil {
		return nil, err
	}
	if round != nil {
		i.round.Store(&round)
	}
	return i, nil
}

// clusterID returns this node's cluster ID, zero while it has none. The peer
// link calls it for every connection.
func (i *identity) clusterID() [16]byte {
	if p := i.id.Load(); p != nil {
		return *p
	}
	return [16]byte{}
}

// set persists id as this node's cluster ID. Setting the ID it has is a no-op;
// another one is an error.
func (i *identity) set(id clusterID, how string) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if have := i.clusterID(); have != [16]byte{} {
		if have != id {
			return fmt.Errorf("cluster id: this node belongs to cluster %s, not %s (%s)", clusterID(have), id, how)
		}
		return nil
	}
	if id.isZero() {
		return fmt.Errorf("cluster id: none given (%s)", how)
	}
	if err := writeIDFile(filepath.Join(i.dir, clusterIDFile), id, i.syncDir); err != nil {
		return err
	}
	i.id.Store(&id)
	i.log.Info("cluster id", "cluster_id", id.String(), "from", how)
	return nil
}

// ensureCandidate creates and persists this node's bootstrap candidate if it
// has none. Called before the link answers probes.
func (i *identity) ensureCandidate() error {
	if !i.candidate.isZero() {
		return nil
	}
	c, err := newCandidate()
	if err != nil {
		return err
	}
	if err := writeIDFile(filepath.Join(i.dir, candidateFile), c, i.syncDir); err != nil {
		return err
	}
	i.candidate = c
	return nil
}

// answerProbe is the peer link's bootstrap handler: this node's probeAnswer.
// remoteNode is the prober's ID from the link's header.
func (i *identity) answerProbe(remoteNode string) []byte {
	return probeAnswer{
		ID:        i.self,
		HasState:  i.hasState.Load(),
		ClusterID: clusterID(i.clusterID()).String(),
		Candidate: i.candidate.String(),
		Round:     i.roundStrings(),
	}.encode()
}

// roundStrings returns the candidates this node's ID came from, nil if none.
func (i *identity) roundStrings() []string {
	if r := i.round.Load(); r != nil {
		return roundStrings(*r)
	}
	return nil
}

// awaitBootstrap probes every peer of cluster (self excluded) each
// probeInterval until decideBootstrap says bootstrap or refuse, and persists
// the ID it bootstraps with. It returns an error wrapping ErrClusterHeld on a
// refusal, ctx's error when ctx ends first. Every waitLogEvery it logs at Warn
// the peers not heard from. probe asks one peer address; a real node's is the
// peer link's Probe.
func (i *identity) awaitBootstrap(ctx context.Context, cluster []Peer, probe func(ctx context.Context, addr string) ([]byte, error)) error {
	if err := i.ensureCandidate(); err != nil {
		return err
	}
	i.log.Info("empty data dir: asking the --cluster peers before bootstrapping", "candidate", i.candidate.String(), "peers", len(cluster)-1)
	started := time.Now()
	lastLog := started.Add(time.Second - waitLogEvery) // the first Warn after a second
	for {
		answers, errs := i.probeAll(ctx, cluster, probe)
		d := decideBootstrap(i.self, i.candidate, cluster, answers)
		switch d.verdict {
		case verdictBootstrap:
			// The round first: a node with the ID answers with it.
			if err := writeRoundFile(filepath.Join(i.dir, roundFile), d.round, i.syncDir); err != nil {
				return err
			}
			i.round.Store(&d.round)
			return i.set(d.id, "the candidates of every --cluster member")
		case verdictRefuse:
			err := fmt.Errorf("%w: this node's data directory is empty but peer %s holds the cluster's state (cluster id %q): "+
				"start this node with --join <a member's URL> as a new member after removing its old entry (DELETE /v1/cluster/nodes/%s on a member), "+
				"or restore its data directory; if the members holding state are too few to elect a leader, restore the lost data directories (docs/operations.md)",
				ErrClusterHeld, d.holder, d.holderID, i.self)
			return err // txlogd prints it and exits 1
		}
		why := "waiting for --cluster peers before bootstrapping; not heard from: " + strings.Join(d.waiting, ", ")
		i.waiting.Store(&why)
		if time.Since(lastLog) >= waitLogEvery {
			lastLog = time.Now()
			// errs says why of each peer not heard from (refused, a bad
			// answer); logged here only, so that a peer that answers
			// garbage costs a line every few seconds, not every round.
			i.log.Warn("waiting for --cluster peers before bootstrapping", "not_heard_from", strings.Join(d.waiting, ","), "errs", errs, "waited", time.Since(started).Round(time.Second))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for --cluster peers (%s): %w", strings.Join(d.waiting, ","), context.Cause(ctx))
		case <-time.After(probeInterval):
		}
	}
}

// waitingFor says which peers awaitBootstrap waits for.
func (i *identity) waitingFor() string {
	if p := i.waiting.Load(); p != nil {
		return *p
	}
	return "waiting for --cluster peers before bootstrapping"
}

// probeAll probes the peers of cluster other than self at once and returns
// the usable answers and, for the others, why, by listed ID.
func (i *identity) probeAll(ctx context.Context, cluster []Peer, probe func(ctx context.Context, addr string) ([]byte, error)) (map[string]probeAnswer, map[string]string) {
	type result struct {
		id  string
		a   probeAnswer
		err error
	}
	results := make(chan result, len(cluster))
	var wg sync.WaitGroup
	for _, p := range cluster {
		if p.ID == i.self {
			continue
		}
		wg.Go(func() {
			pctx, cancel := context.WithTimeout(ctx, probeTimeout)
			defer cancel()
			b, err := probe(pctx, p.RaftAddr)
			if err != nil {
				results <- result{id: p.ID, err: err}
				return
			}
			a, err := decodeProbeAnswer(b)
			results <- result{p.ID, a, err}
		})
	}
	wg.Wait()
	close(results)
	answers := make(map[string]probeAnswer, len(cluster))
	errs := map[string]string{}
	for r := range results {
		if r.err != nil {
			errs[r.id] = r.err.Error()
			continue
		}
		answers[r.id] = r.a
	}
	return answers, errs
}

// deriveLegacy gives a data directory with Raft state and no cluster ID (one
// made by a version without cluster.id) the ID legacyID derives from its
// latest Raft configuration. Called by Open right after Raft started, before
// the node serves; a directory with an ID keeps it.
func (i *identity) deriveLegacy(r interface {
	Members(ctx context.Context) ([]replication.Member, error)
}) error {
	if i.clusterID() != [16]byte{} {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	members, err := r.Members(ctx)
	cancel()
	if err != nil {
		return fmt.Errorf("cluster id: read the raft configuration to derive one: %w", err)
	}
	if len(members) == 0 {
		i.log.Warn("no cluster id and no raft configuration to derive one from: the node takes one when it joins")
		return nil
	}
	servers := make([]Peer, len(members))
	for k, m := range members {
		servers[k] = Peer{ID: m.ID, RaftAddr: m.Addr}
	}
	return i.set(legacyID(servers), "derived from the latest raft configuration of a data dir made without cluster.id")
}

// accept is the peer link's policy (peerlink.Config.Accept): the default
// (bootstrap probes whatever the IDs, every other kind only between members
// of one cluster), except that a node to be joined by hand (joining: neither
// --cluster nor --join, no state, no ID), which gets no join answer, takes
// the ID of the first member whose Raft connects to it: the leader its
// operator asked to add it.
func (i *identity) accept(kind byte, remote peerlink.ClusterID, remoteNode string) error {
	if kind == peerlink.KindRaft && i.joining && remote != (peerlink.ClusterID{}) && i.clusterID() == (peerlink.ClusterID{}) {
		if err := i.set(clusterID(remote), "the first raft connection of member "+remoteNode+" while joining"); err != nil {
			return err
		}
	}
	return peerlink.DefaultAccept(i.clusterID)(kind, remote, remoteNode)
}
