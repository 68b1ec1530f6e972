package repl

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/persona-runtime/agent/internal/sim/platform"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// entry renders one transcript entry.
func (m *model) entry(e platform.Entry) {
	at := m.where(e)
	text := strings.ReplaceAll(e.Text, "\n", "\n    ")
	switch e.Op {
	case platform.OpInbound:
		switch {
		case e.Action != nil:
			m.add(fmt.Sprintf("%s %s clicked %s%s", at, m.name(e.UserID), e.Action.ActionID, m.cardRef(e.TS)))
		case e.Kind == pipeline.KindStop:
			m.add(fmt.Sprintf("%s %s clicked stop", at, m.name(e.UserID)))
		case e.Kind == pipeline.KindMessage && m.shown[e.ChannelID+"/"+e.TS]:
			// the app_mention twin of a message shown
		default:
			m.shown[e.ChannelID+"/"+e.TS] = true
			m.add(fmt.Sprintf("%s %s: %s", at, m.name(e.UserID), text))
		}
	case platform.OpPost, platform.OpUpdate:
		who := "bot"
		if e.Op == platform.OpUpdate {
			who = "bot (edited)"
		}
		if e.Card != nil {
			m.add(at + " bot: " + cardStyle.Render(m.cardLine(e.TS, *e.Card)))
		} else {
			m.add(fmt.Sprintf("%s %s: %s", at, who, text))
		}
	case platform.OpEphemeral:
		m.add(fmt.Sprintf("%s bot, to %s only: %s", at, m.name(e.To), text))
	case platform.OpUpload:
		name := ""
		if len(e.Files) > 0 {
			name = e.Files[0].Name
		}
		m.add(fmt.Sprintf("%s bot uploaded %s: %s", at, name, text))
	case platform.OpReaction:
		m.add(fmt.Sprintf("%s bot reacts %s", at, e.Text))
	case platform.OpStatus:
		if e.Text != "" { // a cleared status is no news
			m.note(fmt.Sprintf("%s status: %s", at, e.Text))
		}
	case platform.OpSession:
		m.note(fmt.Sprintf("%s session: %s", at, e.Text))
	case platform.OpPrompts:
		m.add(fmt.Sprintf("%s suggested prompts: %s", at, strings.Join(e.Prompts, " | ")))
	default:
		m.add(fmt.Sprintf("%s %s: %s", at, e.Op, text))
	}
}

// where labels an entry's conversation: the channel and the thread's
// number in order of appearance.
func (m *model) where(e platform.Entry) string {
	root := cmp.Or(e.ThreadTS, e.TS)
	if root == "" {
		return "[" + e.ChannelID + "]"
	}
	key := e.ChannelID + "/" + root
	n, ok := m.threads[key]
	if !ok {
		n = len(m.threads) + 1
		m.threads[key] = n
	}
	return fmt.Sprintf("[%s #%d]", e.ChannelID, n)
}

func (m *model) name(id string) string {
	if r, ok := m.who[id]; ok {
		return r
	}
	return id
}

// cardLine numbers cards in order of appearance:
// "[card 1] approval · deploy: deploy prod (approve, deny)", and once
// resolved "[card 1] approval · deploy: deploy prod: approved by <@U…>".
func (m *model) cardLine(ts string, c pipeline.Card) string {
	n := m.cardNumber(ts)
	if n == 0 {
		m.cards = append(m.cards, ts)
		n = len(m.cards)
	}
	state := " (" + strings.Join(c.Actions, ", ") + ")"
	if len(c.Actions) == 0 {
		state = ": " + cmp.Or(c.Outcome, "resolved")
	}
	return fmt.Sprintf("[card %d] %s · %s: %s%s", n, c.Kind, c.Category, c.Body(), state)
}

func (m *model) cardNumber(ts string) int {
	for i, t := range m.cards {
		if t == ts {
			return i + 1
		}
	}
	return 0
}

func (m *model) cardRef(ts string) string {
	if n := m.cardNumber(ts); n > 0 {
		return fmt.Sprintf(" on card %d", n)
	}
	return ""
}
