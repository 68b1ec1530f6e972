package agentview

import (
	"context"
	"log/slog"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Chat offers suggested prompts in a DM (slackio.Chat, the simulator's
// platform).
type Chat interface {
	SuggestPrompts(ctx context.Context, channelID string, prompts []string) error
}

// Prompts offers the persona's suggested prompts. It implements
// pipeline.Home.
type Prompts struct {
	Chat Chat
	// Prompts are the persona's, in order; none offers nothing.
	Prompts []string
	Log     *slog.Logger
}

var _ pipeline.Home = (*Prompts)(nil)

// Opened offers the prompts to a person who opened the persona's DM. The
// drop stage admitted them first: the persona offers prompts only to whom
// it would answer in that DM.
func (p *Prompts) Opened(ctx context.Context, ev *pipeline.Event, _ pipeline.Access) error {
	p.Offer(ctx, ev.ChannelID)
	return nil
}

// Offer offers the prompts in the DM channelID. An offer that fails is
// logged and forgotten: nothing waits on it, and the platform's refusal of
// the method is remembered by the Chat.
func (p *Prompts) Offer(ctx context.Context, channelID string) {
	if len(p.Prompts) == 0 {
		return
	}
	if err := p.Chat.SuggestPrompts(ctx, channelID, p.Prompts); err != nil {
		p.Log.DebugContext(ctx, "suggested prompts not offered", "channel_id", channelID, "err", err)
	}
}
