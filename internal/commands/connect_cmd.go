package commands

import (
	"context"
	"strings"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Connections answers /connect, /disconnect and /connections:
// internal/connect reads the arguments and applies the rules. Each answer
// is the text to say; private marks an answer for the asker only (the
// sign-in link): ephemeral in a channel, said in a DM. err is a failure of
// the runtime.
type Connections interface {
	Connect(ctx context.Context, a pipeline.Access, ev *pipeline.Event, args string) (text string, private bool, err error)
	Disconnect(ctx context.Context, a pipeline.Access, ev *pipeline.Event, args string) (text string, private bool, err error)
	List(ctx context.Context, a pipeline.Access, ev *pipeline.Event) (text string, private bool, err error)
}

// msgNoConnections answers the connection commands where no tool server
// signs in per person.
const msgNoConnections = "no tool server here signs in per person"

// connections runs /connect, /disconnect and /connections.
func (c *Commands) connections(ctx context.Context, ev *pipeline.Event, a pipeline.Access, name, args string, out pipeline.Outbox) error {
	if c.Connections == nil {
		return say(ctx, out, msgNoConnections)
	}
	var text string
	var private bool
	var err error
	switch name {
	case "/connect":
		text, private, err = c.Connections.Connect(ctx, a, ev, args)
	case "/disconnect":
		text, private, err = c.Connections.Disconnect(ctx, a, ev, args)
	case "/connections":
		text, private, err = c.Connections.List(ctx, a, ev)
	}
	if err != nil {
		return err
	}
	if private && !ev.IsDM() {
		if c.Private == nil {
			return say(ctx, out, "I can only answer that in a direct message: ask me there")
		}
		// The ephemeral goes out as it is, not through the markup stage.
		return c.Private(ctx, ev.ChannelID, ev.ThreadTS, ev.UserID, escapeMarkup(text))
	}
	return say(ctx, out, text)
}

// escapeMarkup escapes what the platform's markup reads as markup.
func escapeMarkup(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
