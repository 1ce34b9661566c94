package chaos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
)

// LeaseConfig describes the lease workload: Contenders processes campaign
// for Leases leases (contender i for lease i mod Leases) and make fenced
// writes while they hold one, beside the clients and under the faults; the
// pause-holder fault SIGSTOPs one that holds a lease past its TTL. Zero
// values mean "use the default".
type LeaseConfig struct {
	// Off leaves the lease workload (and pause-holder) out.
	Off bool
	// Command runs one contender: the program and its leading arguments,
	// such as {"txlog", "chaos-contender"}; ContenderConfig.Args follow.
	// Without one the workload is off.
	Command []string
	// Leases is the number of leases. Default 2.
	Leases int
	// Contenders is the number of contender processes, at least two a
	// lease. Default 2 a lease.
	Contenders int
	// TTL is the leases' TTL. Default 2s.
	TTL time.Duration
	// WriteEvery is the time between a holder's fenced writes. Default 250ms.
	WriteEvery time.Duration
}

// Defaults of LeaseConfig.
const (
	DefaultLeases          = 2
	DefaultLeaseTTL        = 2 * time.Second
	DefaultLeaseWriteEvery = 250 * time.Millisecond
)

// leaseReplaceSlack is what a paused holder's replacement may take beyond
// the TTL: the leaders' clock skew (node.LeaseClockSkew, 500 ms), which a
// grant to another holder waits out, and 2 s for the standby's long poll to
// wake, its acquire and an election.
const leaseReplaceSlack = 2500 * time.Millisecond

func (c LeaseConfig) on() bool { return !c.Off && len(c.Command) > 0 }

func (c LeaseConfig) withDefaults() LeaseConfig {
	if c.Leases == 0 {
		c.Leases = DefaultLeases
	}
	if c.Contenders == 0 {
		c.Contenders = 2 * c.Leases
	}
	if c.TTL == 0 {
		c.TTL = DefaultLeaseTTL
	}
	if c.WriteEvery == 0 {
		c.WriteEvery = DefaultLeaseWriteEvery
	}
	return c
}

// Validate reports every problem with c.
func (c LeaseConfig) Validate() error {
	if c.Off {
		return nil
	}
	var errs []error
	d := c.withDefaults()
	if d.Leases < 1 || d.Contenders < 2*d.Leases {
		errs = append(errs, fmt.Errorf("%d contenders for %d leases: want at least one lease and two contenders a lease", d.Contenders, d.Leases))
	}
	if d.TTL < wire.MinLeaseTTL || d.TTL > wire.MaxLeaseTTL {
		errs = append(errs, fmt.Errorf("lease TTL %v: want %v to %v", d.TTL, wire.MinLeaseTTL, wire.MaxLeaseTTL))
	}
	if d.WriteEvery <= 0 {
		errs = append(errs, fmt.Errorf("lease WriteEvery %v must be positive", d.WriteEvery))
	}
	return errors.Join(errs...)
}

// pauseHold is how long pause-holder keeps its contender stopped: past the
// bound on its replacement, so that the replacement comes first.
func (c LeaseConfig) pauseHold() time.Duration { return c.TTL + leaseReplaceSlack + time.Second }

// contender is one running contender process.
type contender struct {
	cfg  ContenderConfig
	proc *child
}

// leaseWorkload is the contenders of one run.
type leaseWorkload struct {
	cfg    LeaseConfig
	names  []string
	procs  []*contender
	client *client.Client
	log    *slog.Logger
}

// startLeaseWorkload starts the contenders, logging to dir/leases/<id>.log
// and recording into dir/leases/<id>.jsonl.
func startLeaseWorkload(cfg LeaseConfig, dir string, endpoints []string, runID string, creds Credentials, log *slog.Logger) (*leaseWorkload, error) {
	cfg = cfg.withDefaults()
	dir = filepath.Join(dir, "leases")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	w := &leaseWorkload{cfg: cfg, log: log,
		client: client.NewClient(creds.apply(client.ClientConfig{Endpoints: endpoints, Timeout: 2 * time.Second, MaxBackoff: 250 * time.Millisecond}))}
	for i := range cfg.Leases {
		w.names = append(w.names, runID+"/lease/"+strconv.Itoa(i))
	}
	for i := range cfg.Contenders {
		id := "c" + strconv.Itoa(i+1)
		name := w.names[i%cfg.Leases]
		cc := ContenderConfig{Targets: endpoints, Lease: name, ID: id, TTL: cfg.TTL, WriteEvery: cfg.WriteEvery,
			Key: name + "/writes", History: filepath.Join(dir, id+".jsonl"), Creds: creds}
		p, err := startChild(id, cfg.Command, cc.Args(), creds.env(), filepath.Join(dir, id+".log"))
		if err != nil {
			w.stop(context.Background())
			return nil, err
		}
		c := &contender{cfg: cc, proc: p}
		w.procs = append(w.procs, c)
	}
	return w, nil
}

// stop SIGTERMs the contenders (they resign their leases) and waits for
// them, SIGKILLing any that has not exited within 10s.
func (w *leaseWorkload) stop(ctx context.Context) {
	procs := make([]*child, len(w.procs))
	for i, c := range w.procs {
		procs[i] = c.proc
	}
	stopChildren(ctx, procs, w.log)
}

// history reads the contenders' records, contender by contender.
func (w *leaseWorkload) history() ([]LeaseOp, error) {
	var out []LeaseOp
	var errs []error
	for _, c := range w.procs {
		ops, err := readLeaseOps(c.cfg.History)
		if err != nil {
			errs = append(errs, err)
		}
		out = append(out, ops...)
	}
	return out, errors.Join(errs...)
}

// pauseHolder is the pause-holder fault: it finds a lease's holder (one of
// the leases in turn, from the schedule, waiting up to timeout for any to
// be held), SIGSTOPs it for pauseHold and SIGCONTs it.
func (w *leaseWorkload) pauseHolder(ctx context.Context, ev *FaultEvent, sched *Schedule, timeout time.Duration) error {
	first := sched.rng.IntN(len(w.names))
	deadline := time.Now().Add(timeout)
	for {
		for i := range w.names {
			name := w.names[(first+i)%len(w.names)]
			lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			l, err := w.client.Lease(lctx, name, 0, 0)
			cancel()
			if err != nil || l.Token == 0 || l.Remaining() < w.cfg.TTL/2 {
				continue // free, unknown, or about to change hands anyway
			}
			for _, c := range w.procs {
				if c.cfg.ID != l.Holder || c.cfg.Lease != name {
					continue
				}
				ev.Nodes = []string{c.cfg.ID}
				ev.LeasePause = &LeasePauseEvent{Lease: name, Contender: c.cfg.ID, Token: l.Token}
				return c.proc.pause(ctx, w.cfg.pauseHold(), ev)
			}
		}
		if time.Now().After(deadline) || !sleepCtx(ctx, 100*time.Millisecond) {
			return errors.New("no contender held a lease")
		}
	}
}

// leasePauses returns the pause-holder faults of events as CheckLeases reads them.
func leasePauses(events []FaultEvent) []LeasePause {
	var out []LeasePause
	for _, f := range events {
		if f.LeasePause != nil {
			out = append(out, LeasePause{LeasePauseEvent: *f.LeasePause, Paused: f.Injected, Resumed: f.Healed})
		}
	}
	return out
}

// LeaseReport is the lease workload's part of a report.
type LeaseReport struct {
	Leases     []string      `json:"leases"`
	Contenders int           `json:"contenders"`
	TTL        time.Duration `json:"ttl"`
	Stats      LeaseStats    `json:"stats"`
	Spans      []LeaseSpan   `json:"spans"`
}

// finish reads the history and checks it against the reference log.
func (w *leaseWorkload) finish(ref []wire.LogEntry, events []FaultEvent) (*LeaseReport, CheckResult) {
	ops, err := w.history()
	res, st := checkLeases(ops, ref, leasePauses(events), LeaseBounds{Replace: w.cfg.TTL + leaseReplaceSlack})
	if err != nil {
		res.Pass = false
		res.Evidence = append(res.Evidence, err.Error())
	}
	if len(ops) == 0 {
		res.Pass = false
		res.Evidence = append(res.Evidence, "the contenders recorded nothing")
	}
	return &LeaseReport{Leases: w.names, Contenders: len(w.procs), TTL: w.cfg.TTL, Stats: st, Spans: leaseSpans(ops, w.cfg.TTL)}, res
}
