package tools

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Names of the agent_chat tools that read the workspace and react
// (interfaces.md, "Eyes").
const (
	ChatThreadHistory  = "mcp__agent_chat__get_thread_history"
	ChatChannelHistory = "mcp__agent_chat__get_channel_history"
	ChatGetUser        = "mcp__agent_chat__get_user"
	ChatChannelInfo    = "mcp__agent_chat__get_channel_info"
	ChatChannelMembers = "mcp__agent_chat__list_channel_members"
	ChatReact          = "mcp__agent_chat__react"
	ChatUnreact        = "mcp__agent_chat__unreact"
	// ChatSearch searches the workspace as the person asking sees it
	// (internal/connect, "Acting as the person asking").
	ChatSearch = "mcp__agent_chat__search"
)

// ChatReader reads the workspace and reacts, for the agent_chat tools. The
// caller names the conversation: the tools name only the turn's own. Its
// errors name the platform's method and error code, never a token; a
// cursor is the platform's, "" for the first page; a next cursor of ""
// means the last page.
type ChatReader interface {
	// ThreadHistory is a page of the thread at threadTS, oldest first,
	// its root first on the first page.
	ThreadHistory(ctx context.Context, channelID, threadTS, cursor string, limit int) (pipeline.MessagePage, error)
	// ChannelHistory is a page of the conversation's top-level messages,
	// newest first, those after oldest (a ts) when it is set.
	ChannelHistory(ctx context.Context, channelID, oldest, cursor string, limit int) (pipeline.MessagePage, error)
	UserProfile(ctx context.Context, userID string) (pipeline.Profile, error)
	ConversationInfo(ctx context.Context, channelID string) (pipeline.ConversationInfo, error)
	// ConversationMembers is a page of the conversation's members' ids.
	ConversationMembers(ctx context.Context, channelID, cursor string, limit int) (members []string, next string, err error)
	// React adds the bot's reaction name to the message at ts; one
	// already there is no error. Unreact removes it; one not there is no
	// error.
	React(ctx context.Context, channelID, ts, name string) error
	Unreact(ctx context.Context, channelID, ts, name string) error
}

// isPeer reports whether a bot's user id is one of the persona's peers
// (## Peers), when r says (*persona.Persona does).
func isPeer(r Roles, userID string) bool {
	p, ok := r.(interface{ IsPeer(string) bool })
	return ok && userID != "" && p.IsPeer(userID)
}

// Roles says what a person is to the persona (*persona.Persona).
type Roles interface {
	RoleOf(userID string) pipeline.Role
}

// Page sizes of the reads: what the model may ask for, and what it gets
// when it does not say. A page is also cut at maxReadChars of text, and a
// message at maxMessageChars, so that one result stays a few thousand
// tokens whatever people wrote; the cursor then resumes where it was cut.
const (
	threadDefault   = 30
	threadMax       = 100
	channelDefault  = 20
	channelMax      = 100
	membersDefault  = 100
	membersMax      = 200
	maxReadChars    = 24_000
	maxMessageChars = 3_000
)

func (c *ChatServer) readTools() []Tool {
	return []Tool{
		{
			Name: ChatThreadHistory,
			Description: "Read this thread's messages, oldest first, each in the envelope that says who wrote it, with its ts. " +
				"It reads only the thread you are in. When there is more, the result ends with a cursor: call again with it.",
			Schema: json.RawMessage(`{"type":"object","properties":{"limit":{"type":"integer","minimum":1,"maximum":100,"description":"Messages per page (default 30)."},"cursor":{"type":"string","description":"The cursor a previous call returned."}},"additionalProperties":false}`),
			Call:   c.threadHistory,
		},
		{
			Name: ChatChannelHistory,
			Description: "Read the top-level messages of the channel or DM this thread is in, newest first, each in its envelope with its ts and its number of replies. " +
				"It reads only this conversation. When there are older messages, the result ends with a cursor: call again with it.",
			Schema: json.RawMessage(`{"type":"object","properties":{"limit":{"type":"integer","minimum":1,"maximum":100,"description":"Messages per page (default 20)."},"oldest":{"type":"string","description":"A message ts: only messages after it."},"cursor":{"type":"string","description":"The cursor a previous call returned."}},"additionalProperties":false}`),
			Call:   c.channelHistory,
		},
		{
			Name:        ChatGetUser,
			Description: "Look up a person of the workspace by user id: name, real name, title, time zone, whether a bot, and their role to you.",
			Schema:      json.RawMessage(`{"type":"object","properties":{"user_id":{"type":"string","description":"The user id (U…), as in <@U…>."}},"required":["user_id"],"additionalProperties":false}`),
			Call:        c.getUser,
		},
		{
			Name:        ChatChannelInfo,
			Description: "Describe the channel or DM this thread is in: name, kind, topic, purpose, member count, its trust layer.",
			Schema:      json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
			Call:        c.channelInfo,
		},
		{
			Name:        ChatChannelMembers,
			Description: "List the members of the channel or DM this thread is in, with their role to you. When there are more, the result ends with a cursor: call again with it.",
			Schema:      json.RawMessage(`{"type":"object","properties":{"limit":{"type":"integer","minimum":1,"maximum":200,"description":"Members per page (default 100)."},"cursor":{"type":"string","description":"The cursor a previous call returned."}},"additionalProperties":false}`),
			Call:        c.channelMembers,
		},
		{
			Name:        ChatReact,
			Description: "Add an emoji reaction to a message of this conversation: by default the message you are answering.",
			Schema:      json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","description":"The emoji's name without colons (eyes, white_check_mark, thumbsup)."},"ts":{"type":"string","description":"The message's ts (default: the message you are answering)."}},"required":["name"],"additionalProperties":false}`),
			Call:        c.react,
		},
		{
			Name:        ChatUnreact,
			Description: "Remove an emoji reaction you added to a message of this conversation: by default the message you are answering.",
			Schema:      json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","description":"The emoji's name without colons."},"ts":{"type":"string","description":"The message's ts (default: the message you are answering)."}},"required":["name"],"additionalProperties":false}`),
			Call:        c.unreact,
		},
	}
}

// readTurn is the turn a read acts for, with its reader, or the refusal
// to return.
func (c *ChatServer) readTurn(ctx context.Context) (*pipeline.Turn, *Result) {
	t, ok := TurnFromContext(ctx)
	switch {
	case !ok || t.Event == nil || t.Event.ChannelID == "":
		r := Errorf("no chat conversation to read")
		return nil, &r
	case c.Reader == nil:
		r := Errorf("no chat platform to read")
		return nil, &r
	}
	return t, nil
}

// startPaged begins a paged read: the input decoded into in (whose Cursor
// field cursor points to), the turn, and its cursor read for the listing
// scope names in the turn's own conversation; refused, when set, is the
// tool's one-line answer instead.
func (c *ChatServer) startPaged(ctx context.Context, input json.RawMessage, in any, cursor *string,
	scope func(t *pipeline.Turn) string) (t *pipeline.Turn, cur readCursor, refused *Result) {
	if err := decodeConfined(input, in); err != nil {
		r := Errorf("%v", err)
		return nil, readCursor{}, &r
	}
	t, refused = c.readTurn(ctx)
	if refused != nil {
		return nil, readCursor{}, refused
	}
	cur, err := parseCursor(*cursor, scope(t))
	if err != nil {
		r := Errorf("%v", err)
		return nil, readCursor{}, &r
	}
	return t, cur, nil
}

// readFailed is the result of a read the platform refused or failed: its
// reason, one line, redacted. A cancelled turn is an error of the call.
func (c *ChatServer) readFailed(ctx context.Context, what string, err error) (Result, error) {
	if ctx.Err() != nil {
		return Result{}, err
	}
	return Errorf("%s: %s", what, oneLine(c.redact(err.Error()))), nil
}

func (c *ChatServer) threadHistory(ctx context.Context, input json.RawMessage) (Result, error) {
	var in struct {
		Limit  int    `json:"limit"`
		Cursor string `json:"cursor"`
	}
	t, cur, refused := c.startPaged(ctx, input, &in, &in.Cursor, func(t *pipeline.Turn) string {
		return "thread:" + t.Event.ChannelID + ":" + t.Event.RootTS()
	})
	if refused != nil {
		return *refused, nil
	}
	root := t.Event.RootTS()
	page, err := c.Reader.ThreadHistory(ctx, t.Event.ChannelID, root, cur.platform, pageSize(in.Limit, threadDefault, threadMax))
	if err != nil {
		return c.readFailed(ctx, "thread history not read", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "thread %s of this conversation, oldest first:\n", root)
	next, err := c.writeMessages(ctx, &b, page, cur, cur.scope, func(m pipeline.PostedMessage) bool {
		// The platform may start a later page with the root again.
		return cur.platform != "" && m.TS == root
	})
	if err != nil {
		return c.readFailed(ctx, "thread history not read", err)
	}
	finish(&b, next, "end of the thread")
	return Result{Text: b.String()}, nil
}

func (c *ChatServer) channelHistory(ctx context.Context, input json.RawMessage) (Result, error) {
	var in struct {
		Limit  int    `json:"limit"`
		Oldest string `json:"oldest"`
		Cursor string `json:"cursor"`
	}
	t, cur, refused := c.startPaged(ctx, input, &in, &in.Cursor, func(t *pipeline.Turn) string { return "channel:" + t.Event.ChannelID })
	if refused != nil {
		return *refused, nil
	}
	if in.Oldest != "" && !validTS(in.Oldest) {
		return Errorf("oldest must be a message ts like 1700000000.000100"), nil
	}
	page, err := c.Reader.ChannelHistory(ctx, t.Event.ChannelID, in.Oldest, cur.platform, pageSize(in.Limit, channelDefault, channelMax))
	if err != nil {
		return c.readFailed(ctx, "channel history not read", err)
	}
	var b strings.Builder
	b.WriteString("messages of this conversation, newest first:\n")
	next, err := c.writeMessages(ctx, &b, page, cur, cur.scope, nil)
	if err != nil {
		return c.readFailed(ctx, "channel history not read", err)
	}
	finish(&b, next, "no older messages")
	return Result{Text: b.String()}, nil
}

// writeMessages writes the page's messages from cur's place on, one a
// line, until maxReadChars, and returns the cursor of what is left ("" for
// nothing). skip drops a message without writing it; those of people not
// heard (Unheard) are left out and counted in a line of their own.
func (c *ChatServer) writeMessages(ctx context.Context, b *strings.Builder, page pipeline.MessagePage, cur readCursor, scope string,
	skip func(pipeline.PostedMessage) bool) (string, error) {
	self := pipeline.Identity{}
	if c.Self != nil {
		self = c.Self()
	}
	shown, unheard := 0, 0
	heard := map[string]bool{}
	defer func() {
		if unheard > 0 {
			fmt.Fprintf(b, "(%d left out: from people whose words you do not receive, blocked or muted)\n", unheard)
		}
	}()
	for i := cur.skip; i < len(page.Messages); i++ {
		m := page.Messages[i]
		if skip != nil && skip(m) {
			continue
		}
		if ok, err := c.heard(ctx, m, self, heard); err != nil {
			return "", err
		} else if !ok {
			unheard++
			continue
		}
		line := c.messageLine(m, self)
		if shown > 0 && b.Len()+len(line) > maxReadChars {
			return readCursor{scope: scope, platform: cur.platform, skip: i}.String(), nil
		}
		b.WriteString(line)
		shown++
	}
	if shown == 0 {
		b.WriteString("(no messages)\n")
	}
	if page.Next == "" {
		return "", nil
	}
	return readCursor{scope: scope, platform: page.Next}.String(), nil
}

// heard reports whether m's author is heard: a bot, the bot itself, or a
// person Unheard does not leave out. seen caches the answers of one read.
func (c *ChatServer) heard(ctx context.Context, m pipeline.PostedMessage, self pipeline.Identity, seen map[string]bool) (bool, error) {
	if c.Unheard == nil || m.UserID == "" || m.BotID != "" || m.Subtype == "bot_message" || m.UserID == self.UserID {
		return true, nil
	}
	if ok, known := seen[m.UserID]; known {
		return ok, nil
	}
	out, err := c.Unheard(ctx, m.UserID)
	if err != nil {
		return false, err
	}
	seen[m.UserID] = !out
	return !out, nil
}

// messageLine is one message for the model: its ts, whether the bot wrote
// it, the envelope that says who did (the words and file names redacted
// and escaped as the envelope escapes a person's words), its replies.
func (c *ChatServer) messageLine(m pipeline.PostedMessage, self pipeline.Identity) string {
	author := cmp.Or(m.UserID, m.BotID)
	role := string(pipeline.RoleMember)
	mine := self.UserID != "" && m.UserID == self.UserID || self.BotID != "" && m.BotID == self.BotID
	switch {
	case !mine && m.BotID != "" && isPeer(c.Roles, m.UserID):
		role = string(pipeline.RolePeer)
	case mine || m.BotID != "" || m.Subtype == "bot_message":
		role = pipeline.EnvelopeBot
	case c.Roles != nil:
		role = string(c.Roles.RoleOf(m.UserID))
	}
	words := cutText(m.Text, maxMessageChars)
	if len(m.Files) > 0 {
		names := make([]string, len(m.Files))
		for i, f := range m.Files {
			names[i] = f.Name
			if f.MimeType != "" {
				names[i] += " (" + f.MimeType + ")"
			}
		}
		words += "\n[files: " + strings.Join(names, ", ") + "]"
	}
	var b strings.Builder
	b.WriteString("[" + m.TS + "] ")
	if mine {
		b.WriteString("(you) ")
	}
	b.WriteString(pipeline.Envelope(author, role, c.redact(words)))
	if m.Replies > 0 {
		fmt.Fprintf(&b, " (thread: %d replies)", m.Replies)
	}
	b.WriteByte('\n')
	return b.String()
}

// finish ends a listing with its cursor, or says it is complete.
func finish(b *strings.Builder, next, end string) {
	if next == "" {
		b.WriteString(end + ".")
		return
	}
	fmt.Fprintf(b, "more: call again with cursor %q.", next)
}

// cutText keeps the first n characters of s, saying how many were left out.
func cutText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + fmt.Sprintf("… [%d more characters]", len(r)-n)
}

// pageSize is the limit asked for, def when none, at most max.
func pageSize(limit, def, max int) int {
	switch {
	case limit <= 0:
		return def
	case limit > max:
		return max
	}
	return limit
}

func (c *ChatServer) redact(s string) string {
	if c.Redactor == nil {
		return s
	}
	return c.Redactor.Redact(s)
}

// oneLine is s with its line breaks as spaces.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
