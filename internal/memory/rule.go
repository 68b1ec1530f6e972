package memory

import (
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Scopes of a memory.
const (
	// ScopeConversation is recalled only in the channel or DM it came from.
	ScopeConversation = "conversation"
	// ScopePersona is recalled everywhere.
	ScopePersona = "persona"
)

// MaxLen is the longest memory text, in characters.
const MaxLen = 2000

// Memory is a short text a person asked the persona to keep across
// threads. The store keeps it (internal/store, memory.go) once Check
// passed.
type Memory struct {
	ID        string // "m" and 8 letters or digits; NewID when empty
	Text      string
	Author    string // the user who asked for it
	Channel   string // the conversation it came from
	ThreadTS  string // the thread it came from
	Scope     string // ScopeConversation or ScopePersona
	CreatedAt time.Time
}

// What Check finds wrong with a memory; the error it returns matches one.
var (
	ErrBadScope  = errors.New("invalid scope")
	ErrEmpty     = errors.New("empty text")
	ErrTooLong   = fmt.Errorf("text longer than %d characters", MaxLen)
	ErrNoChannel = errors.New("no channel")
)

// Check is the rule every memory passes before it is stored: a known
// scope, a text neither blank nor longer than MaxLen characters, and the
// conversation it came from. The store calls it on each memory it adds;
// Memories calls it before asking anything of anyone, to refuse in the
// person's words (Refusal).
func Check(m Memory) error {
	switch {
	case m.Scope != ScopeConversation && m.Scope != ScopePersona:
		return fmt.Errorf("%w %q", ErrBadScope, m.Scope)
	case strings.TrimSpace(m.Text) == "":
		return ErrEmpty
	case len([]rune(m.Text)) > MaxLen:
		return ErrTooLong
	case m.Channel == "":
		return ErrNoChannel
	}
	return nil
}

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewID returns a random memory id: "m" and 8 characters.
func NewID() string {
	var b [5]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return "m" + idEncoding.EncodeToString(b[:])
}

// ValidID reports whether id has NewID's shape.
func ValidID(id string) bool {
	if len(id) != 9 || id[0] != 'm' {
		return false
	}
	_, err := idEncoding.DecodeString(id[1:])
	return err == nil
}

// ErrNotFound is what Store's Memory and ForgetMemory return (matched by
// errors.Is) when there is no such memory.
var ErrNotFound = errors.New("not found")

// Kinds of what recall finds.
const (
	KindMemory  = "memory"
	KindMessage = "message"
)

// RecallQuery is what a recall looks for, and where (Store.Recall).
type RecallQuery struct {
	Text string
	// Channel is the conversation asking: only its own memories and
	// messages are searched, and the persona-wide memories. Required.
	Channel string
	// Limit caps the results; 0 means 5, at most 50.
	Limit int
	// Kind, when set, searches only memories or only messages.
	Kind string
	// Thread, when set, is the asking thread's ts: its own messages are
	// left out (the model has them already; recall is of past threads).
	Thread string
}

// Recalled is one thing a recall found: a memory or a stored message.
type Recalled struct {
	Kind     string // KindMemory or KindMessage
	ID       string // the memory's id; "" for a message
	Scope    string
	Channel  string // with ThreadTS, the thread's permalink
	ThreadTS string
	// TS is the message's own ts, with Channel its permalink; "" for a
	// memory, and for a message stored without one.
	TS      string
	Author  string // "" for the persona's own words
	At      time.Time
	Snippet string
	// Before and After are a message's adjacent turns in its thread
	// (at most AdjacentTurns each side, nearest last and first), so that
	// the answer is read with what surrounds it.
	Before, After []Turn
}

// Turn is one adjacent turn of a recalled message.
type Turn struct {
	TS      string
	Author  string // "" for the persona's own words
	At      time.Time
	Snippet string
}

// AdjacentTurns is how many turns each side of a recalled message come
// with it.
const AdjacentTurns = 1

// Note opens the runtime's line of one memory a first turn carries
// (FirstTurnText); the block after it is that memory's words, in its
// author's envelope: a memory, not a message of the thread, so the store
// does not index it as one (forgotten, it is not recalled as a message).
const Note = "[runtime] memory "
