package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/lease"
)

// ContenderConfig is one contender of the lease workload: a process of its
// own (so that the pause-holder fault can SIGSTOP it) that campaigns for one
// lease with a lease.Elector and, while it holds it, makes a fenced write
// every WriteEvery. It records every acquire, renewal, release and write,
// with its answer, as JSON lines (LeaseOp) in History.
type ContenderConfig struct {
	Targets    []string
	Lease      string
	ID         string // the holder name
	TTL        time.Duration
	WriteEvery time.Duration
	// Key is the key of the fenced puts; their idempotency keys are
	// Key/ID/seq.
	Key     string
	History string
	// Creds are the contender's credentials: the files as flags, the token
	// in the environment (TokenEnv).
	Creds Credentials
}

// Args returns cfg as the flags ContenderMain parses.
func (c ContenderConfig) Args() []string {
	return append([]string{"--targets=" + strings.Join(c.Targets, ","), "--lease=" + c.Lease, "--id=" + c.ID,
		"--ttl=" + c.TTL.String(), "--write-every=" + c.WriteEvery.String(), "--key=" + c.Key, "--history=" + c.History}, c.Creds.args()...)
}

// ContenderMain parses args (ContenderConfig.Args) and runs the contender
// until ctx ends or the process gets SIGTERM or SIGINT: `txlog
// chaos-contender`, and the chaos tests' re-executed test binary. It
// resigns the lease it holds before it returns.
func ContenderMain(ctx context.Context, args []string, stderr io.Writer) error {
	var c ContenderConfig
	define := func(fs *flag.FlagSet) {
		fs.Var((*commaList)(&c.Targets), "targets", "base URLs of the nodes")
		fs.StringVar(&c.Lease, "lease", "", "the lease to campaign for")
		fs.StringVar(&c.ID, "id", "", "the holder name")
		fs.DurationVar(&c.TTL, "ttl", DefaultLeaseTTL, "the lease's TTL")
		fs.DurationVar(&c.WriteEvery, "write-every", DefaultLeaseWriteEvery, "time between two fenced writes")
		fs.StringVar(&c.Key, "key", "", "the key of the fenced writes")
		fs.StringVar(&c.History, "history", "", "file of the recorded operations")
		c.Creds.define(fs)
	}
	c.Creds.Token = os.Getenv(TokenEnv)
	return childMain(ctx, args, stderr, "chaos-contender", "contender", []string{"targets", "lease", "id", "key", "history"}, define,
		func(ctx context.Context, logger *slog.Logger) error { return RunContender(ctx, c, logger) })
}

// RunContender runs the contender c until ctx ends.
func RunContender(ctx context.Context, c ContenderConfig, logger *slog.Logger) error {
	if err := c.Creds.load(); err != nil {
		return err
	}
	out, err := openJSONLines(c.History)
	if err != nil {
		return err
	}
	defer out.Close()
	rc := &recordingClient{
		Client: client.NewClient(c.Creds.apply(client.ClientConfig{Endpoints: c.Targets, AttemptTimeout: 2 * time.Second,
			MaxBackoff: 250 * time.Millisecond, LookupWait: time.Second})),
		c: c, out: out,
	}
	el, err := lease.New(lease.Config{Client: rc, Name: c.Lease, Holder: c.ID, TTL: c.TTL, Logger: logger})
	if err != nil {
		return err
	}
	seq := 0
	// The writes outlive the lease's context on purpose: a holder that
	// learns late that it lost the lease (it stalled) still sends the write
	// it had in hand, and the fence must refuse it.
	wctx := context.WithoutCancel(ctx)
	run := func(lctx context.Context, token uint64) error {
		t := time.NewTicker(c.WriteEvery)
		defer t.Stop()
		for {
			seq++
			rc.write(wctx, token, seq)
			select {
			case <-lctx.Done():
				seq++
				rc.write(wctx, token, seq) // one more, as a stalled holder would
				return nil
			case <-t.C:
			}
		}
	}
	for ctx.Err() == nil {
		err := el.Run(ctx, run)
		if ctx.Err() != nil {
			break
		}
		if !errors.Is(err, lease.ErrLost) {
			logger.Warn("run", "err", err)
			sleepCtx(ctx, 100*time.Millisecond)
		}
	}
	return nil
}

// recordingClient is the Elector's client: it records each lease call and
// its answer.
type recordingClient struct {
	*client.Client
	c   ContenderConfig
	out *jsonLines
}

func (r *recordingClient) record(op LeaseOp) {
	op.Contender, op.Lease = r.c.ID, r.c.Lease
	r.out.write(op)
}

// leaseAnswer classifies err of a lease call, with the lease a 409 named.
func leaseAnswer(op *LeaseOp, err error) {
	switch le, ok := errors.AsType[*wire.LeaseError](err); {
	case err == nil:
		op.Answer = LeaseOK
	case ok && le.Code == wire.CodeLeaseHeld:
		op.Answer, op.Actual, op.Holder = LeaseHeld, le.Lease.Token, le.Lease.Holder
	case ok && le.Code == wire.CodeFenced:
		op.Answer, op.Actual, op.Holder = LeaseFenced, le.Lease.Token, le.Lease.Holder
	default:
		op.Answer, op.Err = LeaseError, err.Error()
	}
}

func (r *recordingClient) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (wire.LeaseResult, error) {
	op := LeaseOp{Kind: LeaseAcquire, Start: time.Now()}
	res, err := r.Client.AcquireLease(ctx, name, holder, ttl)
	op.End = time.Now()
	leaseAnswer(&op, err)
	if err == nil {
		op.Token, op.Acquired = res.Token, res.Acquired
	}
	r.record(op)
	return res, err
}

func (r *recordingClient) RenewLease(ctx context.Context, name, holder string, token uint64, ttl time.Duration) (wire.LeaseResult, error) {
	op := LeaseOp{Kind: LeaseRenew, Token: token, Start: time.Now()}
	res, err := r.Client.RenewLease(ctx, name, holder, token, ttl)
	op.End = time.Now()
	leaseAnswer(&op, err)
	if err == nil {
		op.Actual = res.Token
	}
	r.record(op)
	return res, err
}

func (r *recordingClient) ReleaseLease(ctx context.Context, name, holder string, token uint64) error {
	op := LeaseOp{Kind: LeaseRelease, Token: token, Start: time.Now()}
	err := r.Client.ReleaseLease(ctx, name, holder, token)
	op.End = time.Now()
	leaseAnswer(&op, err)
	r.record(op)
	return err
}

// write makes one fenced put under token and records it.
func (r *recordingClient) write(ctx context.Context, token uint64, seq int) {
	val, _ := json.Marshal(leaseWriteValue{Holder: r.c.ID, Token: token, Seq: seq})
	key := r.c.Key + "/" + r.c.ID + "/" + strconv.Itoa(seq)
	op := LeaseOp{Kind: LeaseWrite, Token: token, IdempotencyKey: key, Seq: seq, Start: time.Now()}
	tx := wire.TxRequest{IdempotencyKey: key, Fence: &wire.Fence{Lease: r.c.Lease, Token: token},
		Ops: []wire.Op{{Op: wire.OpPut, Key: r.c.Key, Value: val}}}
	sctx, cancel := context.WithTimeout(ctx, DefaultSubmitTimeout)
	res, err := r.Client.Submit(sctx, tx, wire.SubmitOptions{Ack: wire.AckQuorum, Timeout: serverTimeout})
	cancel()
	op.End = time.Now()
	switch {
	case err != nil:
		op.Answer, op.Err = wire.StatusUnknown, err.Error()
	default:
		op.Answer = res.Status
		if res.Conflict != nil {
			op.Actual = res.Conflict.Actual
		}
	}
	r.record(op)
}
