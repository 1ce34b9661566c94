package txid

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Backoff between failed writes of the high-water mark.
const (
	minRetry = 50 * time.Millisecond
	maxRetry = time.Second
)

// OpenGenerator returns a Generator whose IDs stay unique across restarts,
// even when the clock stepped back while the node was down. It keeps, in the
// file at path, a reservation: a millisecond every ID issued so far is below.
//
// At open it reads the file (a missing file is a first start) and issues only
// IDs at or above the reserved millisecond, and above cfg.Floor. Before it
// returns it reserves cfg.Reserve ahead of the clock; from then on a
// background goroutine extends the reservation whenever the clock, or the IDs
// running ahead of it, get within half of cfg.Reserve of its end. Each
// reservation is on disk before any ID uses it, so a crash at any point
// leaves a file that covers every issued ID. Next blocks only when IDs would
// pass the reservation before the goroutine has extended it.
//
// A file that exists but cannot be decoded makes OpenGenerator fail with an
// error wrapping ErrCorrupt. The operator can then remove it and set
// cfg.Floor to the highest ID the node may have issued, or simply wait
// cfg.Reserve past the last ID's time before removing it, if the clock is
// known to be right.
//
// One Generator must use path at a time. Call Close to stop the goroutine.
func OpenGenerator(path string, cfg Config) (*Generator, error) {
	return openGenerator(cfg, path, func(limit uint64) error { return writeMark(osMarkFS{}, path, limit) })
}

// openGenerator is OpenGenerator with the write of the file replaced by
// persist, so tests can make it fail. path is read at open and named in logs.
func openGenerator(cfg Config, path string, persist func(limit uint64) error) (*Generator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Reserve == 0 {
		cfg.Reserve = DefaultReserve
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	limit, _, err := readMark(path)
	if err != nil {
		return nil, err
	}
	g := newGenerator(cfg)
	g.raise(limit << SeqBits)

	rs := &reserver{
		persist: persist,
		window:  uint64(cfg.Reserve / time.Millisecond),
		kick:    make(chan struct{}, 1),
		done:    make(chan struct{}),
		log:     log.With("component", "txid", "path", path),
	}
	limit = max(g.clock(), g.last.Load()+1)>>SeqBits + rs.window
	if err := persist(limit); err != nil {
		return nil, err
	}
	g.res.Store(rs.reservation(limit))
	g.rsv = rs
	rs.wg.Go(func() { rs.run(g) })
	return g, nil
}

// reserver extends a Generator's reservation: its goroutine, run, is the only
// writer of the high-water mark file and of Generator.res after open.
type reserver struct {
	persist func(limit uint64) error // durably records limit
	window  uint64                   // Config.Reserve in ms

	// want is the highest millisecond a blocked Next has asked for. It only
	// grows.
	want atomic.Uint64
	kick chan struct{} // capacity 1: wakes run early; sends never block

	done      chan struct{} // closed by close to stop run
	closeOnce sync.Once
	wg        sync.WaitGroup

	log *slog.Logger
	err error // last write error, nil after a success; owned by run, read by close after wg.Wait
}

// reservation returns a reservation ending at limit.
func (rs *reserver) reservation(limit uint64) *reservation {
	return &reservation{limit: limit, soft: limit - rs.window/2, extended: make(chan struct{})}
}

// wake asks run to check the reservation now. It never blocks.
func (rs *reserver) wake() {
	select {
	case rs.kick <- struct{}{}:
	default:
	}
}

// await blocks the calling Next until r, which ends at or below ms, has been
// replaced by a higher reservation. It panics if the Generator is closed,
// since nothing would extend r.
func (rs *reserver) await(r *reservation, ms uint64) {
	for {
		want := rs.want.Load()
		if want >= ms || rs.want.CompareAndSwap(want, ms) {
			break
		}
	}
	rs.wake()
	select {
	case <-r.extended:
	case <-rs.done:
		panic("txid: Next on a closed Generator has used up its reservation")
	}
}

// run extends g's reservation until close is called. It wakes when the clock
// reaches the soft end of the reservation, when Next kicks it, or to retry a
// failed write.
func (rs *reserver) run(g *Generator) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	retry := time.Duration(0)
	for {
		select {
		case <-rs.done:
			return
		case <-rs.kick:
		case <-timer.C:
		}
		r := g.res.Load()
		need := max(g.clock()>>SeqBits, g.last.Load()>>SeqBits, rs.want.Load())
		if need < r.soft {
			timer.Reset(time.Duration(r.soft-need) * time.Millisecond)
			continue
		}
		limit := min(need+rs.window, maxMillis+1)
		if limit <= r.limit { // the end of the ID space is reserved already
			timer.Reset(maxRetry)
			continue
		}
		if err := rs.persist(limit); err != nil {
			rs.err = err
			retry = min(max(2*retry, minRetry), maxRetry)
			rs.log.Warn("high-water mark write failed", "err", err, "retry", retry)
			timer.Reset(retry)
			continue
		}
		rs.err, retry = nil, 0
		next := rs.reservation(limit)
		g.res.Store(next)
		close(r.extended)
		timer.Reset(time.Duration(next.soft-need) * time.Millisecond)
	}
}

// close stops run, waits for it and returns the last write error.
func (rs *reserver) close() error {
	rs.closeOnce.Do(func() { close(rs.done) })
	rs.wg.Wait()
	return rs.err
}
