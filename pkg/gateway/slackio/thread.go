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
// out as for every read (read.go).
func (c *Chat) ThreadReplies(ctx context.Context, q pipeline.RepliesQuery) (pipeline.MessagePage, error) {
	if q.ChannelID == "" || q.RootTS == "" {
		return pipeline.MessagePage{}, errors.New("conversations.replies: no channel or thread")
	}
	var page pipeline.MessagePage
	err := c.read(ctx, "conversations.replies", func(ctx context.Context) error {
		msgs, more, cursor, err := c.api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
			ChannelID: q.ChannelID, Timestamp: q.RootTS, Cursor: q.Cursor, Limit: q.Limit,
			Oldest: q.Oldest, Latest: q.Latest, Inclusive: q.Oldest != "" || q.Latest != "",
		})
		if err != nil {
			return err
		}
		page = pipeline.MessagePage{Messages: postedMessages(msgs)}
		if more {
			page.Next = cursor
		}
		return nil
	})
	return page, err
}

// ThreadHistory reads a page of the thread at threadTS in channelID, from
// cursor ("" for the first page, which starts with the root).
func (c *Chat) ThreadHistory(ctx context.Context, channelID, threadTS, cursor string, limit int) (pipeline.MessagePage, error) {
	return c.ThreadReplies(ctx, pipeline.RepliesQuery{ChannelID: channelID, RootTS: threadTS, Cursor: cursor, Limit: limit})
}
