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
	"strconv"
	"strings"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/consumer"
	"github.com/txlog/txlog/lease"
)

// ConsumerProcConfig is one process of the consumer workload: a
// consumer.Consumer of Group that, with consumer.ExactlyOnce, appends the
// index of each committed entry that writes a key starting with one of
// Sources to the projection (readProjection), in the batch's fenced offset
// commit.
type ConsumerProcConfig struct {
	Targets   []string
	Group, ID string
	TTL       time.Duration
	// Sources are the prefixes of the keys whose writes are projected.
	Sources []string
	// Projection is the prefix of the projection's keys: the index i goes
	// into the JSON array of indexes at projectionKey(Projection, i), a put
	// with if_version of the version read.
	Projection string
	// History is the file the process appends its batches to, as JSON
	// lines (ConsumerBatchOp).
	History string
	// Creds are the process's credentials: the files as flags, the token in
	// the environment (TokenEnv).
	Creds Credentials
}

// ConsumerBatchOp is one batch a consumer process handed to its effects:
// the lease token it held, the batch's range and the source indexes it
// projected. With Late, it is instead the write the process sent under
// Token after its term ended (RunConsumerProc), with its answer.
type ConsumerBatchOp struct {
	Consumer  string   `json:"consumer"`
	Token     uint64   `json:"token"`
	First     uint64   `json:"first,omitempty"`
	Last      uint64   `json:"last,omitempty"`
	Projected []uint64 `json:"projected,omitempty"`
	At        int64    `json:"at_unix_nano"`
	Late      bool     `json:"late,omitempty"`
	Answer    string   `json:"answer,omitempty"`
}

// Args returns cfg as the flags ConsumerProcMain parses.
func (c ConsumerProcConfig) Args() []string {
	return append([]string{"--targets=" + strings.Join(c.Targets, ","), "--group=" + c.Group, "--id=" + c.ID,
		"--ttl=" + c.TTL.String(), "--source=" + strings.Join(c.Sources, ","), "--projection=" + c.Projection, "--history=" + c.History}, c.Creds.args()...)
}

// ConsumerProcMain parses args (ConsumerProcConfig.Args) and runs the
// consumer until ctx ends or the process gets SIGTERM or SIGINT: `txlog
// chaos-consumer`, and the chaos tests' re-executed test binary. A lost
// lease is not the end: it campaigns again.
func ConsumerProcMain(ctx context.Context, args []string, stderr io.Writer) error {
	var c ConsumerProcConfig
	define := func(fs *flag.FlagSet) {
		fs.Var((*commaList)(&c.Targets), "targets", "base URLs of the nodes")
		fs.StringVar(&c.Group, "group", "", "the consumer group")
		fs.StringVar(&c.ID, "id", "", "the consumer's name (the lease's holder)")
		fs.DurationVar(&c.TTL, "ttl", DefaultLeaseTTL, "the group lease's TTL")
		fs.Var((*commaList)(&c.Sources), "source", "the prefixes of the keys whose writes are projected, comma-separated")
		fs.StringVar(&c.Projection, "projection", "", "the prefix of the projection's keys")
		fs.StringVar(&c.History, "history", "", "file of the recorded batches")
		c.Creds.define(fs)
	}
	c.Creds.Token = os.Getenv(TokenEnv)
	return childMain(ctx, args, stderr, "chaos-consumer", "consumer", []string{"targets", "group", "id", "source", "projection", "history"}, define,
		func(ctx context.Context, logger *slog.Logger) error { return RunConsumerProc(ctx, c, logger) })
}

// RunConsumerProc runs the consumer process c until ctx ends.
func RunConsumerProc(ctx context.Context, c ConsumerProcConfig, logger *slog.Logger) error {
	out, err := openJSONLines(c.History)
	if err != nil {
		return err
	}
	defer out.Close()
	if err := c.Creds.load(); err != nil {
		return err
	}
	cl := client.NewClient(c.Creds.apply(client.ClientConfig{Endpoints: c.Targets, AttemptTimeout: 2 * time.Second,
		MaxBackoff: 250 * time.Millisecond, LookupWait: time.Second}))
	cons, err := consumer.New(consumer.Config{Client: cl, Group: c.Group, Lease: lease.Config{Holder: c.ID, TTL: c.TTL}, Logger: logger})
	if err != nil {
		return err
	}
	var token uint64 // the token of the term's last batch
	late := 0        // the late writes sent so far
	for ctx.Err() == nil {
		err := cons.Run(ctx, func(ctx context.Context, b *consumer.Batch) error {
			ops, projected, err := projectionOps(ctx, cl, c, b.Entries)
			if err != nil {
				return err
			}
			b.AddOps(ops...)
			token = b.Token
			return out.write(ConsumerBatchOp{Consumer: c.ID, Token: b.Token, First: b.Entries[0].Index, Last: b.Last(), Projected: projected, At: time.Now().UnixNano()})
		})
		if ctx.Err() != nil {
			break
		}
		logger.Info("consumer term ended", "err", err)
		if token != 0 {
			late++
			out.write(lateWrite(ctx, cl, c, token, late))
			token = 0
		}
		sleepCtx(ctx, 100*time.Millisecond)
	}
	return nil
}

// lateWrite sends, once a term under token has ended, one more write fenced
// by token, as a consumer that stalled past its TTL would send the commit
// it had in hand: a put that only the fence can refuse (no if_version, a
// key of its own under the projection's prefix). If another consumer took
// the lease over, the fence must refuse it (CheckConsumer, rule 3). n, the
// process's count of late writes, makes its idempotency key its own: a term
// that ended without a takeover (a renewal lost in an election, the lease
// then taken again under the same token) commits its late write, and the
// next one under that token must not be answered as its duplicate.
func lateWrite(ctx context.Context, cl *client.Client, c ConsumerProcConfig, token uint64, n int) ConsumerBatchOp {
	key := c.Projection + "/late/" + c.ID
	tx := wire.TxRequest{IdempotencyKey: key + "/" + strconv.FormatUint(token, 10) + "/" + strconv.Itoa(n),
		Fence: &wire.Fence{Lease: consumer.LeaseName(c.Group), Token: token},
		Ops:   []wire.Op{{Op: wire.OpPut, Key: key, Value: json.RawMessage(strconv.FormatUint(token, 10))}}}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultSubmitTimeout)
	defer cancel()
	op := ConsumerBatchOp{Consumer: c.ID, Token: token, Late: true}
	res, err := cl.Submit(sctx, tx, wire.SubmitOptions{Ack: wire.AckQuorum, Timeout: serverTimeout})
	if err != nil {
		op.Answer = err.Error()
	} else {
		op.Answer = res.Status
	}
	op.At = time.Now().UnixNano()
	return op
}

// projectionBucket is how many log indexes share one projection key, so
// that a commit rewrites at most one bucket's array (a few KiB) rather than
// the whole projection.
const projectionBucket = 1000

// projectionKey is the projection's key that holds log index i.
func projectionKey(projection string, i uint64) string {
	return projection + "/" + strconv.FormatUint(i/projectionBucket, 10)
}

// projectionOps returns the indexes of the committed source writes among
// entries and the puts that append them to their projection keys, each
// conditioned on the version it read.
func projectionOps(ctx context.Context, cl *client.Client, c ConsumerProcConfig, entries []wire.LogEntry) ([]wire.Op, []uint64, error) {
	var projected []uint64
	var keys []string
	byKey := map[string][]uint64{}
	for _, e := range entries {
		if e.Status == wire.StatusCommitted && writesPrefix(e, c.Sources) {
			projected = append(projected, e.Index)
			k := projectionKey(c.Projection, e.Index)
			if byKey[k] == nil {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], e.Index)
		}
	}
	var ops []wire.Op
	for _, k := range keys {
		list, version, err := readBucket(ctx, cl, k)
		if err != nil {
			return nil, nil, err
		}
		v, err := json.Marshal(append(list, byKey[k]...))
		if err != nil {
			return nil, nil, err
		}
		ops = append(ops, wire.Op{Op: wire.OpPut, Key: k, Value: v, IfVersion: &version})
	}
	return ops, projected, nil
}

// readBucket reads one projection key (linearizably): its indexes and
// version, none and 0 when it does not exist.
func readBucket(ctx context.Context, cl *client.Client, key string) ([]uint64, uint64, error) {
	kv, err := cl.Get(ctx, key, wire.ReadOptions{})
	switch {
	case errors.Is(err, wire.ErrNotFound):
		return nil, 0, nil
	case err != nil:
		return nil, 0, fmt.Errorf("read of the projection: %w", err)
	}
	var list []uint64
	if err := json.Unmarshal(kv.Value, &list); err != nil {
		return nil, 0, fmt.Errorf("projection %s: %w", key, err)
	}
	return list, kv.Version, nil
}

// readProjection reads the projection of the indexes up to to and counts,
// per log index, how many times it holds it: ConsumerHistory.Projection.
func readProjection(ctx context.Context, cl *client.Client, projection string, to uint64) (map[uint64]int, error) {
	n := map[uint64]int{}
	for b := uint64(0); b <= to/projectionBucket; b++ {
		list, _, err := readBucket(ctx, cl, projectionKey(projection, b*projectionBucket))
		if err != nil {
			return nil, err
		}
		for _, i := range list {
			n[i]++
		}
	}
	return n, nil
}

// writesPrefix tells whether e puts or deletes a key under one of prefixes.
func writesPrefix(e wire.LogEntry, prefixes []string) bool {
	for _, op := range e.Ops {
		if op.Op != wire.OpPut && op.Op != wire.OpDelete {
			continue
		}
		for _, p := range prefixes {
			if strings.HasPrefix(op.Key, p) {
				return true
			}
		}
	}
	return false
}
