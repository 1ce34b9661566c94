package chaos

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/txlog/txlog/chaos/lazyfs"
)

// The victims of a powerloss fault, in the order the nemesis rotates through
// them.
const (
	PowerLossAll            = "all"
	PowerLossLeader         = "leader"
	PowerLossLeaderFollower = "leader+follower"
)

var powerLossTargets = []string{PowerLossAll, PowerLossLeader, PowerLossLeaderFollower}

// PowerLossEvent is what one powerloss fault did.
type PowerLossEvent struct {
	Target string          `json:"target"` // PowerLossAll, PowerLossLeader or PowerLossLeaderFollower
	Mode   lazyfs.LossMode `json:"mode"`
	Dirs   lazyfs.DirRule  `json:"dirs"`
	// Losses is what each node's file system dropped.
	Losses map[string]lazyfs.Loss `json:"losses,omitempty"`
}

// powerLosser is a target whose nodes' data dirs are lazyfs mounts.
type powerLosser interface {
	// PowerLoss drops what node id's data dir has not synced and leaves it
	// off: every request to it fails until PowerOn.
	PowerLoss(ctx context.Context, id string, mode lazyfs.LossMode) (lazyfs.Loss, error)
	PowerOn(ctx context.Context, id string) error
	DirRule() lazyfs.DirRule
}

// powerLossPlan returns the victims and the mode of the k-th power loss of a
// run (from 0): the victims rotate through powerLossTargets, and the mode is
// LossAll for the first three, LossTorn for the next three, and so on, so that
// every six power losses hit each kind of victims in each mode once.
func powerLossPlan(k int) (string, lazyfs.LossMode) {
	mode := lazyfs.LossAll
	if (k/len(powerLossTargets))%2 == 1 {
		mode = lazyfs.LossTorn
	}
	return powerLossTargets[k%len(powerLossTargets)], mode
}

// powerLoss injects one powerloss fault: it freezes the victims (SIGSTOP), so
// that none writes after the power went, drops their unsynced state, SIGKILLs
// them, turns their disks on again and restarts them. When the leader alone
// lost power it first waits for the others to elect a new one.
func (n *nemesis) powerLoss(ctx context.Context, ev *FaultEvent, leader string, followers []string, try func(error), electionAfter func(string)) {
	pl, ok := n.target.(powerLosser)
	if !ok {
		try(fmt.Errorf("%s: the target has no lazyfs mounts: %w", FaultPowerLoss, ErrUnsupported))
		return
	}
	kind, mode := powerLossPlan(n.powerLosses)
	n.powerLosses++
	victims := []string{leader}
	switch kind {
	case PowerLossAll:
		victims = append(victims, followers...)
	case PowerLossLeaderFollower:
		victims = append(victims, n.sched.pick(followers))
	}
	ev.Nodes, ev.LeaderKills = victims, 1
	ev.PowerLoss = &PowerLossEvent{Target: kind, Mode: mode, Dirs: pl.DirRule(), Losses: map[string]lazyfs.Loss{}}
	ev.Injected = time.Now()
	for _, id := range victims {
		try(n.target.Pause(ctx, id))
	}
	for _, id := range victims {
		loss, err := pl.PowerLoss(ctx, id, mode)
		try(err)
		ev.PowerLoss.Losses[id] = loss
	}
	for _, id := range victims {
		try(n.target.Kill(ctx, id))
		try(pl.PowerOn(ctx, id))
	}
	if kind == PowerLossLeader {
		electionAfter(leader)
	}
	ev.Healed = time.Now()
	for _, id := range victims {
		try(n.startNode(ctx, id, ev))
	}
}

// ErrNoPowerLoss is returned by Run when the faults include powerloss and it
// cannot be injected here.
var ErrNoPowerLoss = errors.New("the powerloss fault cannot run here")

// hasFault reports whether f is among weights.
func hasFault(weights []FaultWeight, f Fault) bool {
	return slices.ContainsFunc(weights, func(w FaultWeight) bool { return w.Fault == f })
}

// checkPowerLoss says why a run of cfg cannot inject powerloss, or returns nil.
func checkPowerLoss(cfg Config) error {
	if !hasFault(cfg.Nemesis.Faults, FaultPowerLoss) {
		return nil
	}
	if cfg.Bin == "" {
		return fmt.Errorf("%w: it needs a local cluster (no --targets), whose data dirs the verifier serves through lazyfs; leave powerloss out of --faults", ErrNoPowerLoss)
	}
	if err := lazyfs.Available(); err != nil {
		return fmt.Errorf("%w: it serves each node's data dir through a FUSE file system and needs Linux, root (or fusermount3 from Debian's fuse3) and /dev/fuse: %v; leave powerloss out of --faults to run without it", ErrNoPowerLoss, err)
	}
	return nil
}

// mountDisks mounts a lazyfs for each of the local cluster's nodes: node nI's
// data dir <dir>/nI is served from <dir>/nI.disk.
func mountDisks(dir string, nodes int, cfg Config) (map[string]*lazyfs.FS, error) {
	disks := map[string]*lazyfs.FS{}
	for i := 1; i <= nodes; i++ {
		id := "n" + strconv.Itoa(i)
		f, err := lazyfs.Mount(lazyfs.Config{
			Backing: filepath.Join(dir, id+".disk"),
			Mount:   filepath.Join(dir, id),
			Dirs:    cfg.PowerLossDirs,
			Seed:    cfg.Seed + uint64(i),
			Logger:  cfg.Logger.With("node", id),
		})
		if err != nil {
			closeDisks(disks)
			return nil, fmt.Errorf("chaos: data dir of %s: %w", id, err)
		}
		disks[id] = f
	}
	return disks, nil
}

func closeDisks(disks map[string]*lazyfs.FS) error {
	var errs []error
	for _, f := range disks {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}

var _ powerLosser = (*localTarget)(nil)

func (t *localTarget) PowerLoss(_ context.Context, id string, mode lazyfs.LossMode) (lazyfs.Loss, error) {
	f := t.disks[id]
	if f == nil {
		return lazyfs.Loss{}, fmt.Errorf("power loss of %s: no lazyfs mount: %w", id, ErrUnsupported)
	}
	loss, err := f.PowerLoss(mode)
	if err != nil {
		return loss, fmt.Errorf("power loss of %s: %w", id, err)
	}
	return loss, nil
}

func (t *localTarget) PowerOn(_ context.Context, id string) error {
	f := t.disks[id]
	if f == nil {
		return fmt.Errorf("power on %s: no lazyfs mount: %w", id, ErrUnsupported)
	}
	f.PowerOn()
	return nil
}

func (t *localTarget) DirRule() lazyfs.DirRule {
	for _, f := range t.disks {
		return f.Dirs()
	}
	return ""
}

// CheckRestarts checks that every node a fault stopped started again at its
// first try: a node that cannot start again after a crash or a power loss
// (a corrupt log, a refused recovery) is lost to the cluster.
func CheckRestarts(faults []FaultEvent) CheckResult {
	var v violations
	for _, f := range faults {
		at := f.Injected.Format(time.StampMilli)
		for _, id := range f.NotRestarted {
			v.addf("%s at %s: %s could not be started again within the recovery timeout (see its log)", f.Kind, at, id)
		}
		for _, id := range f.StartRetried {
			v.addf("%s at %s: %s failed to start, then started at a later try", f.Kind, at, id)
		}
	}
	return v.result(NameRestarts, "every node a fault stopped started again at its first try", "nodes failed to start again")
}
