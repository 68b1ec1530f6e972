package platform

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

var _ pipeline.ThreadReader = (*Chat)(nil)

// threadPage is the page size of ThreadReplies when the query names none.
const threadPage = 100

// ThreadReplies reads one page of a thread from the transcript, as the
// platform's conversations.replies does: the root first on the first page
// whatever the bounds, then the replies from q.Oldest to q.Latest (both
// included), oldest first: the messages people injected (once each: a
// mention's app_mention twin is the same message) and the bot's posts and
// uploads as they now read. The cursor is the index of the page's first
// message.
func (m *Chat) ThreadReplies(ctx context.Context, q pipeline.RepliesQuery) (pipeline.RepliesPage, error) {
	if err := ctx.Err(); err != nil {
		return pipeline.RepliesPage{}, fmt.Errorf("conversations.replies: %w", err)
	}
	if q.ChannelID == "" || q.RootTS == "" {
		return pipeline.RepliesPage{}, errors.New("conversations.replies: no channel or thread")
	}
	start := 0
	if q.Cursor != "" {
		n, err := strconv.Atoi(q.Cursor)
		if err != nil || n < 0 {
			return pipeline.RepliesPage{}, errors.New("conversations.replies: invalid_cursor")
		}
		start = n
	}
	limit := q.Limit
	if limit <= 0 {
		limit = threadPage
	}
	m.mu.Lock()
	all := m.threadLocked(q)
	m.mu.Unlock()
	start = min(start, len(all))
	end := min(start+limit, len(all))
	page := pipeline.RepliesPage{Messages: all[start:end]}
	if end < len(all) {
		page.NextCursor = strconv.Itoa(end)
	}
	return page, nil
}

// threadLocked is the thread q reads, whole; m.mu must be held.
func (m *Chat) threadLocked(q pipeline.RepliesQuery) []pipeline.ThreadMessage {
	within := func(ts string) bool {
		return (q.Oldest == "" || pipeline.CompareTS(ts, q.Oldest) >= 0) && (q.Latest == "" || pipeline.CompareTS(ts, q.Latest) <= 0)
	}
	var out []pipeline.ThreadMessage
	seen := map[string]bool{}
	for _, e := range m.log {
		if e.ChannelID != q.ChannelID || e.TS == "" || seen[e.TS] || e.TS != q.RootTS && (e.ThreadTS != q.RootTS || !within(e.TS)) {
			continue
		}
		var msg pipeline.ThreadMessage
		switch {
		case e.Op == OpInbound && e.Kind == pipeline.KindMessage:
			msg = pipeline.ThreadMessage{TS: e.TS, UserID: e.UserID, BotID: e.BotID, Text: e.Text}
			if e.BotID != "" {
				msg.Subtype = "bot_message"
			}
			for _, f := range e.Files {
				msg.Files = append(msg.Files, pipeline.File{ID: f.ID, Name: f.Name, MimeType: f.MimeType, URL: f.URL,
					Size: int64(len(f.Content))})
			}
		case e.Op == OpPost || e.Op == OpUpload:
			cur := m.state[e.TS]
			msg = pipeline.ThreadMessage{TS: e.TS, UserID: cur.UserID, BotID: m.bot().BotID, Text: cur.Text}
			for _, f := range cur.Files {
				msg.Files = append(msg.Files, pipeline.File{ID: f.ID, Name: f.Name, URL: f.URL, Size: int64(len(f.Content))})
			}
		default:
			continue
		}
		seen[e.TS] = true
		out = append(out, msg)
	}
	// Posts get their ts as they are made, in transcript order; an event
	// injected with a ts of its own may come before them.
	slices.SortStableFunc(out, func(a, b pipeline.ThreadMessage) int { return pipeline.CompareTS(a.TS, b.TS) })
	return out
}
