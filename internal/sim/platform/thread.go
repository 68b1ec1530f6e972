package platform

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

var _ pipeline.ThreadReader = (*Chat)(nil)

// ThreadReplies reads one page of a thread from the transcript, as the
// platform's conversations.replies does: the root first on the first page
// whatever the bounds, then the replies from q.Oldest to q.Latest (both
// included), oldest first: the messages people injected (once each: a
// mention's app_mention twin is the same message) and the bot's posts and
// uploads as they now read. The cursor is an offset (page).
func (m *Chat) ThreadReplies(ctx context.Context, q pipeline.RepliesQuery) (pipeline.MessagePage, error) {
	if err := ctx.Err(); err != nil {
		return pipeline.MessagePage{}, fmt.Errorf("conversations.replies: %w", err)
	}
	if q.ChannelID == "" || q.RootTS == "" {
		return pipeline.MessagePage{}, errors.New("conversations.replies: no channel or thread")
	}
	within := func(ts string) bool {
		return (q.Oldest == "" || pipeline.CompareTS(ts, q.Oldest) >= 0) && (q.Latest == "" || pipeline.CompareTS(ts, q.Latest) <= 0)
	}
	m.mu.Lock()
	m.init()
	var thread []pipeline.PostedMessage
	for _, msg := range m.conversationLocked(q.ChannelID) {
		if msg.p.TS == q.RootTS || msg.p.ThreadTS == q.RootTS && within(msg.p.TS) {
			thread = append(thread, msg.p)
		}
	}
	m.mu.Unlock()
	// Posts get their ts as they are made, in transcript order; an event
	// injected with a ts of its own may come before them.
	slices.SortStableFunc(thread, func(a, b pipeline.PostedMessage) int { return pipeline.CompareTS(a.TS, b.TS) })
	msgs, next, err := page("conversations.replies", thread, q.Cursor, q.Limit)
	return pipeline.MessagePage{Messages: msgs, Next: next}, err
}

// ThreadHistory reads the thread at threadTS in channelID, oldest first,
// the root first; a thread with no message is not found.
func (m *Chat) ThreadHistory(ctx context.Context, channelID, threadTS, cursor string, limit int) (pipeline.MessagePage, error) {
	p, err := m.ThreadReplies(ctx, pipeline.RepliesQuery{ChannelID: channelID, RootTS: threadTS, Cursor: cursor, Limit: limit})
	if err == nil && len(p.Messages) == 0 && cursor == "" {
		return pipeline.MessagePage{}, errors.New("conversations.replies: thread_not_found")
	}
	return p, err
}
