package parking

import (
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	valid := Config{Addr: "localhost:6379", Consumer: "n1"}
	tests := []struct {
		name string
		edit func(*Config)
		want []string // substrings of the error; none means valid
	}{
		{"defaults", func(*Config) {}, nil},
		{"missing addr and consumer", func(c *Config) { c.Addr, c.Consumer = "", "" }, []string{"Addr", "Consumer"}},
		{"negative durations", func(c *Config) { c.OpTimeout, c.ClaimIdle = -1, -1 }, []string{"OpTimeout", "ClaimIdle"}},
		{"negative breaker", func(c *Config) { c.Breaker = BreakerConfig{Failures: -1, Cooldown: -1} }, []string{"Failures", "Cooldown"}},
		{"max below cooldown", func(c *Config) { c.Breaker = BreakerConfig{Cooldown: 2 * time.Second, MaxCooldown: time.Second} }, []string{"MaxCooldown"}},
		{"large cooldown raises default max", func(c *Config) { c.Breaker = BreakerConfig{Cooldown: time.Minute} }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid
			tt.edit(&c)
			err := c.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error naming %v", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to name %s", err, w)
				}
			}
		})
	}
}

func TestConfigDefaultsOnCopy(t *testing.T) {
	c := Config{Addr: "localhost:6379", Consumer: "n1"}
	d := c.withDefaults()
	if c.Stream != "" || c.Logger != nil {
		t.Fatalf("withDefaults() edited the caller's Config: %+v", c)
	}
	if d.Stream != DefaultStream || d.Group != DefaultGroup || d.OpTimeout != DefaultOpTimeout ||
		d.ClaimIdle != DefaultClaimIdle || d.Breaker.Failures != DefaultFailures ||
		d.Breaker.Cooldown != DefaultCooldown || d.Breaker.MaxCooldown != DefaultMaxCooldown || d.Logger == nil {
		t.Fatalf("withDefaults() = %+v, want every default", d)
	}
}
