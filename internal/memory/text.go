package memory

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// msgNone is /memory's answer when nothing is remembered here.
const msgNone = "No memories here."

// ListText is /memory's answer: this conversation's and the persona's
// memories, each with its id, oldest first.
func ListText(ms []Memory) string {
	if len(ms) == 0 {
		return msgNone
	}
	var b strings.Builder
	b.WriteString("Memories (`/forget <id>` removes one):")
	for _, m := range ms {
		fmt.Fprintf(&b, "\n• `%s` %s", m.ID, line(m))
	}
	return b.String()
}

// line is a memory in one line: scope, date, author, text.
func line(m Memory) string {
	scope := ""
	if m.Scope == ScopePersona {
		scope = "[persona] "
	}
	author := ""
	if m.Author != "" {
		author = " <@" + m.Author + ">"
	}
	return fmt.Sprintf("%s(%s%s) %s", scope, m.CreatedAt.Format("2006-01-02"), author, oneLine(m.Text))
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// RecallText is what the recall tool returns: each thing found with what
// it is, its date, its author and where it was said (the message and its
// thread, for links), then its words: a person's in their envelope
// (roleOf says their role), escaped as their messages are, the persona's
// own as they are; a message's adjacent turns follow it, indented, each
// the same way.
func RecallText(rs []Recalled, channel string, roleOf func(string) pipeline.Role) string {
	if len(rs) == 0 {
		return "Nothing remembered or said here matches."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d found, best first:", len(rs))
	for _, r := range rs {
		b.WriteString("\n- ")
		if r.Kind == KindMemory {
			fmt.Fprintf(&b, "memory %s", r.ID)
			if r.Scope == ScopePersona {
				b.WriteString(" (persona-wide)")
			}
		} else {
			b.WriteString("message")
		}
		// Where a persona-wide memory was made is its conversation's
		// business, not this one's.
		here := r.Channel == channel
		turnText(&b, r.At, r.Author, r.Kind == KindMessage, here, r.Channel, r.TS, r.ThreadTS, r.Snippet, roleOf)
		for _, t := range r.Before {
			b.WriteString("\n  before")
			turnText(&b, t.At, t.Author, true, here, r.Channel, t.TS, "", t.Snippet, roleOf)
		}
		for _, t := range r.After {
			b.WriteString("\n  after")
			turnText(&b, t.At, t.Author, true, here, r.Channel, t.TS, "", t.Snippet, roleOf)
		}
	}
	return b.String()
}

// turnText writes one thing found (or an adjacent turn): its date, its
// author, its message and thread when here, and its words.
func turnText(b *strings.Builder, at time.Time, author string, message, here bool, channel, ts, threadTS, words string, roleOf func(string) pipeline.Role) {
	fmt.Fprintf(b, ", %s", at.Format("2006-01-02"))
	if author != "" {
		fmt.Fprintf(b, ", by <@%s>", author)
	} else if message {
		b.WriteString(", by you")
	}
	if here && ts != "" {
		fmt.Fprintf(b, ", message %s/%s", channel, ts)
	}
	if here && threadTS != "" {
		fmt.Fprintf(b, ", thread %s/%s", channel, threadTS)
	}
	b.WriteString(": ")
	if author == "" && message {
		b.WriteString(oneLine(words))
		return
	}
	b.WriteString(pipeline.Envelope(author, string(roleOf(author)), oneLine(words)))
}

// firstTurnNote opens what a thread's first turn carries of memory. It
// and each memory's line (Note) are the runtime's; each
// memory's words are not: they follow their line in their own block, in
// the envelope of the person who had them remembered, escaped as that
// person's messages are, so that a remembered sentence can neither speak
// as the runtime nor close its envelope and open someone else's.
const firstTurnNote = "[runtime] Memories that may help (the recall tool finds more). " +
	"Each follows its line, in the envelope of the person who had it remembered."

// FirstTurnText is what a thread's first turn carries of memory, as text
// blocks: the memories found for its first message and the persona's,
// each its line (Note, id, date, scope) then its words in its
// author's envelope (roleOf says their role); nil when there are none.
// The runtime's blocks are kept out of the recall index, and so are the
// memories' words (Note).
func FirstTurnText(found, persona []Memory, roleOf func(string) pipeline.Role) []string {
	seen := map[string]bool{}
	var blocks []string
	add := func(m Memory) {
		if seen[m.ID] {
			return
		}
		seen[m.ID] = true
		scope := ""
		if m.Scope == ScopePersona {
			scope = ", persona-wide"
		}
		blocks = append(blocks, fmt.Sprintf("%s%s (%s%s):", Note, m.ID, m.CreatedAt.Format("2006-01-02"), scope),
			pipeline.Envelope(m.Author, string(roleOf(m.Author)), m.Text))
	}
	for _, m := range found {
		add(m)
	}
	for _, m := range persona {
		add(m)
	}
	if len(blocks) == 0 {
		return nil
	}
	return append([]string{firstTurnNote}, blocks...)
}

// Export writes ms as markdown into dir: one file per conversation
// (<channel>.md) and persona.md, each memory a bullet with its id, date,
// author and thread. It returns the files written.
func Export(dir string, ms []Memory) ([]string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("export memories: %w", err)
	}
	groups := map[string][]Memory{}
	var order []string
	for _, m := range ms {
		name := "persona"
		if m.Scope != ScopePersona {
			name = safeName(m.Channel)
		}
		if _, ok := groups[name]; !ok {
			order = append(order, name)
		}
		groups[name] = append(groups[name], m)
	}
	var files []string
	for _, name := range order {
		var b strings.Builder
		if name == "persona" {
			b.WriteString("# Persona-wide memories\n\n")
		} else {
			fmt.Fprintf(&b, "# Memories of conversation %s\n\n", groups[name][0].Channel)
		}
		for _, m := range groups[name] {
			fmt.Fprintf(&b, "- %s\n  <!-- id %s; %s; by %s; thread %s/%s -->\n", oneLine(m.Text), m.ID,
				m.CreatedAt.Format("2006-01-02 15:04 MST"), m.Author, m.Channel, m.ThreadTS)
		}
		path := filepath.Join(dir, name+".md")
		if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
			return files, fmt.Errorf("export memories: %w", err)
		}
		files = append(files, path)
	}
	return files, nil
}

// safeName is a channel id as a file name.
func safeName(channel string) string {
	name := strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
			return r
		}
		return '_'
	}, channel)
	if name == "" || name == "persona" {
		name = "_" + name
	}
	return name
}
