package main

import (
	"context"
	"fmt"

	"github.com/txlog/txlog/api/wire"
)

// consumers prints the consumer groups, or with a GROUP that group.
func (c *cli) consumers(ctx context.Context, args []string) error {
	cmd := c.command("consumers", "[flags] [GROUP]")
	targets := cmd.targets()
	pos, err := cmd.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usagef("consumers takes at most one GROUP, got %d arguments", len(pos))
	}
	cl, err := cmd.newClient(*targets)
	if err != nil {
		return err
	}
	if len(pos) == 1 {
		g, err := cl.Consumer(ctx, pos[0])
		if err != nil {
			return fmt.Errorf("consumer group %q: %w", pos[0], err)
		}
		return printJSON(c.stdout, g)
	}
	gs, err := cl.Consumers(ctx)
	if err != nil {
		return fmt.Errorf("list consumer groups: %w", err)
	}
	if gs == nil {
		gs = []wire.ConsumerGroup{}
	}
	return printJSON(c.stdout, wire.ConsumerList{Consumers: gs})
}
