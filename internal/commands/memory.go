package commands

import (
	"context"
	"strings"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Memory answers /remember, /memory and /forget (internal/memory applies
// the rules).
type Memory interface {
	// Remember is /remember's answer: text remembered in channel (thread
	// threadTS), everywhere when persona (the sender's own decision: the
	// manager and the backup manager only), or why not.
	Remember(ctx context.Context, a pipeline.Access, channel, threadTS, text string, persona bool) (string, error)
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

// usageRemember is /remember's usage.
const usageRemember = "usage: /remember [--persona] <text> (`--persona`: in every conversation; the manager and the backup manager only)"

// remember is /remember [--persona] <text>: a memory made by a person's
// own command. Anyone who may talk here may make one of this
// conversation; a persona-wide one is the manager's or the backup
// manager's explicit decision (the model's needs their card instead).
func (c *Commands) remember(ctx context.Context, ev *pipeline.Event, a pipeline.Access, args string, out pipeline.Outbox) error {
	if c.Memory == nil {
		return say(ctx, out, msgNoMemory)
	}
	persona := false
	// Some clients write "--" as an em dash.
	for _, flag := range []string{"--persona", "—persona"} {
		if rest, ok := strings.CutPrefix(args, flag); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\n' || rest[0] == '\t') {
			persona, args = true, strings.TrimSpace(rest)
			break
		}
	}
	if args == "" {
		return say(ctx, out, usageRemember)
	}
	text, err := c.Memory.Remember(ctx, a, ev.ChannelID, ev.RootTS(), args, persona)
	if err != nil {
		return err
	}
	return say(ctx, out, text)
}
