package chaos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Fault is a kind of failure the nemesis injects.
type Fault string

// The faults. Each names what it does to whom; docs/chaos.md says what each models.
const (
	// FaultKillLeader SIGKILLs the leader, waits for a new one, restarts the old.
	FaultKillLeader Fault = "kill-leader"
	// FaultKillFollower SIGKILLs a follower and restarts it.
	FaultKillFollower Fault = "kill-follower"
	// FaultPauseLeader SIGSTOPs the leader past the election timeout, then SIGCONTs it.
	FaultPauseLeader Fault = "pause-leader"
	// FaultPartitionLeader cuts the leader off from both peers, then heals.
	FaultPartitionLeader Fault = "partition-leader"
	// FaultPartitionOneWay makes the leader deaf: it sends, but receives nothing.
	FaultPartitionOneWay Fault = "partition-oneway"
	// FaultRedisOutage stops Redis, SIGKILLs the leader, and brings Redis back
	// empty after the failover.
	FaultRedisOutage Fault = "redis-outage"
	// FaultTermLeader stops the leader with SIGTERM (it hands over) and restarts it.
	FaultTermLeader Fault = "term-leader"
	// FaultQuorumLoss SIGKILLs the leader and a follower, waits, restarts both.
	FaultQuorumLoss Fault = "quorum-loss"
	// FaultPowerLoss freezes nodes, drops what their data dirs had not synced
	// (a lazyfs mount each), SIGKILLs and restarts them (powerloss.go). It is
	// in no default mix: it needs Linux, root and /dev/fuse.
	FaultPowerLoss Fault = "powerloss"
	// FaultPauseHolder SIGSTOPs a lease contender that holds a lease past
	// the lease's TTL, then SIGCONTs it (lease_workload.go). It needs the
	// lease workload.
	FaultPauseHolder Fault = "pause-holder"
	// FaultPauseConsumer SIGSTOPs the consumer process that holds the
	// consumer group's lease past its TTL, then SIGCONTs it
	// (consumer_workload.go). It needs the consumer workload.
	FaultPauseConsumer Fault = "pause-consumer"
)

// AllFaults lists every fault in the order reports show them.
var AllFaults = []Fault{FaultKillLeader, FaultKillFollower, FaultPauseLeader, FaultPartitionLeader,
	FaultPartitionOneWay, FaultRedisOutage, FaultTermLeader, FaultQuorumLoss, FaultPowerLoss, FaultPauseHolder, FaultPauseConsumer}

// DefaultFaults is the mix when none is given: every fault but powerloss,
// leader kills four times as often as the rest.
const DefaultFaults = "kill-leader*4,kill-follower,pause-leader,partition-leader,partition-oneway,redis-outage,term-leader,quorum-loss,pause-holder,pause-consumer"

// FaultWeight is a fault and how many times it appears in each round of the
// schedule.
type FaultWeight struct {
	Fault  Fault
	Weight int
}

// ParseFaults parses a comma-separated list of faults, each optionally with a
// weight: "kill-leader*4,pause-leader".
func ParseFaults(s string) ([]FaultWeight, error) {
	var out []FaultWeight
	errs := parseWeighted(s, "fault", func(name string, weight int) error {
		if !slices.Contains(AllFaults, Fault(name)) {
			return fmt.Errorf("unknown fault %q (known: %s)", name, faultNames(AllFaults))
		}
		out = append(out, FaultWeight{Fault(name), weight})
		return nil
	})
	if len(out) == 0 && len(errs) == 0 {
		errs = append(errs, errors.New("no faults given"))
	}
	return out, errors.Join(errs...)
}

// parseWeighted splits a comma-separated list of names, each optionally with
// a weight 1..1000 after "*" (default 1), and hands each to add; it returns
// the weights' errors and add's, in order. kind names the items in errors.
func parseWeighted(s, kind string, add func(name string, weight int) error) []error {
	var errs []error
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		name, w, hasWeight := strings.Cut(f, "*")
		weight := 1
		if hasWeight {
			n, err := strconv.Atoi(w)
			if err != nil || n < 1 || n > 1000 {
				errs = append(errs, fmt.Errorf("%s %q: weight %q, want 1..1000", kind, f, w))
				continue
			}
			weight = n
		}
		if err := add(name, weight); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func faultNames(fs []Fault) string {
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = string(f)
	}
	return strings.Join(s, ", ")
}

// Schedule is the order of faults the nemesis injects: rounds in which each
// fault appears as often as its weight, shuffled by the seed. The same seed and
// weights give the same schedule. Which node a fault hits depends on who leads
// at the time, so only the schedule, not the whole run, replays.
type Schedule struct {
	rng   *rand.Rand
	deck  []Fault
	round []Fault
}

// NewSchedule returns the schedule of weights under seed.
func NewSchedule(seed uint64, weights []FaultWeight) *Schedule {
	s := &Schedule{rng: rand.New(rand.NewPCG(seed, 0x6e656d65736973))}
	for _, w := range weights {
		for range w.Weight {
			s.deck = append(s.deck, w.Fault)
		}
	}
	return s
}

// Next returns the next fault.
func (s *Schedule) Next() Fault {
	if len(s.round) == 0 {
		s.round = slices.Clone(s.deck)
		s.rng.Shuffle(len(s.round), func(i, j int) { s.round[i], s.round[j] = s.round[j], s.round[i] })
	}
	f := s.round[0]
	s.round = s.round[1:]
	return f
}

// jitter returns d scaled by a factor in [0.75, 1.25) drawn from the schedule.
func (s *Schedule) jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.75 + s.rng.Float64()/2))
}

// pick returns one of ids, drawn from the schedule.
func (s *Schedule) pick(ids []string) string { return ids[s.rng.IntN(len(ids))] }

// Target is the cluster the nemesis acts on: a local one it launched, or a
// deployment driven through command templates. Node IDs are txlogd's --id.
type Target interface {
	// Supports says why the target cannot inject f, or returns nil.
	Supports(f Fault) error
	Kill(ctx context.Context, id string) error
	Start(ctx context.Context, id string) error
	// Stop stops a node gracefully (SIGTERM) and waits for it to exit.
	Stop(ctx context.Context, id string) error
	Pause(ctx context.Context, id string) error
	Resume(ctx context.Context, id string) error
	// Partition cuts id off from its peers: both ways, or, with oneWay, only
	// what reaches id.
	Partition(ctx context.Context, id string, oneWay bool) error
	Heal(ctx context.Context, id string) error
	RedisStop(ctx context.Context) error
	// RedisStart brings Redis back, without the data it had.
	RedisStart(ctx context.Context) error
}

// FaultEvent is one injected fault and how the cluster took it.
type FaultEvent struct {
	Kind   Fault    `json:"kind"`
	Nodes  []string `json:"nodes"`  // the nodes it hit
	Leader string   `json:"leader"` // the leader when it was injected
	// Injected is when the fault began, Healed when the nemesis undid it, and
	// Recovered when every node was ready again under one leader (zero: not
	// within the recovery timeout).
	Injected  time.Time `json:"injected"`
	Healed    time.Time `json:"healed"`
	Recovered time.Time `json:"recovered,omitzero"`
	NewLeader string    `json:"new_leader,omitempty"`
	// Election is, for faults that remove the leader, the time from injection
	// until another node led; for term-leader it is the hand-over time.
	Election time.Duration `json:"election,omitempty"`
	// LeaderKills counts the SIGKILLs of the leader in this fault.
	LeaderKills int `json:"leader_kills,omitempty"`
	// Idle marks the leader change made after the workload ended (idleFault):
	// no write follows it, so only its recovery counts.
	Idle bool `json:"idle,omitempty"`
	// PowerLoss describes a powerloss fault; nil for the others.
	PowerLoss *PowerLossEvent `json:"power_loss,omitempty"`
	// LeasePause describes a pause-holder fault; nil for the others.
	LeasePause *LeasePauseEvent `json:"lease_pause,omitempty"`
	// ConsumerPause describes a pause-consumer fault; nil for the others.
	ConsumerPause *ConsumerPauseEvent `json:"consumer_pause,omitempty"`
	// NotRestarted lists the nodes the fault stopped that could not be
	// started again within the recovery timeout; StartRetried those that
	// started only after failed tries (startNode).
	NotRestarted []string `json:"not_restarted,omitempty"`
	StartRetried []string `json:"start_retried,omitempty"`
	Err          string   `json:"err,omitempty"`
}

// NemesisConfig describes the faults of a run. Zero values mean "use the default".
type NemesisConfig struct {
	// Faults is the mix of faults. Default: ParseFaults(DefaultFaults), less the
	// faults the target does not support.
	Faults []FaultWeight
	// Interval is the quiet time between the recovery from one fault and the next.
	// Default 2s.
	Interval time.Duration
	// Hold is how long a pause, partition, follower kill or quorum loss lasts
	// (with ±25% jitter). Default 2.5s: past txlogd's election timeout.
	Hold time.Duration
	// MaxFaults stops the nemesis after that many faults. Default 0: no limit.
	MaxFaults int
	// RecoverTimeout bounds the wait for a leader and ready nodes after a fault.
	// Default 45s.
	RecoverTimeout time.Duration
}

// Defaults of NemesisConfig.
const (
	DefaultFaultInterval  = 2 * time.Second
	DefaultHold           = 2500 * time.Millisecond
	DefaultRecoverTimeout = 45 * time.Second
)

func (c NemesisConfig) withDefaults() NemesisConfig {
	if len(c.Faults) == 0 {
		c.Faults, _ = ParseFaults(DefaultFaults)
	}
	if c.Interval == 0 {
		c.Interval = DefaultFaultInterval
	}
	if c.Hold == 0 {
		c.Hold = DefaultHold
	}
	if c.RecoverTimeout == 0 {
		c.RecoverTimeout = DefaultRecoverTimeout
	}
	return c
}

// nemesis injects faults into a target on a schedule and records them.
type nemesis struct {
	cfg    NemesisConfig
	target Target
	sched  *Schedule
	mon    *monitor
	log    *slog.Logger
	// leases is the lease workload that pause-holder acts on; nil without one.
	leases *leaseWorkload
	// consumers is the consumer workload that pause-consumer acts on; nil
	// without one.
	consumers *consumerWorkload

	// powerLosses counts the powerloss faults so far; it picks the next one's
	// victims and mode (powerLossPlan). Only run's goroutine touches it.
	powerLosses int

	mu     sync.Mutex
	events []FaultEvent
}

// Events returns the faults so far.
func (n *nemesis) Events() []FaultEvent {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.events)
}

// run injects faults until ctx ends or MaxFaults is reached. Each fault is
// undone before run looks at ctx again, so the cluster is whole when run returns
// (unless a heal itself failed, which the event records).
func (n *nemesis) run(ctx context.Context) {
	for i := 0; n.cfg.MaxFaults == 0 || i < n.cfg.MaxFaults; i++ {
		if !sleepCtx(ctx, n.sched.jitter(n.cfg.Interval)) {
			return
		}
		f := n.sched.Next()
		ev := n.inject(ctx, f)
		n.mu.Lock()
		n.events = append(n.events, ev)
		n.mu.Unlock()
		n.log.Info("fault done", "fault", f, "nodes", ev.Nodes, "election", ev.Election, "recovered", !ev.Recovered.IsZero(), "err", ev.Err)
	}
}

// idleFaults are the faults idleFault may make, in order of preference.
var idleFaults = []Fault{FaultKillLeader, FaultTermLeader, FaultPartitionLeader}

// idleFault changes the leader once more after the workload has ended, with the
// first of idleFaults among the run's faults (weights, which the target
// supports), and records it as an Idle event: a cluster whose last entries are
// a new leader's (its no-op, which no state machine sees) must still become
// ready with no write to follow. A 10-minute soak once found one that did not,
// by chance: its last fault fell as the workload ended. It returns false
// when the run has none of them.
func (n *nemesis) idleFault(ctx context.Context, weights []FaultWeight) bool {
	for _, f := range idleFaults {
		if !slices.ContainsFunc(weights, func(w FaultWeight) bool { return w.Fault == f }) {
			continue
		}
		ev := n.inject(ctx, f)
		ev.Idle = true
		n.mu.Lock()
		n.events = append(n.events, ev)
		n.mu.Unlock()
		n.log.Info("idle fault done", "fault", f, "nodes", ev.Nodes, "recovered", !ev.Recovered.IsZero(), "err", ev.Err)
		return true
	}
	return false
}

// inject runs one fault from injection to recovery. It uses its own context for
// healing, so that the end of the run never leaves a node down or cut off.
func (n *nemesis) inject(runCtx context.Context, f Fault) FaultEvent {
	ctx := context.WithoutCancel(runCtx)
	ev := FaultEvent{Kind: f}
	lctx, cancel := context.WithTimeout(ctx, n.cfg.RecoverTimeout)
	leader, err := n.mon.waitLeader(lctx, "")
	cancel()
	if err != nil {
		ev.Err = fmt.Sprintf("no leader to inject %s into: %v", f, err)
		return ev
	}
	ev.Leader = leader
	followers := n.mon.others(leader)
	if len(followers) == 0 && (f == FaultKillFollower || f == FaultQuorumLoss || f == FaultPowerLoss) {
		ev.Err = fmt.Sprintf("%s needs a follower; the cluster has one node", f)
		return ev
	}
	hold := n.sched.jitter(n.cfg.Hold)
	var errs []error
	try := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	// electionAfter waits for a leader other than old and records it.
	electionAfter := func(old string) {
		wctx, cancel := context.WithTimeout(ctx, n.cfg.RecoverTimeout)
		defer cancel()
		id, err := n.mon.waitLeader(wctx, old)
		if err != nil {
			try(fmt.Errorf("no new leader after %s lost %s: %w", f, old, err))
			return
		}
		ev.NewLeader, ev.Election = id, time.Since(ev.Injected)
	}

	// holdWatching holds the fault for hold and records the first other leader
	// that a majority agrees on meanwhile, if any.
	holdWatching := func(old string) {
		end := ev.Injected.Add(hold)
		wctx, cancel := context.WithDeadline(ctx, end)
		if id, err := n.mon.waitLeader(wctx, old); err == nil {
			ev.NewLeader, ev.Election = id, time.Since(ev.Injected)
		}
		cancel()
		sleepCtx(ctx, time.Until(end))
	}

	switch f {
	case FaultKillLeader:
		ev.Nodes, ev.LeaderKills = []string{leader}, 1
		ev.Injected = time.Now()
		try(n.target.Kill(ctx, leader))
		electionAfter(leader)
		ev.Healed = time.Now()
		try(n.startNode(ctx, leader, &ev))
	case FaultKillFollower:
		id := n.sched.pick(followers)
		ev.Nodes = []string{id}
		ev.Injected = time.Now()
		try(n.target.Kill(ctx, id))
		sleepCtx(ctx, hold)
		ev.Healed = time.Now()
		try(n.startNode(ctx, id, &ev))
	case FaultPauseLeader:
		ev.Nodes = []string{leader}
		ev.Injected = time.Now()
		try(n.target.Pause(ctx, leader))
		holdWatching(leader)
		ev.Healed = time.Now()
		try(n.target.Resume(ctx, leader))
	case FaultPartitionLeader, FaultPartitionOneWay:
		ev.Nodes = []string{leader}
		ev.Injected = time.Now()
		try(n.target.Partition(ctx, leader, f == FaultPartitionOneWay))
		holdWatching(leader)
		ev.Healed = time.Now()
		try(n.target.Heal(ctx, leader))
	case FaultRedisOutage:
		ev.Nodes, ev.LeaderKills = []string{"redis", leader}, 1
		ev.Injected = time.Now()
		try(n.target.RedisStop(ctx))
		try(n.target.Kill(ctx, leader))
		electionAfter(leader)
		try(n.startNode(ctx, leader, &ev))
		ev.Healed = time.Now()
		try(n.target.RedisStart(ctx))
	case FaultTermLeader:
		ev.Nodes = []string{leader}
		ev.Injected = time.Now()
		stopped := make(chan error, 1)
		go func() { stopped <- n.target.Stop(ctx, leader) }()
		electionAfter(leader)
		try(<-stopped)
		ev.Healed = time.Now()
		try(n.startNode(ctx, leader, &ev))
	case FaultQuorumLoss:
		id := n.sched.pick(followers)
		ev.Nodes, ev.LeaderKills = []string{leader, id}, 1
		ev.Injected = time.Now()
		try(n.target.Kill(ctx, leader))
		try(n.target.Kill(ctx, id))
		sleepCtx(ctx, hold)
		ev.Healed = time.Now()
		try(n.startNode(ctx, id, &ev))
		try(n.startNode(ctx, leader, &ev))
	case FaultPowerLoss:
		n.powerLoss(ctx, &ev, leader, followers, try, electionAfter)
	case FaultPauseHolder:
		if n.leases == nil {
			try(fmt.Errorf("%s: no lease workload: %w", f, ErrUnsupported))
			break
		}
		try(n.leases.pauseHolder(ctx, &ev, n.sched, n.cfg.RecoverTimeout))
	case FaultPauseConsumer:
		if n.consumers == nil {
			try(fmt.Errorf("%s: no consumer workload: %w", f, ErrUnsupported))
			break
		}
		try(n.consumers.pauseConsumer(ctx, &ev, n.cfg.RecoverTimeout))
	}
	wctx, cancel := context.WithTimeout(ctx, n.cfg.RecoverTimeout)
	if err := n.mon.waitHealthy(wctx); err != nil {
		try(fmt.Errorf("not recovered after %s: %w", f, err))
	} else {
		ev.Recovered = time.Now()
	}
	cancel()
	if err := errors.Join(errs...); err != nil {
		ev.Err = err.Error()
	}
	return ev
}

// startRetry is how long startNode waits between tries.
const startRetry = time.Second

// startNode starts node id again. When that fails (a node that exited before it
// listened), it tries again every startRetry until the node starts or
// RecoverTimeout has passed: the faults that follow need the whole cluster, and
// a run that went on injecting faults into two nodes would only measure the
// lost quorum. The first failure is returned all the same, so that the fault's
// event records it and the run's availability check fails; ev lists the node
// in StartRetried, or in NotRestarted when it never started.
func (n *nemesis) startNode(ctx context.Context, id string, ev *FaultEvent) error {
	err := n.target.Start(ctx, id)
	if err == nil {
		return nil
	}
	ev.NotRestarted = append(ev.NotRestarted, id)
	deadline := time.Now().Add(n.cfg.RecoverTimeout)
	for try := 2; time.Now().Before(deadline); try++ {
		n.log.Warn("start failed; trying again", "node", id, "try", try, "err", err)
		if !sleepCtx(ctx, startRetry) {
			break
		}
		if again := n.target.Start(ctx, id); again == nil {
			ev.NotRestarted = slices.DeleteFunc(ev.NotRestarted, func(s string) bool { return s == id })
			ev.StartRetried = append(ev.StartRetried, id)
			return fmt.Errorf("start %s: failed, then started at try %d: %w", id, try, err)
		}
	}
	return err
}

// sleepCtx waits d or until ctx ends; false when ctx ended.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
