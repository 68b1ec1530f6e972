package connect

import (
	"context"
	"strings"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Commands is the feature as the thread commands reach it (/connect,
// /disconnect, /connections). Anyone the persona hears may use them, for
// their own account only. Each answer is private (private true): shown
// only to the person, ephemeral in a channel, in the DM otherwise.
type Commands struct{ C *Connect }

// Connect is /connect <server>: the sign-in link.
func (c Commands) Connect(ctx context.Context, a pipeline.Access, ev *pipeline.Event, args string) (string, bool, error) {
	server, text := c.server("/connect", args)
	if text != "" {
		return text, true, nil
	}
	url, err := c.C.Begin(ctx, ev.UserID, server, ev.ChannelID, ev.ThreadTS)
	if err != nil {
		return "", true, err
	}
	return msgSignIn(server, url), true, nil
}

// Disconnect is /disconnect <server>.
func (c Commands) Disconnect(ctx context.Context, a pipeline.Access, ev *pipeline.Event, args string) (string, bool, error) {
	server, text := c.server("/disconnect", args)
	if text != "" {
		return text, true, nil
	}
	text, err := c.C.Disconnect(ctx, ev.UserID, server)
	return text, true, err
}

// List is /connections: the person's own.
func (c Commands) List(ctx context.Context, a pipeline.Access, ev *pipeline.Event) (string, bool, error) {
	if c.C == nil || len(c.C.names) == 0 {
		return msgNone, true, nil
	}
	rs, err := c.C.o.Store.Connections(ctx, ev.UserID)
	if err != nil {
		return "", true, err
	}
	if len(rs) == 0 {
		return msgNone, true, nil
	}
	lines := make([]string, 0, len(rs))
	for _, r := range rs {
		lines = append(lines, line(r))
	}
	return strings.Join(lines, "\n"), true, nil
}

// server reads the one argument; text is the answer when it is missing or
// not a server that signs in per person.
func (c Commands) server(cmd, args string) (server, text string) {
	if c.C == nil || len(c.C.names) == 0 {
		return "", msgUnknownServer("", nil)
	}
	words := strings.Fields(args)
	if len(words) != 1 {
		return "", usage(cmd, c.C.names)
	}
	if !c.C.Has(words[0]) {
		return "", msgUnknownServer(words[0], c.C.names)
	}
	return words[0], ""
}
