package golden

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/persona-runtime/agent/internal/sim"
	"github.com/persona-runtime/agent/internal/sim/platform"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Transcript is what a finished scenario produced, as the runner saw it.
type Transcript struct {
	Scenario *sim.Scenario
	// Entries are the platform's transcript: what people did, what the bot
	// showed.
	Entries []platform.Entry
	// Events are the injected events, in the order their inbound entries
	// stand in Entries.
	Events []Event
	// Tools are the tool calls the engine reported, in the order they
	// ended, and the runner's restarts among them.
	Tools []ToolCall
	// Home is the scenario's temporary home, written $AGENT_HOME; "" for
	// none.
	Home string
	// Bot is the bot's user id.
	Bot string
	// Personas are a team's personas (a scenario's `personas:`), the
	// scenario's own first; none for a persona alone. With them, each
	// line of a bot's says whose it is.
	Personas []Persona
	// Relays are the messages the platform delivered of its own accord
	// to a persona of the team: a post to the others, a person's message
	// to those it does not call.
	Relays []Relay
}

// Persona is a persona of a team: its name and its bot user.
type Persona struct {
	Name, User string
}

// Relay is a message delivered to a persona of a team by the platform.
type Relay struct {
	TS string // the message's
	To string // the persona's name
	// Dropped is the reason that persona's gateway dropped it; "" when it
	// did not.
	Dropped string
}

// Event is an event the runner injected.
type Event struct {
	// Type is the event's type: an app_mention is rendered as the same
	// message again.
	Type string
	// Dropped is the reason the gateway dropped it; "" when it did not.
	Dropped string
}

// Render renders the transcript of a finished scenario. Ids, timestamps
// and the temporary home are replaced by stable names, and no line ends in
// blanks, so that the same run renders the same text.
func Render(t Transcript) string {
	world := sim.DefaultWorld().Merge(t.Scenario.Soul)
	n := newRenamer()
	// Name every ts in transcript order first, so that a tool result that
	// quotes a later message's ts still gets a stable name.
	for _, m := range t.Entries {
		if m.Op == platform.OpInbound || m.Op == platform.OpPost || m.Op == platform.OpUpload {
			root := m.ThreadTS
			if root == "" {
				root = m.TS
			}
			n.thread(root)
			n.msg(m.TS)
		}
	}
	clean := func(s string) string {
		if t.Home != "" {
			s = strings.ReplaceAll(s, t.Home, "$AGENT_HOME")
		}
		return n.text(s)
	}
	var b strings.Builder
	sc := t.Scenario
	fmt.Fprintf(&b, "# %s\n", sc.Name)
	view := ""
	if sc.AgentView {
		view = " · agent view"
	}
	if sc.Tasks {
		view += " · tasks"
	}
	fmt.Fprintf(&b, "# layer %s · actor %s · agent %s%s\n", sc.Layer, sc.As, cmp.Or(sc.AgentBehavior, "reply"), view)
	if len(t.Personas) > 0 {
		b.WriteString(teamLine(t.Personas) + "\n")
	}
	relayed := map[string]bool{}
	relayDrops := func(ts string) {
		if ts == "" || relayed[ts] || len(t.Relays) == 0 {
			return
		}
		relayed[ts] = true
		for _, r := range t.Relays {
			if r.TS == ts && r.Dropped != "" {
				fmt.Fprintf(&b, "  dropped by %s: %s\n", r.To, r.Dropped)
			}
		}
	}
	inbound := 0
	ci := 0
	flushTools := func(upTo int) {
		for ci < len(t.Tools) && t.Tools[ci].After <= upTo {
			indent := "  "
			if t.Tools[ci].Plain {
				indent = ""
			}
			b.WriteString(indent + clean(t.Tools[ci].Line) + "\n")
			ci++
		}
	}
	for i, m := range t.Entries {
		flushTools(i)
		switch m.Op {
		case platform.OpInbound:
			var ev Event
			if inbound < len(t.Events) {
				ev = t.Events[inbound]
			}
			inbound++
			b.WriteString(clean(inboundLine(n, world, t.Bot, m, ev)) + "\n")
			if ev.Dropped != "" {
				fmt.Fprintf(&b, "  dropped: %s\n", ev.Dropped)
			}
			if m.Kind == pipeline.KindMessage {
				relayDrops(m.TS)
			}
		default:
			line := outboundLine(n, m)
			if len(t.Personas) > 0 {
				line = "< " + personaName(t.Personas, m.UserID) + " · " + strings.TrimPrefix(line, "< ")
			}
			b.WriteString(clean(line) + "\n")
			if m.Op == platform.OpPost {
				relayDrops(m.TS)
			}
		}
	}
	flushTools(len(t.Entries))
	// No trailing blanks: editors strip them, and the file must not change.
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	return strings.Join(lines, "\n")
}

// teamLine names a team's personas and their bots.
func teamLine(ps []Persona) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = fmt.Sprintf("%s <@%s>", p.Name, p.User)
	}
	return "# personas " + strings.Join(names, ", ")
}

// personaName is the name of the persona whose bot user is user; the
// user's mention when none is.
func personaName(ps []Persona, user string) string {
	for _, p := range ps {
		if p.User == user {
			return p.Name
		}
	}
	return "<@" + user + ">"
}
