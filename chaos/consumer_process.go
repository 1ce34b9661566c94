package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/consumer"
	"github.com/txlog/txlog/lease"
)

// ConsumerProcConfig is one process of the consumer workload: a
// consumer.Consumer of Group that, with consumer.ExactlyOnce, appends the
// index of each committed entry that writes a key starting with Source to
// the JSON array of indexes at key Projection (a put with if_version of the
// version it read), in the batch's fenced offset commit.
type ConsumerProcConfig struct {
	Targets    []string
	Group, ID  string
	TTL        time.Duration
	Source     string // the prefix of the keys whose writes are projected
	Projection string // the projection key
	// History is the file the process appends its batches to, as JSON
	// lines (ConsumerBatchOp).
	History string
}

// ConsumerBatchOp is one batch a consumer process handed to its effects:
// the lease token it held, the batch's range and the source indexes it
// projected.
type ConsumerBatchOp struct {
	Consumer  string   `json:"consumer"`
	Token     uint64   `json:"token"`
	First     uint64   `json:"first"`
	Last      uint64   `json:"last"`
	Projected []uint64 `json:"projected"`
	At        int64    `json:"at_unix_nano"`
}

// Args returns cfg as the flags ConsumerProcMain parses.
func (c ConsumerProcConfig) Args() []string {
	return []string{"--targets=" + strings.Join(c.Targets, ","), "--group=" + c.Group, "--id=" + c.ID,
		"--ttl=" + c.TTL.String(), "--source=" + c.Source, "--projection=" + c.Projection, "--history=" + c.History}
}

// ConsumerProcMain parses args (ConsumerProcConfig.Args) and runs the
// consumer until ctx ends or the process gets SIGTERM or SIGINT: `txlog
// chaos-consumer`. A lost lease is not the end: it campaigns again.
func ConsumerProcMain(ctx context.Context, args []string, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	fs := flag.NewFlagSet("chaos-consumer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c ConsumerProcConfig
	targets := fs.String("targets", "", "base URLs of the nodes")
	fs.StringVar(&c.Group, "group", "", "the consumer group")
	fs.StringVar(&c.ID, "id", "", "the consumer's name (the lease's holder)")
	fs.DurationVar(&c.TTL, "ttl", DefaultLeaseTTL, "the group lease's TTL")
	fs.StringVar(&c.Source, "source", "", "the prefix of the keys whose writes are projected")
	fs.StringVar(&c.Projection, "projection", "", "the projection key")
	fs.StringVar(&c.History, "history", "", "file of the recorded batches")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c.Targets = strings.Split(*targets, ",")
	if *targets == "" || c.Group == "" || c.ID == "" || c.Source == "" || c.Projection == "" || c.History == "" {
		return errors.New("chaos-consumer: --targets, --group, --id, --source, --projection and --history are required")
	}
	logger := slog.New(slog.NewJSONHandler(stderr, nil)).With("consumer", c.ID)
	return RunConsumerProc(ctx, c, logger)
}

// RunConsumerProc runs the consumer process c until ctx ends.
func RunConsumerProc(ctx context.Context, c ConsumerProcConfig, logger *slog.Logger) error {
	f, err := os.OpenFile(c.History, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	cl := client.NewClient(client.ClientConfig{Endpoints: c.Targets})
	cons, err := consumer.New(consumer.Config{Client: cl, Group: c.Group, Lease: lease.Config{Holder: c.ID, TTL: c.TTL}, Logger: logger})
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for ctx.Err() == nil {
		err := cons.Run(ctx, func(ctx context.Context, b *consumer.Batch) error {
			ops, projected, err := projectionOps(ctx, cl, c, b.Entries)
			if err != nil {
				return err
			}
			b.AddOps(ops...)
			return enc.Encode(ConsumerBatchOp{Consumer: c.ID, Token: b.Token, First: b.Entries[0].Index, Last: b.Last(), Projected: projected, At: time.Now().UnixNano()})
		})
		if ctx.Err() != nil {
			break
		}
		logger.Info("consumer term ended", "err", err)
	}
	return nil
}

// projectionOps reads the projection and returns its put with the source
// indexes of entries appended, conditioned on the version read.
func projectionOps(ctx context.Context, cl *client.Client, c ConsumerProcConfig, entries []wire.LogEntry) ([]wire.Op, []uint64, error) {
	var projected []uint64
	for _, e := range entries {
		if e.Status == wire.StatusCommitted && writesPrefix(e, c.Source) {
			projected = append(projected, e.Index)
		}
	}
	if len(projected) == 0 {
		return nil, nil, nil
	}
	var list []uint64
	var version uint64
	kv, err := cl.Get(ctx, c.Projection, wire.ReadOptions{})
	switch {
	case errors.Is(err, wire.ErrNotFound):
	case err != nil:
		return nil, nil, fmt.Errorf("read of the projection: %w", err)
	default:
		if err := json.Unmarshal(kv.Value, &list); err != nil {
			return nil, nil, fmt.Errorf("projection %s: %w", c.Projection, err)
		}
		version = kv.Version
	}
	v, err := json.Marshal(append(list, projected...))
	if err != nil {
		return nil, nil, err
	}
	return []wire.Op{{Op: wire.OpPut, Key: c.Projection, Value: v, IfVersion: &version}}, projected, nil
}

func writesPrefix(e wire.LogEntry, prefix string) bool {
	for _, op := range e.Ops {
		if (op.Op == wire.OpPut || op.Op == wire.OpDelete) && strings.HasPrefix(op.Key, prefix) {
			return true
		}
	}
	return false
}

// ProjectionCounts counts, per log index, how many times the projection's
// value (a JSON array of indexes) holds it: ConsumerHistory.Projection.
func ProjectionCounts(value json.RawMessage) (map[uint64]int, error) {
	var list []uint64
	if err := json.Unmarshal(value, &list); err != nil {
		return nil, err
	}
	n := map[uint64]int{}
	for _, i := range list {
		n[i]++
	}
	return n, nil
}
