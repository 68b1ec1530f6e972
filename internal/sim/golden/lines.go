package golden

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/persona-runtime/agent/internal/sim"
	"github.com/persona-runtime/agent/internal/sim/platform"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// who is a person as "role <@U…>".
func who(world sim.World, bot, user string) string {
	for _, role := range sim.Roles {
		if u, ok := world.RoleUser(role); ok && u == user {
			return role + " <@" + user + ">"
		}
	}
	if user == bot {
		return "the bot <@" + user + ">"
	}
	return "<@" + user + ">"
}

// layerOf is the trust layer of a channel in world.
func layerOf(world sim.World, channel string) string {
	switch {
	case strings.HasPrefix(channel, "D"):
		return "dm"
	case slices.ContainsFunc(world.Trusted, func(c string) bool { return strings.Contains(c, channel) }):
		return "trusted"
	case slices.ContainsFunc(world.Allowed, func(c string) bool { return strings.Contains(c, channel) }):
		return "allowed"
	}
	return "restricted"
}

func inboundLine(n *renamer, world sim.World, bot string, m platform.Entry, ev Event) string {
	if m.Kind == pipeline.KindHome && m.ChannelID == "" { // the Home tab
		if m.Action != nil {
			return fmt.Sprintf("> %s clicks %s %s in their Home tab", who(world, bot, m.UserID), m.Action.ActionID, m.Action.Value)
		}
		return fmt.Sprintf("> %s opens the Home tab", who(world, bot, m.UserID))
	}
	root := m.ThreadTS
	if root == "" {
		root = m.TS
	}
	t := n.thread(root)
	author := who(world, bot, m.UserID)
	if m.BotID != "" {
		author = "app <@" + m.UserID + ">" // another bot
	}
	where := fmt.Sprintf("%s [%s] · %s", m.ChannelID, layerOf(world, m.ChannelID), author)
	switch {
	case m.Action != nil:
		return fmt.Sprintf("> %s · %s clicks %s on %s (card %s)", t, where, m.Action.ActionID, n.msg(m.Action.MessageTS),
			n.name(n.cards, "ap", m.Action.Value))
	case m.Kind == pipeline.KindCommand:
		return fmt.Sprintf("> %s · %s: %s", t, where, m.Text)
	case m.Kind == pipeline.KindStop:
		return fmt.Sprintf("> %s · %s clicks the session's stop button", t, where)
	case ev.Type == "app_mention":
		return fmt.Sprintf("> %s %s · the same message again, as app_mention", t, n.msg(m.TS))
	}
	line := fmt.Sprintf("> %s %s · %s: %s", t, n.msg(m.TS), where, indentText(m.Text))
	for _, f := range m.Files {
		line += fmt.Sprintf("\n  + file %s (%s, %d bytes)", f.Name, cmp.Or(f.MimeType, "no type"), len(f.Content))
	}
	return line
}

func outboundLine(n *renamer, m platform.Entry) string {
	thread := n.thread(m.ThreadTS)
	switch m.Op {
	case platform.OpPost, platform.OpUpdate:
		if c := m.Card; c != nil {
			id := n.name(n.cards, "ap", c.ID)
			if len(c.Actions) == 0 {
				return fmt.Sprintf("< %s %s card %s resolved: %s", thread, n.msg(m.TS), id, c.Outcome)
			}
			line := fmt.Sprintf("< %s %s card %s · %s · %s · [%s]: %s", thread, n.msg(m.TS), id, c.Kind, c.Category,
				strings.Join(c.Actions, ", "), indentText(c.Body()))
			if c.Details != "" {
				line += "\n  | " + indentText(c.Details)
			}
			return line
		}
		verb := "post"
		if m.Op == platform.OpUpdate {
			verb = "edit"
		}
		line := fmt.Sprintf("< %s %s %s: %s", thread, n.msg(m.TS), verb, indentText(m.Text))
		if m.Feedback {
			line += "\n  [feedback buttons: good | bad]"
		}
		return line
	case platform.OpEphemeral:
		return fmt.Sprintf("< %s only <@%s> sees: %s", thread, m.To, indentText(m.Text))
	case platform.OpStatus:
		return fmt.Sprintf("< %s status: %s", thread, cmp.Or(m.Text, "(cleared)"))
	case platform.OpReaction:
		return fmt.Sprintf("< %s %s reaction %s", thread, n.msg(m.TS), m.Text)
	case platform.OpSession:
		if m.Title != "" {
			return fmt.Sprintf("< %s session: %s, titled %q", thread, m.Text, m.Title)
		}
		return fmt.Sprintf("< %s session: %s", thread, m.Text)
	case platform.OpPrompts:
		quoted := make([]string, len(m.Prompts))
		for i, p := range m.Prompts {
			quoted[i] = fmt.Sprintf("%q", p)
		}
		return fmt.Sprintf("< %s suggested prompts: %s", m.ChannelID, strings.Join(quoted, ", "))
	case platform.OpHome:
		return homeLines(fmt.Sprintf("< home of <@%s>", m.To), m.Home)
	case platform.OpTasks:
		return tasksLine(fmt.Sprintf("< %s %s tasks %s", thread, n.msg(m.TS), m.Text), m.Tasks)
	case platform.OpUpload:
		line := fmt.Sprintf("< %s %s upload", thread, n.msg(m.TS))
		for _, f := range m.Files {
			line += fmt.Sprintf(" %s %q (%d bytes)", f.Name, f.Title, len(f.Content))
		}
		if m.Text != "" {
			line += ": " + indentText(m.Text)
		}
		return line
	}
	return fmt.Sprintf("< %s %s: %s", thread, m.Op, indentText(m.Text))
}

// indentText keeps a multi-line text readable: its later lines go on their
// own lines, marked "  | ".
func indentText(s string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  | ")
}

// tasksLine is a task message's update: a line per task, its status, its
// title, then its detail and output.
func tasksLine(head string, tasks []pipeline.Task) string {
	var b strings.Builder
	b.WriteString(head)
	for _, t := range tasks {
		fmt.Fprintf(&b, "\n  %s [%s] %s", t.ID, t.Status, t.Title)
		if t.Details != "" {
			b.WriteString(" — " + indentText(t.Details))
		}
		if t.Output != "" {
			b.WriteString(" → " + indentText(t.Output))
		}
	}
	return b.String()
}

// homeLines is a published Home view in text: its notice, each section's
// title and lines (a button as [Label]).
func homeLines(head string, v *pipeline.HomeView) string {
	var b strings.Builder
	b.WriteString(head)
	if v == nil {
		return b.String()
	}
	if v.Notice != "" {
		b.WriteString("\n  notice: " + indentText(v.Notice))
	}
	for _, s := range v.Sections {
		b.WriteString("\n  ## " + s.Title)
		for _, l := range s.Lines {
			b.WriteString("\n  - " + indentText(l.Text))
			if l.Button != nil {
				fmt.Fprintf(&b, " [%s: %s %s]", l.Button.Label, l.Button.ActionID, l.Button.Value)
			}
		}
		if len(s.Lines) == 0 && s.Empty != "" {
			b.WriteString("\n  (" + s.Empty + ")")
		}
		if s.More > 0 {
			fmt.Fprintf(&b, "\n  … and %d more", s.More)
		}
	}
	return b.String()
}
