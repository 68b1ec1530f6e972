package platform

import (
	"context"
	"slices"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Op says what a transcript entry records.
type Op string

// The transcript entries.
const (
	OpInbound   Op = "inbound"   // an event injected by the simulator
	OpPost      Op = "post"      // chat.postMessage
	OpUpdate    Op = "update"    // chat.update
	OpEphemeral Op = "ephemeral" // chat.postEphemeral
	OpUpload    Op = "upload"    // a file upload
	OpStatus    Op = "status"    // assistant.threads.setStatus ("" clears)
	OpReaction  Op = "reaction"  // reactions.add ("+name") or .remove ("-name")
	OpSession   Op = "session"   // agents.sessions.setStatus (Text: the status)
	OpPrompts   Op = "prompts"   // assistant.threads.setSuggestedPrompts
	OpTasks     Op = "tasks"     // a streamed message's task updates (Text: start, append or stop)
	OpHome      Op = "home"      // views.publish: a person's Home tab (To: the person)
)

// Entry is one transcript entry.
type Entry struct {
	// Seq is the entry's position in the transcript, from 1.
	Seq int
	Op  Op
	// Kind is the inbound event's kind (message, action, command); 0 for
	// the bot's output.
	Kind      pipeline.Kind
	ChannelID string
	ThreadTS  string
	// TS is the message's own ts (post, upload, inbound message), the ts of
	// the message edited (update), reacted to (reaction) or of the card
	// clicked (action); "" for ephemerals, statuses and commands.
	TS string
	// UserID is the author: the person for inbound entries, the bot's user
	// id for everything else.
	UserID string
	// BotID is set on an inbound message another bot (an app) posted.
	BotID string
	// To is the only person who sees an ephemeral.
	To string
	// Text is the message text, the upload's comment, the status line, a
	// session's status, a command's "/name args", or a reaction ("+eyes"
	// added, "-eyes" removed).
	Text string
	Card *pipeline.Card // a card posted or updated
	// Feedback is set on a post or edit that carries the feedback buttons.
	Feedback bool
	Action   *pipeline.Action // an inbound click
	Files    []File           // an upload's file, an inbound message's attachments
	// Title is the title a session update creates its session with.
	Title string
	// Prompts are the suggested prompts offered.
	Prompts []string
	// Tasks are the task updates of a task message (OpTasks).
	Tasks []pipeline.Task
	// Home is the view published (OpHome).
	Home *pipeline.HomeView
}

// File is a file in the transcript.
type File struct {
	ID, Name, Title, MimeType, URL string
	Content                        []byte
}

// Card is the latest state of a message carrying a card.
type Card struct {
	TS, ChannelID, ThreadTS string
	Card                    pipeline.Card
	// Resolved is true once the card offers no action (len(Card.Actions) == 0).
	Resolved bool
}

// Offers reports whether the card is unresolved and has a button for action.
func (c Card) Offers(action string) bool {
	return !c.Resolved && slices.Contains(c.Card.Actions, action)
}

// Snapshot is the transcript at one moment.
type Snapshot struct {
	Messages []Entry
	Cards    []Card
	// Delivered counts the injected events Run has handed to deliver;
	// Queued those still waiting for it.
	Delivered, Queued int
	// Running is true while Run is running.
	Running bool
}

// Messages returns the transcript: every entry, in order, updates included.
func (m *Chat) Messages() []Entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.messagesLocked()
}

// Len is the number of the transcript's entries (what len(Messages())
// is, without copying them).
func (m *Chat) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.log)
}

// Message returns the latest state of the post or upload at ts.
func (m *Chat) Message(ts string) (Entry, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.state[ts]
	if !ok {
		return Entry{}, false
	}
	return cloneEntry(*cur), true
}

// Cards returns the latest state of every message that carries a card, in
// the order they were posted.
func (m *Chat) Cards() []Card {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cardsLocked()
}

// Snapshot returns the transcript, the cards and the delivery counts at
// one moment.
func (m *Chat) Snapshot() Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.snapshotLocked()
}

// Changed returns a channel closed at the next change: a transcript entry,
// a delivery, Run's start or end. Take it before reading, so that no change is
// missed between the read and the wait.
func (m *Chat) Changed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.init()
	return m.changed
}

// Wait returns nil as soon as cond holds on a snapshot, checking at once and
// after every change, or ctx's error when ctx is done first. cond runs
// without the Chat locked.
func (m *Chat) Wait(ctx context.Context, cond func(Snapshot) bool) error {
	for {
		m.mu.Lock()
		m.init()
		ch := m.changed
		snap := m.snapshotLocked()
		m.mu.Unlock()
		if cond(snap) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

func (m *Chat) messagesLocked() []Entry {
	out := make([]Entry, len(m.log))
	for i, e := range m.log {
		out[i] = cloneEntry(e)
	}
	return out
}

func (m *Chat) cardsLocked() []Card {
	var out []Card
	for _, ts := range m.order {
		cur := m.state[ts]
		if cur.Card == nil {
			continue
		}
		c := *cloneCard(cur.Card)
		out = append(out, Card{TS: ts, ChannelID: cur.ChannelID, ThreadTS: cur.ThreadTS, Card: c,
			Resolved: len(c.Actions) == 0})
	}
	return out
}

func (m *Chat) snapshotLocked() Snapshot {
	return Snapshot{Messages: m.messagesLocked(), Cards: m.cardsLocked(), Delivered: m.delivered, Queued: len(m.queue),
		Running: m.running}
}

func cloneCard(c *pipeline.Card) *pipeline.Card {
	if c == nil {
		return nil
	}
	cp := *c
	cp.Actions = slices.Clone(c.Actions)
	return &cp
}

func cloneEntry(e Entry) Entry {
	e.Card = cloneCard(e.Card)
	if e.Action != nil {
		a := *e.Action
		e.Action = &a
	}
	e.Files = slices.Clone(e.Files)
	e.Prompts = slices.Clone(e.Prompts)
	for i := range e.Files {
		e.Files[i].Content = slices.Clone(e.Files[i].Content)
	}
	return e
}
