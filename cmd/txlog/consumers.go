package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/txlog/txlog/api/wire"
)

// consumers prints the consumer groups, or with a GROUP that group.
func (c *cli) consumers(ctx context.Context, args []string) error {
	cmd := c.command("consumers", "[flags] [GROUP]")
	targets := cmd.targets()
	out := cmd.output(outputJSON)
	consistency := consistencyFlag(cmd)
	pos, err := cmd.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usagef("consumers takes at most one GROUP, got %d arguments", len(pos))
	}
	if err := checkOutput(*out); err != nil {
		return err
	}
	if err := checkConsistency(*consistency); err != nil {
		return err
	}
	ro := wire.ReadOptions{Consistency: *consistency}
	cl, err := cmd.newClient(*targets)
	if err != nil {
		return err
	}
	if len(pos) == 1 {
		g, err := cl.Consumer(ctx, pos[0], ro)
		if err != nil {
			return about(fmt.Sprintf("consumer group %q", pos[0]), noLeader(cl, err))
		}
		if *out == outputTable {
			return printGroups(c.stdout, []wire.ConsumerGroup{g})
		}
		return printJSON(c.stdout, g)
	}
	gs, err := cl.Consumers(ctx, ro)
	if err != nil {
		return fmt.Errorf("list consumer groups: %w", noLeader(cl, err))
	}
	if gs == nil {
		gs = []wire.ConsumerGroup{}
	}
	if *out == outputTable {
		return printGroups(c.stdout, gs)
	}
	return printJSON(c.stdout, wire.ConsumerList{Consumers: gs})
}

// printGroups writes consumer groups as a table.
func printGroups(w io.Writer, gs []wire.ConsumerGroup) error {
	return printTable(w, []string{"GROUP", "OFFSET", "LAG", "UPDATED"}, len(gs), func(i int) []string {
		g := gs[i]
		return []string{g.Group, strconv.FormatUint(g.Offset, 10), strconv.FormatUint(g.Lag, 10), g.UpdatedAt.Format(time.RFC3339)}
	})
}
