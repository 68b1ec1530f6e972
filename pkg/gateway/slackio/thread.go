package slackio

import (
	"context"
	"errors"

	"github.com/slack-go/slack"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

var _ pipeline.ThreadReader = (*Chat)(nil)

// ThreadReplies reads one page of a thread's messages, oldest first
// (conversations.replies): the root first on the first page, then the
// replies from q.Oldest to q.Latest, both included. A rate limit is waited
// out by the client (the platform's Retry-After, NewClient).
func (c *Chat) ThreadReplies(ctx context.Context, q pipeline.RepliesQuery) (pipeline.RepliesPage, error) {
	if q.ChannelID == "" || q.RootTS == "" {
		return pipeline.RepliesPage{}, errors.New("conversations.replies: no channel or thread")
	}
	msgs, more, cursor, err := c.api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
		ChannelID: q.ChannelID, Timestamp: q.RootTS, Cursor: q.Cursor, Limit: q.Limit,
		Oldest: q.Oldest, Latest: q.Latest, Inclusive: q.Oldest != "" || q.Latest != "",
	})
	if err != nil {
		return pipeline.RepliesPage{}, c.wrap("conversations.replies", err)
	}
	page := pipeline.RepliesPage{Messages: make([]pipeline.ThreadMessage, 0, len(msgs))}
	if more {
		page.NextCursor = cursor
	}
	for _, m := range msgs {
		tm := pipeline.ThreadMessage{TS: m.Timestamp, UserID: m.User, BotID: m.BotID, Subtype: m.SubType, Text: m.Text}
		for _, f := range m.Files {
			tm.Files = append(tm.Files, pipeline.File{ID: f.ID, Name: f.Name, MimeType: f.Mimetype, Size: int64(f.Size),
				URL: f.URLPrivateDownload})
		}
		page.Messages = append(page.Messages, tm)
	}
	return page, nil
}
