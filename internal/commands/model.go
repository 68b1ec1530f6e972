package commands

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// ModelStore keeps each thread's model (*store.Store).
type ModelStore interface {
	SetThreadModel(ctx context.Context, key, model string) error
	ModelOf(ctx context.Context, threadKey, channelKey string) (string, error)
}

// Models is what /model chooses from.
type Models struct {
	Store ModelStore
	// Choices are the ids a thread may use (AGENT_MODELS), the service's
	// model first.
	Choices []string
}

// msgModelRefused is the refusal of /model <id>, said as /mode's is.
const msgModelRefused = "only the manager or an approver with scope model can change the model"

// Current is the model a thread's requests use: its own, else its
// channel's, else the service's. A stored id no longer offered (AGENT_MODELS
// changed since) is the service's model.
func (m *Models) Current(ctx context.Context, threadKey, channelKey string) (string, error) {
	id, err := m.Store.ModelOf(ctx, threadKey, channelKey)
	if err != nil {
		return "", err
	}
	if id == "" || !slices.Contains(m.Choices, id) {
		return m.Choices[0], nil
	}
	return id, nil
}

// model runs /model: alone it says the thread's model and the choices;
// with an id it sets the thread's model (the slash form: the channel's),
// for the manager, the backup manager and approvers of scope model
// (mayChangeModel), since a model sets what the thread costs.
func (c *Commands) model(ctx context.Context, ev *pipeline.Event, a pipeline.Access, key, args string, out pipeline.Outbox) error {
	if c.Models == nil || len(c.Models.Choices) == 0 {
		return say(ctx, out, "choosing a model is not available here")
	}
	choices := "`" + strings.Join(c.Models.Choices, "`, `") + "`"
	if args == "" {
		current, err := c.Models.Current(ctx, key, pipeline.ThreadKey(ev.ChannelID, ""))
		if err != nil {
			return err
		}
		return say(ctx, out, fmt.Sprintf("This thread's model is `%s`.\nusage: /model <id>, one of %s", current, choices))
	}
	if !mayChangeModel(a) {
		return c.refuse(ctx, ev, "/model", key, out, msgModelRefused)
	}
	// The words are not echoed: they are not the bot's to post.
	if !slices.Contains(c.Models.Choices, args) {
		return say(ctx, out, "That model is not offered here; choose one of "+choices+".")
	}
	if err := c.Models.Store.SetThreadModel(ctx, key, args); err != nil {
		return err
	}
	where := "this thread"
	if ev.Kind == pipeline.KindCommand {
		where = "this channel's threads without a model of their own"
	}
	return say(ctx, out, fmt.Sprintf("Model of %s: `%s` (set by <@%s>).", where, args, ev.UserID))
}
