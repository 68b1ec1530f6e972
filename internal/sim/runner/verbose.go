package runner

import (
	"cmp"
	"fmt"
	"io"
	"strings"

	"github.com/persona-runtime/agent/internal/sim/golden"
	"github.com/persona-runtime/agent/internal/sim/platform"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// dump writes the platform's transcript, one entry a line, and the
// restarts where they came (sim run --verbose).
func (s *Sim) dump(w io.Writer) {
	if w == nil {
		return
	}
	var plain []golden.ToolCall
	for _, c := range s.tools.list() {
		if c.Plain {
			plain = append(plain, c)
		}
	}
	for i, m := range s.chat.Messages() {
		for len(plain) > 0 && plain[0].After <= i {
			fmt.Fprintln(w, "    "+plain[0].Line)
			plain = plain[1:]
		}
		fmt.Fprintln(w, "    "+entryLine(m))
	}
	for _, c := range plain {
		fmt.Fprintln(w, "    "+c.Line)
	}
}

// entryLine renders one transcript entry for a person.
func entryLine(m platform.Entry) string {
	where := m.ChannelID
	if m.ThreadTS != "" {
		where += "/" + m.ThreadTS
	}
	switch m.Op {
	case platform.OpInbound:
		if m.Action != nil {
			return fmt.Sprintf("%s <@%s> clicked %s", where, m.UserID, m.Action.ActionID)
		}
		if m.Kind == pipeline.KindStop {
			return fmt.Sprintf("%s <@%s> clicked stop", where, m.UserID)
		}
		return fmt.Sprintf("%s <@%s>: %s", where, m.UserID, m.Text)
	case platform.OpPost, platform.OpUpdate:
		verb := "bot"
		if m.Op == platform.OpUpdate {
			verb = "bot (edited)"
		}
		if m.Card != nil {
			state := "actions: " + strings.Join(m.Card.Actions, ", ")
			if len(m.Card.Actions) == 0 {
				state = m.Card.Outcome
			}
			return fmt.Sprintf("%s %s: [%s card · %s] %s (%s)", where, verb, m.Card.Kind, m.Card.Category, m.Card.Body(), state)
		}
		return fmt.Sprintf("%s %s: %s", where, verb, m.Text)
	case platform.OpEphemeral:
		return fmt.Sprintf("%s bot (only <@%s> sees): %s", where, m.To, m.Text)
	case platform.OpUpload:
		name := ""
		if len(m.Files) > 0 {
			name = m.Files[0].Name
		}
		return fmt.Sprintf("%s bot uploaded %s: %s", where, name, m.Text)
	case platform.OpStatus:
		return fmt.Sprintf("%s status: %s", where, cmp.Or(m.Text, "(cleared)"))
	case platform.OpReaction:
		return fmt.Sprintf("%s bot reaction %s on %s", where, m.Text, m.TS)
	case platform.OpPrompts:
		return fmt.Sprintf("%s suggested prompts: %s", where, strings.Join(m.Prompts, " | "))
	}
	return fmt.Sprintf("%s %s: %s", where, m.Op, m.Text)
}
