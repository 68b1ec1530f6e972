package platform

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// The reads and reactions of the agent's chat tools, answered from the
// transcript as the platform answers them from its own: a conversation
// holds the messages people sent and the bot's posts and uploads (as last
// edited); ephemerals and statuses are not messages. Cursors are offsets.
// People and conversations are made up from their ids.

// message is a message of the transcript as the read tools see it.
type message struct {
	p pipeline.PostedMessage
	e Entry
}

// conversationLocked is every message of channel, in transcript order
// (the ts order). m.mu must be held.
func (m *Chat) conversationLocked(channel string) []message {
	var out []message
	seen := map[string]bool{}
	bot := m.bot()
	for _, e := range m.log {
		if e.ChannelID != channel || e.TS == "" || seen[e.TS] {
			continue
		}
		switch {
		case e.Op == OpInbound && e.Kind == pipeline.KindMessage:
			p := pipeline.PostedMessage{TS: e.TS, ThreadTS: e.ThreadTS, UserID: e.UserID, BotID: e.BotID, Text: e.Text}
			if e.BotID != "" {
				p.Subtype = "bot_message"
			}
			for _, f := range e.Files {
				p.Files = append(p.Files, pipeline.File{ID: f.ID, Name: f.Name, MimeType: f.MimeType, Size: int64(len(f.Content))})
			}
			out = append(out, message{p: p, e: e})
		case e.Op == OpPost || e.Op == OpUpload:
			cur := *m.state[e.TS]
			text := cur.Text
			if cur.Card != nil && text == "" {
				text = "[" + cur.Card.Kind + " card: " + cur.Card.Body() + "]"
			}
			p := pipeline.PostedMessage{TS: e.TS, ThreadTS: e.ThreadTS, UserID: bot.UserID, BotID: bot.BotID, Text: text}
			if e.UserID != bot.UserID { // another app's post (AddApp)
				p.UserID, p.BotID = e.UserID, m.botIDLocked(e.UserID)
			}
			for _, f := range cur.Files {
				p.Files = append(p.Files, pipeline.File{ID: f.ID, Name: f.Name, MimeType: f.MimeType, Size: int64(len(f.Content))})
			}
			out = append(out, message{p: p, e: cur})
		default:
			continue
		}
		seen[e.TS] = true
	}
	return out
}

// offset reads a cursor of page; "" is 0.
func offset(method, cursor string) (int, error) {
	if cursor == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(cursor)
	if err != nil || n < 0 {
		return 0, errors.New(method + ": invalid_cursor")
	}
	return n, nil
}

// page cuts items at the offset cursor names, limit long.
func page[T any](method string, items []T, cursor string, limit int) ([]T, string, error) {
	start, err := offset(method, cursor)
	if err != nil {
		return nil, "", err
	}
	if limit <= 0 {
		limit = 100
	}
	start = min(start, len(items))
	end := min(start+limit, len(items))
	next := ""
	if end < len(items) {
		next = strconv.Itoa(end)
	}
	return items[start:end], next, nil
}

// ChannelHistory reads channelID's top-level messages, newest first,
// those after oldest when it is set, each root with its reply count.
func (m *Chat) ChannelHistory(ctx context.Context, channelID, oldest, cursor string, limit int) (pipeline.MessagePage, error) {
	if err := ctx.Err(); err != nil {
		return pipeline.MessagePage{}, fmt.Errorf("conversations.history: %w", err)
	}
	m.mu.Lock()
	m.init()
	all := m.conversationLocked(channelID)
	m.mu.Unlock()
	replies := map[string]int{}
	for _, msg := range all {
		if msg.p.ThreadTS != "" && msg.p.ThreadTS != msg.p.TS {
			replies[msg.p.ThreadTS]++
		}
	}
	var top []pipeline.PostedMessage
	for _, msg := range slices.Backward(all) {
		p := msg.p
		// The sim's ts keep ten digits of seconds: they sort as text.
		if p.ThreadTS != "" && p.ThreadTS != p.TS || oldest != "" && p.TS <= oldest {
			continue
		}
		p.Replies = replies[p.TS]
		top = append(top, p)
	}
	msgs, next, err := page("conversations.history", top, cursor, limit)
	return pipeline.MessagePage{Messages: msgs, Next: next}, err
}

// UserProfile makes up the profile of a user id: its handle is the id in
// lower case; the bot is a bot.
func (m *Chat) UserProfile(ctx context.Context, userID string) (pipeline.Profile, error) {
	if err := ctx.Err(); err != nil {
		return pipeline.Profile{}, fmt.Errorf("users.info: %w", err)
	}
	if !strings.HasPrefix(userID, "U") && !strings.HasPrefix(userID, "W") {
		return pipeline.Profile{}, errors.New("users.info: user_not_found")
	}
	isBot := userID == m.bot().UserID || m.isApp(userID)
	return pipeline.Profile{UserID: userID, Name: strings.ToLower(userID), RealName: "User " + userID,
		TimeZone: "UTC", TZLabel: "Coordinated Universal Time", IsBot: isBot}, nil
}

// ConversationInfo makes up a conversation from its id and transcript: a
// D… is a DM with the first person who wrote in it, a G… a private
// channel, else a public one named after its id.
func (m *Chat) ConversationInfo(ctx context.Context, channelID string) (pipeline.ConversationInfo, error) {
	if err := ctx.Err(); err != nil {
		return pipeline.ConversationInfo{}, fmt.Errorf("conversations.info: %w", err)
	}
	members, err := m.members(channelID)
	if err != nil {
		return pipeline.ConversationInfo{}, fmt.Errorf("conversations.info: %w", err)
	}
	info := pipeline.ConversationInfo{ID: channelID, Members: len(members)}
	switch {
	case strings.HasPrefix(channelID, "D"):
		info.IsIM = true
		if len(members) > 1 {
			info.User = members[1]
		}
	default:
		info.Name = strings.ToLower(channelID)
		info.IsPrivate = strings.HasPrefix(channelID, "G")
	}
	return info, nil
}

// ConversationMembers lists the bot and everyone who wrote in channelID,
// in order of first appearance.
func (m *Chat) ConversationMembers(ctx context.Context, channelID, cursor string, limit int) ([]string, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", fmt.Errorf("conversations.members: %w", err)
	}
	members, err := m.members(channelID)
	if err != nil {
		return nil, "", fmt.Errorf("conversations.members: %w", err)
	}
	return page("conversations.members", members, cursor, limit)
}

func (m *Chat) members(channelID string) ([]string, error) {
	if channelID == "" || !strings.ContainsAny(channelID[:1], "CDG") {
		return nil, errors.New("channel_not_found")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.init()
	out := []string{m.bot().UserID}
	for _, e := range m.log {
		if e.ChannelID == channelID && e.Op == OpInbound && e.UserID != "" && !slices.Contains(out, e.UserID) {
			out = append(out, e.UserID)
		}
	}
	return out, nil
}

// React adds the bot's reaction name to the message at ts in channelID,
// recorded in the transcript; a reaction already there records nothing.
func (m *Chat) React(ctx context.Context, channelID, ts, name string) error {
	return m.reaction(ctx, m.bot(), "reactions.add", channelID, ts, name, true)
}

// Unreact removes the bot's reaction name from the message at ts; one
// that is not there records nothing.
func (m *Chat) Unreact(ctx context.Context, channelID, ts, name string) error {
	return m.reaction(ctx, m.bot(), "reactions.remove", channelID, ts, name, false)
}

func (m *Chat) reaction(ctx context.Context, who pipeline.Identity, method, channelID, ts, name string, add bool) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	if name == "" || strings.ContainsAny(name, ": ") {
		return errors.New(method + ": invalid_name")
	}
	m.mu.Lock()
	m.init()
	msgs := m.conversationLocked(channelID)
	i := slices.IndexFunc(msgs, func(msg message) bool { return msg.p.TS == ts })
	if i < 0 {
		m.mu.Unlock()
		return errors.New(method + ": message_not_found")
	}
	target := msgs[i]
	key := channelID + "/" + ts
	if who.UserID != m.bot().UserID {
		key += "/" + who.UserID // each app's reactions are its own
	}
	has := slices.Contains(m.reactions[key], name)
	if has == add {
		m.mu.Unlock()
		return nil
	}
	sign := "-"
	if add {
		sign = "+"
		m.reactions[key] = append(m.reactions[key], name)
	} else {
		m.reactions[key] = slices.DeleteFunc(m.reactions[key], func(n string) bool { return n == name })
	}
	m.commitAndUnlock(Entry{Op: OpReaction, ChannelID: channelID, ThreadTS: cmp.Or(target.p.ThreadTS, target.p.TS), TS: ts,
		UserID: who.UserID, Text: sign + name})
	return nil
}

// Reactions returns the bot's reactions on the message at ts in channelID.
func (m *Chat) Reactions(channelID, ts string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.reactions[channelID+"/"+ts])
}
