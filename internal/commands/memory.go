package commands

import (
	"context"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Memory answers /memory and /forget (internal/memory applies the rules).
type Memory interface {
	// List is /memory's answer in channel: its memories and the
	// persona's, with their ids.
	List(ctx context.Context, channel string) (string, error)
	// Forget is /forget's answer: done, or why not.
	Forget(ctx context.Context, a pipeline.Access, channel, id string) (string, error)
}

const msgNoMemory = "memory is not configured here"

func (c *Commands) memoryList(ctx context.Context, ev *pipeline.Event, out pipeline.Outbox) error {
	if c.Memory == nil {
		return say(ctx, out, msgNoMemory)
	}
	text, err := c.Memory.List(ctx, ev.ChannelID)
	if err != nil {
		return err
	}
	return say(ctx, out, text)
}

func (c *Commands) forget(ctx context.Context, ev *pipeline.Event, a pipeline.Access, args string, out pipeline.Outbox) error {
	if c.Memory == nil {
		return say(ctx, out, msgNoMemory)
	}
	if args == "" {
		return say(ctx, out, "usage: /forget <id> (`/memory` lists the ids)")
	}
	text, err := c.Memory.Forget(ctx, a, ev.ChannelID, args)
	if err != nil {
		return err
	}
	return say(ctx, out, text)
}
