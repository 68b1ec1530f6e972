package slackio

import (
	"context"
	"errors"
	"sync"

	"github.com/slack-go/slack"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

var _ pipeline.StreamPoster = (*Chat)(nil)

// errNoStreaming is StartStream's answer in a channel where the platform
// refused a stream before: the reply is posted and edited instead.
var errNoStreaming = errors.New("chat.startStream: refused here before")

// noStream remembers the channels where the platform refused streaming
// (an old workspace, a channel type it does not stream to), so that each
// reply does not ask again.
type noStream struct {
	mu       sync.Mutex
	channels map[string]bool
}

func (n *noStream) has(channel string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.channels[channel] || n.channels["*"]
}

func (n *noStream) add(channel string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.channels == nil {
		n.channels = map[string]bool{}
	}
	n.channels[channel] = true
}

// StartStream starts a message written while the model writes it
// (chat.startStream) in m's thread, with markdown as its first text. A
// platform that refuses it (method_not_supported, an unknown method, a
// channel it does not stream to) is remembered for the channel; the caller
// posts and edits instead.
func (c *Chat) StartStream(ctx context.Context, m pipeline.Message, markdown string) (string, error) {
	if c.streams.has(m.ChannelID) {
		return "", errNoStreaming
	}
	opts := streamTarget(m, slack.MsgOptionMarkdownText(markdown))
	_, ts, err := c.api.StartStreamContext(ctx, m.ChannelID, opts...)
	if err != nil {
		var se slack.SlackErrorResponse
		if errors.As(err, &se) {
			scope := m.ChannelID
			if se.Err == "method_not_supported" || se.Err == "unknown_method" || se.Err == "not_allowed_token_type" {
				scope = "*" // the whole workspace cannot
			}
			c.streams.add(scope)
		}
		c.log.InfoContext(ctx, "chat: streaming refused; posting and editing instead", "channel_id", m.ChannelID, "err", c.wrap("chat.startStream", err))
		return "", c.wrap("chat.startStream", err)
	}
	return ts, nil
}

// AppendStream adds markdown to the streamed message at ts
// (chat.appendStream).
func (c *Chat) AppendStream(ctx context.Context, channelID, ts, markdown string) error {
	if _, _, err := c.api.AppendStreamContext(ctx, channelID, ts, slack.MsgOptionMarkdownText(markdown)); err != nil {
		return c.wrap("chat.appendStream", err)
	}
	return nil
}

// StopStream ends the stream of the message at ts (chat.stopStream); the
// message can then be edited like any other.
func (c *Chat) StopStream(ctx context.Context, channelID, ts string) error {
	if _, _, err := c.api.StopStreamContext(ctx, channelID, ts); err != nil {
		return c.wrap("chat.stopStream", err)
	}
	return nil
}

// streamTarget is opts and where a stream goes: m's thread, and the
// person and team the platform wants named for a stream in a channel.
func streamTarget(m pipeline.Message, opts ...slack.MsgOption) []slack.MsgOption {
	if m.ThreadTS != "" {
		opts = append(opts, slack.MsgOptionTS(m.ThreadTS))
	}
	if m.RecipientUser != "" {
		opts = append(opts, slack.MsgOptionRecipientUserID(m.RecipientUser))
	}
	if m.RecipientTeam != "" {
		opts = append(opts, slack.MsgOptionRecipientTeamID(m.RecipientTeam))
	}
	return opts
}
