package pipeline

import (
	"context"
	"errors"
	"fmt"
)

// When the bot is engaged in a thread that holds messages it has not seen
// (a mention in a thread it was never part of, or one that engages it
// again after someone else was asked), the turn's input carries them
// before the new message (interfaces.md, "Eyes"). The engage stage learns
// where they begin (Engagements.Engage, Event.Unseen); ThreadContext reads
// them back from the thread, once, and the agent's turn stores them in the
// session with the message, then marks them seen.

// DefaultContextMessages is how many of a thread's unseen messages a turn
// carries at most (AGENT_CONTEXT_MESSAGES): the newest are kept.
const DefaultContextMessages = 50

// Earlier is one message of the thread the bot had not seen, as the
// turn's input carries it.
type Earlier struct {
	// UserID is the author: a person's user id, or a bot's (its bot id
	// when the post has no user).
	UserID string
	// Role is the author's envelope role (EnvelopeRole, EnvelopeBot); ""
	// for the bot's own post, which the model reads as its own words.
	Role  string
	Own   bool
	Text  string   // redacted
	Files []string // the names of its files, redacted
}

// Unseen is what a turn carries of its thread before the new message.
type Unseen struct {
	Messages []Earlier // oldest first
	// Omitted counts the older unseen messages left out by the cap.
	Omitted int
}

// People says who a thread's authors are to the persona.
// *persona.Persona implements it.
type People interface {
	RoleOf(userID string) Role
	IsBlocked(userID string) bool
}

// UnseenMarks clears a thread's unseen mark once its messages are in the
// session (the store implements it).
type UnseenMarks interface {
	// MarkSeen clears the thread's mark if it is still from ("" does
	// nothing): a mark set again meanwhile stays.
	MarkSeen(ctx context.Context, threadKey, from string) error
}

// ThreadContext reads back what the bot has not seen of a thread and
// marks it seen once the turn has stored it.
type ThreadContext struct {
	Reader ThreadReader
	People People
	Marks  UnseenMarks
	// Redact scrubs secrets from the messages' words and file names: the
	// redaction stage never saw them.
	Redact func(string) string
	// Self is the bot's identity: its own posts are its words.
	Self func() Identity
	// Max caps the messages carried (0: DefaultContextMessages).
	Max int
	// Unheard reports whether a person's words never reach the model
	// (blocked, or muted now: /ignore): theirs are left out like a
	// blocked person's, and not counted. nil: People.IsBlocked alone.
	Unheard func(ctx context.Context, userID string) (bool, error)
	// Peer reports whether a bot's user id is a peer's (## Peers): its
	// posts are carried with the envelope role peer. nil: none is.
	Peer func(userID string) bool
}

// Paging of a thread's read: pages of contextPage messages, at most
// contextPages of them. 200 is the page size the platform advises;
// 10,000 messages is past any thread a person reads, and bounds the cost
// of one called into a runaway one.
const (
	contextPage  = 200
	contextPages = 50
)

// Unseen reads the messages of ev's thread from ev.Unseen (included) up to
// ev (excluded), oldest first: the newest Max of them, with the count of
// the older ones left out. It skips what the drop stage would never let reach
// the model from a person (blocked and muted people) and what is not a
// message (joins, edits, deletions). An event with no Unseen mark reads nothing.
func (c *ThreadContext) Unseen(ctx context.Context, ev *Event) (Unseen, error) {
	if ev.Unseen == "" {
		return Unseen{}, nil
	}
	if c.Reader == nil || c.People == nil || c.Self == nil {
		return Unseen{}, errors.New("thread context: no reader, people or identity")
	}
	limit := c.Max
	if limit <= 0 {
		limit = DefaultContextMessages
	}
	self := c.Self()
	q := RepliesQuery{ChannelID: ev.ChannelID, RootTS: ev.RootTS(), Oldest: ev.Unseen, Latest: ev.TS, Limit: contextPage}
	// ring keeps the newest limit messages; total counts them all.
	ring := make([]Earlier, 0, min(limit, contextPage))
	total := 0
	unheard := map[string]bool{}
	for page := 0; ; page++ {
		if page == contextPages {
			return Unseen{}, fmt.Errorf("thread context: more than %d messages in %s", contextPage*contextPages, ev.ThreadKey())
		}
		p, err := c.Reader.ThreadReplies(ctx, q)
		if err != nil {
			return Unseen{}, fmt.Errorf("thread context: %w", err)
		}
		for _, m := range p.Messages {
			if CompareTS(m.TS, ev.Unseen) < 0 || CompareTS(m.TS, ev.TS) >= 0 {
				continue // the root, sent whatever the bounds; the new message
			}
			e, ok := c.earlier(m, self)
			if !ok {
				continue
			}
			if e.Role != EnvelopeBot && e.Role != string(RolePeer) && !e.Own && c.Unheard != nil {
				out, known := unheard[e.UserID]
				if !known {
					if out, err = c.Unheard(ctx, e.UserID); err != nil {
						return Unseen{}, fmt.Errorf("thread context: %w", err)
					}
					unheard[e.UserID] = out
				}
				if out {
					continue // a muted person's words never reach the model
				}
			}
			if len(ring) < limit {
				ring = append(ring, e)
			} else {
				ring[total%limit] = e
			}
			total++
		}
		if p.Next == "" {
			break
		}
		q.Cursor = p.Next
	}
	u := Unseen{Omitted: total - len(ring), Messages: ring}
	if k := total % limit; total > limit && k > 0 { // the ring wrapped: its oldest is at k
		u.Messages = append(append(make([]Earlier, 0, len(ring)), ring[k:]...), ring[:k]...)
	}
	return u, nil
}

// earlier is m as the turn carries it; ok is false for what it skips.
func (c *ThreadContext) earlier(m PostedMessage, self Identity) (Earlier, bool) {
	if !userSubtypes[m.Subtype] && m.Subtype != "bot_message" {
		return Earlier{}, false // joins, topic changes, edits and deletions are not words
	}
	e := Earlier{UserID: m.UserID}
	switch {
	case m.UserID != "" && m.UserID == self.UserID, m.BotID != "" && m.BotID == self.BotID:
		e.Own, e.UserID = true, self.UserID
	case (m.BotID != "" || m.Subtype == "bot_message") && m.UserID != "" && c.Peer != nil && c.Peer(m.UserID):
		e.Role = string(RolePeer)
	case m.BotID != "" || m.Subtype == "bot_message":
		e.Role = EnvelopeBot
		if e.UserID == "" {
			e.UserID = m.BotID
		}
	case m.UserID == "" || c.People.IsBlocked(m.UserID):
		return Earlier{}, false // a blocked person's words never reach the model
	default:
		e.Role = EnvelopeRole(string(c.People.RoleOf(m.UserID)))
	}
	e.Text = c.redact(m.Text)
	for _, f := range m.Files {
		e.Files = append(e.Files, c.redact(f.Name))
	}
	if e.Text == "" && len(e.Files) == 0 {
		return Earlier{}, false
	}
	return e, true
}

func (c *ThreadContext) redact(s string) string {
	if c.Redact == nil {
		return s
	}
	return c.Redact(s)
}

// Seen marks ev's unseen messages seen: the turn has stored them in the
// session. It does nothing for an event without an Unseen mark.
func (c *ThreadContext) Seen(ctx context.Context, ev *Event) error {
	if ev.Unseen == "" || c.Marks == nil {
		return nil
	}
	if err := c.Marks.MarkSeen(ctx, ev.ThreadKey(), ev.Unseen); err != nil {
		return fmt.Errorf("thread context: mark seen: %w", err)
	}
	return nil
}
