package parking

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults for Config and BreakerConfig fields left at zero.
const (
	DefaultStream      = "txlog:parked"
	DefaultGroup       = "txlog-replay"
	DefaultOpTimeout   = 200 * time.Millisecond
	DefaultClaimIdle   = 2 * time.Second
	DefaultFailures    = 3
	DefaultCooldown    = time.Second
	DefaultMaxCooldown = 30 * time.Second
)

// Config configures Open. The zero value of every field but Addr and
// Consumer means "use the default".
type Config struct {
	// Addr is Redis's host:port. Required.
	Addr string
	// Stream is the key of the Redis stream that holds parked transactions.
	// Default "txlog:parked". Every node of a cluster must use the same one.
	Stream string
	// Group is the consumer group through which leaders drain the stream.
	// Default "txlog-replay". Every node of a cluster must use the same one.
	Group string
	// Consumer is this node's name within Group: the node ID. Required.
	Consumer string
	// OpTimeout bounds each method call (all its round trips to Redis).
	// Default 200ms.
	OpTimeout time.Duration
	// ClaimIdle is how long an entry must have been claimed without an Ack
	// before Claim takes it over from its consumer (a leader that died
	// mid-drain). Default 2s. It should exceed the time a leader needs to
	// commit a claimed batch, or live entries get claimed twice (harmless:
	// dedup by txid, but wasted work).
	ClaimIdle time.Duration
	// Breaker configures the circuit breaker in front of Redis.
	Breaker BreakerConfig
	// Logger receives state changes and trouble. Nil means discard.
	Logger *slog.Logger
	// Metrics is the registry parking registers its metrics with
	// (txlog_redis_breaker_state); nil: no metrics.
	Metrics prometheus.Registerer
}

// BreakerConfig configures the circuit breaker in front of Redis.
type BreakerConfig struct {
	// Failures is how many consecutive failed or timed-out calls open the
	// breaker. Default 3.
	Failures int
	// Cooldown is how long the breaker stays open before it lets one probe
	// call through. It doubles after each failed probe, up to MaxCooldown,
	// and is reset when a probe succeeds. Default 1s.
	Cooldown time.Duration
	// MaxCooldown caps Cooldown's doubling. Default 30s, or Cooldown if that
	// is larger.
	MaxCooldown time.Duration
}

// Validate reports every invalid field of c, after defaults, joined with
// errors.Join. It returns nil if c is usable by Open.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	if c.Addr == "" {
		errs = append(errs, errors.New("parking: Addr is required"))
	}
	if c.Consumer == "" {
		errs = append(errs, errors.New("parking: Consumer is required (the node ID)"))
	}
	if c.OpTimeout < 0 {
		errs = append(errs, fmt.Errorf("parking: OpTimeout is %v, want >= 0", c.OpTimeout))
	}
	if c.ClaimIdle < 0 {
		errs = append(errs, fmt.Errorf("parking: ClaimIdle is %v, want >= 0", c.ClaimIdle))
	}
	if err := c.Breaker.validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (c BreakerConfig) validate() error {
	var errs []error
	if c.Failures < 0 {
		errs = append(errs, fmt.Errorf("parking: Breaker.Failures is %d, want >= 0", c.Failures))
	}
	if c.Cooldown < 0 {
		errs = append(errs, fmt.Errorf("parking: Breaker.Cooldown is %v, want >= 0", c.Cooldown))
	}
	if c.MaxCooldown < 0 {
		errs = append(errs, fmt.Errorf("parking: Breaker.MaxCooldown is %v, want >= 0", c.MaxCooldown))
	} else if c.MaxCooldown < c.Cooldown {
		errs = append(errs, fmt.Errorf("parking: Breaker.MaxCooldown is %v, want >= Cooldown (%v)", c.MaxCooldown, c.Cooldown))
	}
	return errors.Join(errs...)
}

// withDefaults returns a copy of c with zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.Stream == "" {
		c.Stream = DefaultStream
	}
	if c.Group == "" {
		c.Group = DefaultGroup
	}
	if c.OpTimeout == 0 {
		c.OpTimeout = DefaultOpTimeout
	}
	if c.ClaimIdle == 0 {
		c.ClaimIdle = DefaultClaimIdle
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	c.Breaker = c.Breaker.withDefaults()
	return c
}

func (c BreakerConfig) withDefaults() BreakerConfig {
	if c.Failures == 0 {
		c.Failures = DefaultFailures
	}
	if c.Cooldown == 0 {
		c.Cooldown = DefaultCooldown
	}
	if c.MaxCooldown == 0 {
		c.MaxCooldown = max(DefaultMaxCooldown, c.Cooldown)
	}
	return c
}
