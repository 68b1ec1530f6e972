package memory

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Store is the persistence of memories (*store.Store, which imports this
// package's types and calls Check; this package never imports the store).
type Store interface {
	// AddMemory stores m (an error if Check refuses it) and returns it as
	// stored: its id (NewID when empty) and its time.
	AddMemory(ctx context.Context, m Memory) (Memory, error)
	// Memory returns the memory id, or an error matching ErrNotFound.
	Memory(ctx context.Context, id string) (Memory, error)
	// Memories returns the memories of channel and the persona-wide ones,
	// oldest first.
	Memories(ctx context.Context, channel string) ([]Memory, error)
	// ForgetMemory deletes the memory id, or returns an error matching
	// ErrNotFound.
	ForgetMemory(ctx context.Context, id string) error
	// Recall searches what q.Channel may see, best first.
	Recall(ctx context.Context, q RecallQuery) ([]Recalled, error)
}

// Refusal texts; the persona-wide one is pinned (interfaces.md, "Memory").
const (
	MsgPersonaRefused = "only the manager can make a persona-wide memory"
	msgNoCard         = "not remembered: a persona-wide memory needs the manager's approval card, and none can be asked here"
	msgForgetRefused  = "only the manager, the backup manager or its author can forget memory %s"
	msgSecret         = "not remembered: the text holds a credential or matches a redaction pattern"
	msgTooLong        = "not remembered: a memory is at most %d characters (this is %d)"
	msgEmpty          = "not remembered: the text is empty"
	msgBadScope       = "scope must be conversation or persona"
	msgNoMemory       = "no memory %s"
)

// Refusal is a request the rules refuse: its text is said as it is (a
// tool's is_error result, a command's answer).
type Refusal string

func (r Refusal) Error() string { return string(r) }

// Who asks: the turn's sender and their role.
type Who struct {
	UserID string
	Role   pipeline.Role
}

// managing is the manager or the backup manager (pipeline.Access.Managing).
func (w Who) managing() bool {
	return pipeline.Access{UserID: w.UserID, Role: w.Role}.Managing()
}

// Cards asks the manager's decision on the approval card a persona-wide
// memory waits on (CardRequest), and waits for it (*approval.Gate).
type Cards interface {
	AskMemory(ctx context.Context, r CardRequest) (CardOutcome, error)
}

// CardRequest is the card a persona-wide memory the model wants waits on:
// of category memory (persona.CategoryMemory), showing Summary, the
// memory's whole text after CardPrefix.
type CardRequest struct {
	ThreadKey   string
	ChannelID   string
	ThreadTS    string
	RequestedBy string
	Summary     string // already checked against the redactor
}

// CardOutcome is how such a card ended.
type CardOutcome struct {
	Approved bool
	By       string // who decided; "" for a timeout
	ID       string // the approval's id
	State    string // the approval's state, for the log
	Text     string // the outcome as the card and the model read it
}

// Memories applies the rules of memory over the store.
type Memories struct {
	Store Store
	// Cards asks the card a persona-wide memory the model wants needs
	// (CardPrefix); nil refuses such memories.
	Cards Cards
	// RoleOf is what a person is to the persona (*persona.Persona): the
	// role the envelope of their remembered words states, and who may
	// have decided a card. nil: everyone is a member.
	RoleOf func(userID string) pipeline.Role
	// Redact is the service's redactor: a text it would change holds a
	// credential or matches a redaction pattern, and is refused.
	Redact func(string) string
	// NewID, when set, makes the new memories' ids (the simulator's: the
	// same at every run, so that a scenario can name one); nil: the
	// store's (NewID).
	NewID func() string
	Log   *slog.Logger
}

// Remember stores text as a memory of the conversation channel (thread
// threadTS), or of the persona (scope persona: the manager and backup
// manager only, as their own decision: /remember --persona). A refusal
// is a Refusal.
func (m *Memories) Remember(ctx context.Context, who Who, channel, threadTS, text, scope string) (Memory, error) {
	text, scope, err := m.check(ctx, who, channel, text, scope)
	if err != nil {
		return Memory{}, err
	}
	return m.add(ctx, who, channel, threadTS, text, scope)
}

// check applies the rules every memory passes before it is stored or
// asked for: a known scope, a text neither empty nor too long nor holding
// a secret, and persona scope only for the managers. It returns the text
// trimmed and the scope spelled out.
func (m *Memories) check(ctx context.Context, who Who, channel, text, scope string) (string, string, error) {
	text = strings.TrimSpace(text)
	if scope == "" {
		scope = ScopeConversation
	}
	switch err := Check(Memory{Text: text, Scope: scope, Channel: channel}); {
	case errors.Is(err, ErrBadScope):
		return "", "", Refusal(msgBadScope)
	case errors.Is(err, ErrEmpty):
		return "", "", Refusal(msgEmpty)
	case errors.Is(err, ErrTooLong):
		return "", "", Refusal(fmt.Sprintf(msgTooLong, MaxLen, len([]rune(text))))
	case err != nil:
		return "", "", err
	}
	if scope == ScopePersona && !who.managing() {
		m.Log.WarnContext(ctx, "memory refused", "why", "persona scope", "user_id", who.UserID, "channel", channel)
		return "", "", Refusal(MsgPersonaRefused)
	}
	if m.Redact != nil && m.Redact(text) != text {
		m.Log.WarnContext(ctx, "memory refused", "why", "secret", "user_id", who.UserID, "channel", channel)
		return "", "", Refusal(msgSecret)
	}
	return text, scope, nil
}

// add stores a memory check passed.
func (m *Memories) add(ctx context.Context, who Who, channel, threadTS, text, scope string) (Memory, error) {
	mem := Memory{Text: text, Author: who.UserID, Channel: channel, ThreadTS: threadTS, Scope: scope}
	if m.NewID != nil {
		mem.ID = m.NewID()
	}
	return m.Store.AddMemory(ctx, mem)
}

// Forget deletes the memory id, if who may: the manager, the backup
// manager or its author. A memory another conversation keeps is "no
// memory" from here unless who manages: its existence is not told.
func (m *Memories) Forget(ctx context.Context, who Who, channel, id string) error {
	id = strings.TrimSpace(id)
	if !ValidID(id) {
		return Refusal(fmt.Sprintf(msgNoMemory, oneWord(id)))
	}
	mem, err := m.Store.Memory(ctx, id)
	if errors.Is(err, ErrNotFound) || err == nil && !visible(mem, channel) && !who.managing() {
		return Refusal(fmt.Sprintf(msgNoMemory, id))
	}
	if err != nil {
		return err
	}
	if !who.managing() && who.UserID != mem.Author {
		m.Log.WarnContext(ctx, "memory forget refused", "memory", id, "user_id", who.UserID)
		return Refusal(fmt.Sprintf(msgForgetRefused, id))
	}
	if err := m.Store.ForgetMemory(ctx, id); err != nil {
		if errors.Is(err, ErrNotFound) {
			return Refusal(fmt.Sprintf(msgNoMemory, id))
		}
		return err
	}
	m.Log.InfoContext(ctx, "memory forgotten", "memory", id, "user_id", who.UserID)
	return nil
}

// visible reports whether mem may be shown in channel.
func visible(mem Memory, channel string) bool {
	return mem.Scope == ScopePersona || mem.Channel == channel
}

// Recall searches what channel may see for query (Store.Recall), but the
// messages of the asking thread (threadTS).
func (m *Memories) Recall(ctx context.Context, channel, threadTS, query string, limit int) ([]Recalled, error) {
	return m.Store.Recall(ctx, RecallQuery{Text: query, Channel: channel, Thread: threadTS, Limit: limit})
}

// oneWord is an id as said back: its first 20 characters of one word.
func oneWord(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), " ")
	if len(s) > 20 {
		s = s[:20] + "…"
	}
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == '`' || r == '<' || r == '>' || r == '@' {
			return -1
		}
		return r
	}, s)
}

// firstTurnFound and firstTurnPersona cap what a first turn carries.
const (
	firstTurnFound   = 3
	firstTurnPersona = 10
)

// FirstTurn is what a thread's first turn in channel carries of memory
// (FirstTurnText): the memories most relevant to its first message and
// the newest persona-wide ones, each whole, in its author's envelope; nil
// when there are none. Both are drawn from what /memory lists in channel
// (List): the model is given nothing a person there is not shown. A
// failure is logged and carries nothing: memory helps a turn, never stops
// one.
func (m *Memories) FirstTurn(ctx context.Context, channel, text string) []string {
	// The memories this conversation may see first (one indexed read):
	// with none, as in most threads of a new persona, nothing is searched.
	all, err := m.Store.Memories(ctx, channel)
	if err != nil {
		m.Log.WarnContext(ctx, "memories for a first turn", "channel", channel, "err", err)
		return nil
	}
	if len(all) == 0 {
		return nil
	}
	rs, err := m.Store.Recall(ctx, RecallQuery{Text: text, Channel: channel, Limit: firstTurnFound, Kind: KindMemory})
	if err != nil {
		m.Log.WarnContext(ctx, "memories for a first turn", "channel", channel, "err", err)
		return nil
	}
	byID := make(map[string]Memory, len(all))
	for _, mem := range all {
		byID[mem.ID] = mem
	}
	var found []Memory
	for _, r := range rs {
		// Only what the list holds: a memory forgotten between the two
		// reads is not carried.
		if mem, ok := byID[r.ID]; ok && r.Kind == KindMemory {
			found = append(found, mem)
		}
	}
	var persona []Memory
	for i := len(all) - 1; i >= 0 && len(persona) < firstTurnPersona; i-- {
		if all[i].Scope == ScopePersona {
			persona = append(persona, all[i])
		}
	}
	return FirstTurnText(found, persona, m.roleOf)
}

// List is /memory's answer in channel (ListText): this conversation's
// memories and the persona-wide ones, the same read FirstTurn draws from
// and the same rule recall searches by — a person there is shown exactly
// what the model there may be given, and nothing of another conversation.
// The persona-wide ones are all a manager's decision (Remember,
// rememberAsked): meant for every conversation.
func (m *Memories) List(ctx context.Context, channel string) (string, error) {
	ms, err := m.Store.Memories(ctx, channel)
	if err != nil {
		return "", err
	}
	return ListText(ms), nil
}

// RememberText is /remember's answer: text remembered in channel (thread
// threadTS), everywhere when persona — who's own decision, so the
// managers' alone (Remember) — or the refusal.
func (m *Memories) RememberText(ctx context.Context, who Who, channel, threadTS, text string, persona bool) (string, error) {
	scope, where := ScopeConversation, "in this conversation"
	if persona {
		scope, where = ScopePersona, "everywhere"
	}
	mem, err := m.Remember(ctx, who, channel, threadTS, text, scope)
	var r Refusal
	switch {
	case errors.As(err, &r):
		return string(r), nil
	case err != nil:
		return "", err
	}
	return fmt.Sprintf("remembered as %s (recalled %s)", mem.ID, where), nil
}

// ForgetText is /forget's answer: done, or the refusal.
func (m *Memories) ForgetText(ctx context.Context, who Who, channel, id string) (string, error) {
	err := m.Forget(ctx, who, channel, id)
	var r Refusal
	switch {
	case errors.As(err, &r):
		return string(r), nil
	case err != nil:
		return "", err
	}
	return "forgot memory " + strings.TrimSpace(id), nil
}
