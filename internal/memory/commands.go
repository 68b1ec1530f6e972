package memory

import (
	"context"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Commands is the memory as the thread commands reach it (/remember,
// /memory, /forget): who asks is the person the access names.
type Commands struct{ M *Memories }

// Remember makes a memory of text for the person a names (persona-wide
// only when persona is set and they may: RememberText).
func (c Commands) Remember(ctx context.Context, a pipeline.Access, channel, threadTS, text string, persona bool) (string, error) {
	return c.M.RememberText(ctx, Who{UserID: a.UserID, Role: a.Role}, channel, threadTS, text, persona)
}

// List lists what the conversation of channel may see.
func (c Commands) List(ctx context.Context, channel string) (string, error) {
	return c.M.List(ctx, channel)
}

// Forget forgets memory id, when the person a names may.
func (c Commands) Forget(ctx context.Context, a pipeline.Access, channel, id string) (string, error) {
	return c.M.ForgetText(ctx, Who{UserID: a.UserID, Role: a.Role}, channel, id)
}
