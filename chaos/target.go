package chaos

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/txlog/txlog/chaos/lazyfs"
	"github.com/txlog/txlog/launcher"
)

// ErrUnsupported is returned by a Target for a fault it cannot inject.
var ErrUnsupported = errors.New("fault not supported by this target")

// localTarget is a cluster this process launched, its fault proxies and its
// Redis (nil when running without one).
type localTarget struct {
	c     *launcher.Cluster
	net   *Network
	redis *launcher.Redis
	disks map[string]*lazyfs.FS // the nodes' data dirs, when powerloss is on
}

var _ Target = (*localTarget)(nil)

func (t *localTarget) Supports(f Fault) error {
	if f == FaultRedisOutage && t.redis == nil {
		return fmt.Errorf("%s: no redis-server: %w", f, ErrUnsupported)
	}
	if f == FaultPowerLoss && t.disks == nil {
		return fmt.Errorf("%s: the data dirs are not lazyfs mounts: %w", f, ErrUnsupported)
	}
	return nil
}

func (t *localTarget) Kill(_ context.Context, id string) error { return t.c.Kill(id) }
func (t *localTarget) Start(ctx context.Context, id string) error {
	return t.c.Restart(ctx, id)
}
func (t *localTarget) Stop(ctx context.Context, id string) error { return t.c.Stop(ctx, id) }
func (t *localTarget) Pause(_ context.Context, id string) error  { return t.c.Pause(id) }
func (t *localTarget) Resume(_ context.Context, id string) error { return t.c.Resume(id) }

func (t *localTarget) Partition(_ context.Context, id string, oneWay bool) error {
	if oneWay {
		t.net.CutInbound(id)
	} else {
		t.net.Isolate(id)
	}
	return nil
}

func (t *localTarget) Heal(context.Context, string) error {
	t.net.Heal()
	return nil
}

func (t *localTarget) RedisStop(ctx context.Context) error {
	if t.redis == nil {
		return ErrUnsupported
	}
	return t.redis.Stop(ctx)
}

func (t *localTarget) RedisStart(ctx context.Context) error {
	if t.redis == nil {
		return ErrUnsupported
	}
	return t.redis.RestartEmpty(ctx)
}

// Commands are the shell command templates that inject faults into a
// deployment. Each runs with `sh -c` after {id} is replaced by the node's ID
// (txlogd's --id); Partition also gets {mode}: "both" to cut the node off
// entirely, "inbound" to cut only what reaches it. An empty template disables
// the faults that need it.
type Commands struct {
	Kill       string // SIGKILL the node
	Start      string // start it again on its data
	Stop       string // stop it gracefully (SIGTERM) and wait until it exited
	Pause      string // SIGSTOP
	Resume     string // SIGCONT
	Partition  string // cut the node's Raft traffic ({mode})
	Heal       string // undo Partition
	RedisStop  string // stop Redis
	RedisStart string // start Redis again, empty
}

// commandTimeout bounds one fault command.
const commandTimeout = time.Minute

// cmdTarget is a deployment driven by command templates.
type cmdTarget struct {
	cmds Commands
}

var _ Target = (*cmdTarget)(nil)

func (t *cmdTarget) Supports(f Fault) error {
	need := map[Fault][]struct{ name, tmpl string }{
		FaultKillLeader:      {{"--kill-cmd", t.cmds.Kill}, {"--start-cmd", t.cmds.Start}},
		FaultKillFollower:    {{"--kill-cmd", t.cmds.Kill}, {"--start-cmd", t.cmds.Start}},
		FaultQuorumLoss:      {{"--kill-cmd", t.cmds.Kill}, {"--start-cmd", t.cmds.Start}},
		FaultTermLeader:      {{"--stop-cmd", t.cmds.Stop}, {"--start-cmd", t.cmds.Start}},
		FaultPauseLeader:     {{"--pause-cmd", t.cmds.Pause}, {"--resume-cmd", t.cmds.Resume}},
		FaultPartitionLeader: {{"--partition-cmd", t.cmds.Partition}, {"--heal-cmd", t.cmds.Heal}},
		FaultPartitionOneWay: {{"--partition-cmd", t.cmds.Partition}, {"--heal-cmd", t.cmds.Heal}},
		FaultRedisOutage: {{"--redis-stop-cmd", t.cmds.RedisStop}, {"--redis-start-cmd", t.cmds.RedisStart},
			{"--kill-cmd", t.cmds.Kill}, {"--start-cmd", t.cmds.Start}},
	}
	if f == FaultPowerLoss {
		return fmt.Errorf("%s needs a local cluster: %w", f, ErrUnsupported)
	}
	var missing []string
	for _, n := range need[f] {
		if n.tmpl == "" {
			missing = append(missing, n.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s needs %s: %w", f, strings.Join(missing, " and "), ErrUnsupported)
	}
	return nil
}

func (t *cmdTarget) Kill(ctx context.Context, id string) error {
	return t.run(ctx, t.cmds.Kill, id, "")
}
func (t *cmdTarget) Start(ctx context.Context, id string) error {
	return t.run(ctx, t.cmds.Start, id, "")
}
func (t *cmdTarget) Stop(ctx context.Context, id string) error {
	return t.run(ctx, t.cmds.Stop, id, "")
}
func (t *cmdTarget) Pause(ctx context.Context, id string) error {
	return t.run(ctx, t.cmds.Pause, id, "")
}
func (t *cmdTarget) Resume(ctx context.Context, id string) error {
	return t.run(ctx, t.cmds.Resume, id, "")
}
func (t *cmdTarget) Heal(ctx context.Context, id string) error {
	return t.run(ctx, t.cmds.Heal, id, "")
}
func (t *cmdTarget) RedisStop(ctx context.Context) error { return t.run(ctx, t.cmds.RedisStop, "", "") }
func (t *cmdTarget) RedisStart(ctx context.Context) error {
	return t.run(ctx, t.cmds.RedisStart, "", "")
}

func (t *cmdTarget) Partition(ctx context.Context, id string, oneWay bool) error {
	mode := "both"
	if oneWay {
		mode = "inbound"
	}
	return t.run(ctx, t.cmds.Partition, id, mode)
}

// Expand fills in a command template: {id} and {mode}.
func Expand(tmpl, id, mode string) string {
	return strings.NewReplacer("{id}", id, "{mode}", mode).Replace(tmpl)
}

func (t *cmdTarget) run(ctx context.Context, tmpl, id, mode string) error {
	if tmpl == "" {
		return ErrUnsupported
	}
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	line := Expand(tmpl, id, mode)
	out, err := exec.CommandContext(ctx, "sh", "-c", line).CombinedOutput()
	if err != nil {
		return fmt.Errorf("run %q: %w: %s", line, err, strings.TrimSpace(string(out)))
	}
	return nil
}
