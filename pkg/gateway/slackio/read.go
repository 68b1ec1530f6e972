package slackio

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/slack-go/slack"

	"github.com/persona-runtime/agent/pkg/clock"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// The reads and reactions of the agent_chat tools (pkg/tools,
// chat_read.go): each Web API method typed here, once. The caller names
// the conversation; which one it may name is the tools' rule.

// Rate limits of the reads: a read the platform answers 429 is tried
// again after its Retry-After, readTries times in all, as long as the wait
// is at most readMaxWait. A longer wait is not spent holding the turn: the
// call fails with a *RateLimitedError that says how long, and the model
// decides. The platform's read methods are Tier 3 and 4 (50 and 100+ calls
// a minute): a burst of reads meets a wait of a few seconds.
const (
	readTries   = 3
	readMaxWait = 10 * time.Second
	// readDefaultWait is the wait of a rate limit that names none (a
	// 429 without Retry-After, an "ratelimited" error code).
	readDefaultWait = time.Second
)

// RateLimitedError is a read the platform still rate limits after the
// waits read allows: RetryAfter is its last Retry-After.
type RateLimitedError struct {
	Method     string
	RetryAfter time.Duration
}

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("%s: rate limited by the chat platform; try again in %s", e.Method, e.RetryAfter)
}

// ownRetries marks a call's context: the client hands its 429 straight
// back (client.go), for read to wait out on its clock.
type ownRetries struct{}

// waitsItself reports whether the request's rate limits are waited out by
// its caller (read), not by the client.
func waitsItself(req *http.Request) bool {
	return req != nil && req.Context().Value(ownRetries{}) != nil
}

// read runs call, a read of method, waiting out the platform's rate
// limits as the constants above say. Other failures are returned at once,
// named by method, the token scrubbed.
func (c *Chat) read(ctx context.Context, method string, call func(ctx context.Context) error) error {
	ctx = context.WithValue(ctx, ownRetries{}, true)
	for try := 1; ; try++ {
		err := call(ctx)
		if err == nil {
			return nil
		}
		wait, limited := rateLimit(err)
		switch {
		case !limited || ctx.Err() != nil:
			return c.wrap(method, withScope(err))
		case try >= readTries || wait > readMaxWait:
			c.log.WarnContext(ctx, "chat: read rate limited", "method", method, "retry_after", wait, "tries", try)
			return &RateLimitedError{Method: method, RetryAfter: wait}
		}
		c.log.DebugContext(ctx, "chat: read rate limited; waiting", "method", method, "retry_after", wait, "try", try)
		if err := sleep(ctx, c.clockOrSystem(), wait); err != nil {
			return c.wrap(method, err)
		}
	}
}

// withScope names the scope the platform says a call needs, when it
// refused it for a missing one: the operator adds it to the app.
func withScope(err error) error {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) && se.Err == "missing_scope" && se.Needed != "" {
		return &strippedError{text: "missing_scope: the app needs the scope " + se.Needed + " (agent doctor lists what the app lacks)", err: err}
	}
	return err
}

// rateLimit says whether err is the platform's rate limit, and how long
// it asks to wait.
func rateLimit(err error) (time.Duration, bool) {
	var rl *slack.RateLimitedError
	var sc slack.StatusCodeError
	var se slack.SlackErrorResponse
	switch {
	case errors.As(err, &rl):
		return rl.RetryAfter, true
	case errors.As(err, &sc) && sc.Code == http.StatusTooManyRequests,
		errors.As(err, &se) && (se.Err == "ratelimited" || se.Err == "rate_limited"):
		return readDefaultWait, true
	}
	return 0, false
}

// sleep waits d on clk, or until ctx is done.
func sleep(ctx context.Context, clk clock.Clock, d time.Duration) error {
	done := make(chan struct{})
	t := clk.AfterFunc(d, func() { close(done) })
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		t.Stop()
		return ctx.Err()
	}
}

func (c *Chat) clockOrSystem() clock.Clock {
	if c.clock != nil {
		return c.clock
	}
	return clock.System
}

// ChannelHistory reads a page of channelID's top-level messages
// (conversations.history), newest first, from cursor; oldest, when set,
// is the ts of the oldest message wanted (not included).
func (c *Chat) ChannelHistory(ctx context.Context, channelID, oldest, cursor string, limit int) (pipeline.MessagePage, error) {
	var page pipeline.MessagePage
	err := c.read(ctx, "conversations.history", func(ctx context.Context) error {
		resp, err := c.api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{
			ChannelID: channelID, Oldest: oldest, Cursor: cursor, Limit: limit})
		if err != nil {
			return err
		}
		page = pipeline.MessagePage{Messages: postedMessages(resp.Messages)}
		if resp.HasMore {
			page.Next = resp.ResponseMetaData.NextCursor
		}
		return nil
	})
	return page, err
}

// postedMessages converts the platform's messages; files keep their
// names, types and sizes, never their addresses.
func postedMessages(in []slack.Message) []pipeline.PostedMessage {
	out := make([]pipeline.PostedMessage, 0, len(in))
	for _, m := range in {
		p := pipeline.PostedMessage{TS: m.Timestamp, ThreadTS: m.ThreadTimestamp, UserID: m.User, BotID: m.BotID,
			Subtype: m.SubType, Text: m.Text, Replies: m.ReplyCount}
		for _, f := range m.Files {
			p.Files = append(p.Files, pipeline.File{ID: f.ID, Name: f.Name, MimeType: f.Mimetype, Size: int64(f.Size)})
		}
		out = append(out, p)
	}
	return out
}

// UserProfile reads the public part of userID's profile (users.info): no
// email, no phone.
func (c *Chat) UserProfile(ctx context.Context, userID string) (pipeline.Profile, error) {
	var p pipeline.Profile
	err := c.read(ctx, "users.info", func(ctx context.Context) error {
		u, err := c.api.GetUserInfoContext(ctx, userID)
		if err != nil {
			return err
		}
		p = pipeline.Profile{UserID: u.ID, Name: u.Name, RealName: u.RealName, DisplayName: u.Profile.DisplayName,
			Title: u.Profile.Title, TimeZone: u.TZ, TZLabel: u.TZLabel, IsBot: u.IsBot, Deleted: u.Deleted}
		if p.RealName == "" {
			p.RealName = u.Profile.RealName
		}
		return nil
	})
	return p, err
}

// ConversationInfo describes channelID (conversations.info, with its
// member count).
func (c *Chat) ConversationInfo(ctx context.Context, channelID string) (pipeline.ConversationInfo, error) {
	var info pipeline.ConversationInfo
	err := c.read(ctx, "conversations.info", func(ctx context.Context) error {
		ch, err := c.api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: channelID, IncludeNumMembers: true})
		if err != nil {
			return err
		}
		info = pipeline.ConversationInfo{ID: ch.ID, Name: ch.Name, IsIM: ch.IsIM, IsMPIM: ch.IsMpIM,
			IsPrivate: ch.IsPrivate || ch.IsGroup, IsArchived: ch.IsArchived, Topic: ch.Topic.Value, Purpose: ch.Purpose.Value,
			Members: ch.NumMembers, Creator: ch.Creator, User: ch.User}
		if ch.Created > 0 {
			info.Created = ch.Created.Time().UTC()
		}
		return nil
	})
	return info, err
}

// ConversationMembers reads a page of channelID's members' user ids
// (conversations.members) from cursor; next is "" on the last page.
func (c *Chat) ConversationMembers(ctx context.Context, channelID, cursor string, limit int) (members []string, next string, err error) {
	err = c.read(ctx, "conversations.members", func(ctx context.Context) error {
		var err error
		members, next, err = c.api.GetUsersInConversationContext(ctx, &slack.GetUsersInConversationParameters{
			ChannelID: channelID, Cursor: cursor, Limit: limit})
		return err
	})
	return members, next, err
}

// React adds the bot's reaction name (an emoji name without colons) to
// the message at ts in channelID (reactions.add). A reaction already there
// is no error.
func (c *Chat) React(ctx context.Context, channelID, ts, name string) error {
	return c.read(ctx, "reactions.add", func(ctx context.Context) error {
		err := c.api.AddReactionContext(ctx, name, slack.NewRefToMessage(channelID, ts))
		if err != nil && ErrorCode(err) == "already_reacted" {
			return nil
		}
		return err
	})
}

// Unreact removes the bot's reaction name from the message at ts in
// channelID (reactions.remove). A reaction that is not there is no error.
func (c *Chat) Unreact(ctx context.Context, channelID, ts, name string) error {
	return c.read(ctx, "reactions.remove", func(ctx context.Context) error {
		err := c.api.RemoveReactionContext(ctx, name, slack.NewRefToMessage(channelID, ts))
		if err != nil && ErrorCode(err) == "no_reaction" {
			return nil
		}
		return err
	})
}

// SearchContext searches the workspace as the person whose message gave
// actionToken sees it (assistant.search.context), in the conversation
// types given (public_channel, private_channel, mpim, im), at most limit
// messages.
// A missing or stale token is the platform's invalid_action_token.
func (c *Chat) SearchContext(ctx context.Context, query, actionToken string, channelTypes []string, limit int) ([]pipeline.SearchHit, error) {
	var hits []pipeline.SearchHit
	err := c.read(ctx, "assistant.search.context", func(ctx context.Context) error {
		resp, err := c.api.SearchAssistantContextContext(ctx, slack.AssistantSearchContextParameters{Query: query,
			ActionToken: actionToken, Limit: limit, ContentTypes: []string{"messages"},
			ChannelTypes: channelTypes})
		if err != nil {
			return err
		}
		hits = hits[:0]
		for _, m := range resp.Results.Messages {
			hits = append(hits, pipeline.SearchHit{ChannelID: m.ChannelID, ChannelName: m.ChannelName, TS: m.MessageTS,
				AuthorID: m.AuthorUserID, AuthorName: m.AuthorName, IsBot: m.IsAuthorBot, Text: m.Content, Permalink: m.Permalink})
		}
		return nil
	})
	return hits, err
}
