package repl

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/persona-runtime/agent/internal/sim"
	"github.com/persona-runtime/agent/internal/sim/platform"
	"github.com/persona-runtime/agent/internal/sim/scripted"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// handle runs one line: a command, or a message from the actor.
func (m *model) handle(line string) tea.Cmd {
	if m.rooting {
		// Everything waits, commands too, until the root's ts is known: the
		// next message continues its thread, and order is kept.
		m.held = append(m.held, line)
		return nil
	}
	if !strings.HasPrefix(line, "/") {
		return m.send(line)
	}
	m.note("> " + line)
	name, rest, _ := strings.Cut(line, " ")
	args := strings.Fields(rest)
	var cmd tea.Cmd
	var err error
	switch name {
	case "/help":
		m.help()
	case "/quit", "/exit":
		return tea.Quit
	case "/scenario":
		cmd, err = m.scenario(args)
	case "/click":
		cmd, err = m.click(args)
	case "/stop":
		cmd = m.stop()
	case "/advance":
		cmd, err = m.advance(args)
	case "/restart":
		cmd, err = m.restart(args)
	case "/as":
		err = m.as(args)
	case "/channel":
		if len(args) != 1 || !isChannelID(args[0]) {
			err = errors.New("usage: /channel <channel_id> (C…, G… or D…)")
		} else {
			m.setChannel(args[0])
		}
	case "/dm":
		m.setChannel(m.layers["dm"])
	case "/layer":
		if len(args) != 1 || m.layers[args[0]] == "" {
			err = errors.New("usage: /layer trusted|allowed|restricted|dm")
		} else {
			m.setChannel(m.layers[args[0]])
		}
	case "/behavior", "/behaviour":
		err = m.behaviour(args)
	default:
		err = fmt.Errorf("unknown command %s: /help lists the commands", name)
	}
	if err != nil {
		m.fail(err)
	}
	return cmd
}

func (m *model) help() {
	ids := make([]string, len(sim.Roles))
	for i, r := range sim.Roles {
		ids[i] = r + " " + m.roles[r]
	}
	for _, l := range []string{
		"a line without / is a message from the actor in the current channel; in a channel",
		"  the first starts a thread (mentioning the bot) and the next ones continue it",
		"/help                  this list",
		"/scenario <name>       play " + filepath.Join(m.o.ScenarioDir, "<name>.yaml") + " (no name: list)",
		"/as <role or user id>  change the actor",
		"/click <n> <action>    approve, deny or always on card n",
		"/stop                  the platform's stop button of the newest turn at work",
		"/advance <duration>    move the simulated clock (90s, 2h): schedules due by then run",
		"/restart [duration]    stop the service, down for duration (none: 0s), and start it again",
		"/channel <channel_id>  talk in a channel (a new conversation)",
		"/dm                    talk in the DM " + m.layers["dm"] + " (a new conversation)",
		"/layer <layer>         trusted " + m.layers["trusted"] + ", allowed " + m.layers["allowed"] +
			", restricted " + m.layers["restricted"] + ", dm " + m.layers["dm"],
		"/behavior <name>       the stub agent's behaviour",
		"/quit                  quit (also Esc, Ctrl+C); PgUp/PgDn scroll, ↑/↓ recall",
		"roles: " + strings.Join(ids, ", "),
		"behaviours: " + strings.Join(scripted.Behaviours, ", "),
	} {
		m.note("  " + l)
	}
}

func isChannelID(s string) bool {
	if len(s) < 2 || !strings.ContainsRune("CDG", rune(s[0])) {
		return false
	}
	for _, r := range s {
		if (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// setChannel starts a new conversation in a channel.
func (m *model) setChannel(id string) {
	m.channel, m.thread = id, ""
	m.layer = string(pipeline.LayerRestricted)
	if p := m.sim.Service().Persona(); p != nil {
		m.layer = string(p.Layer(id, isDMChannel(id)))
	}
}

func isDMChannel(id string) bool { return strings.HasPrefix(id, "D") }

func (m *model) as(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: /as <role or user id>")
	}
	id := m.roles[args[0]]
	if id == "" {
		u, ok := sim.RoleUser(args[0])
		if !ok {
			return fmt.Errorf("unknown actor %q (want a role: %s, or a user id)", args[0], strings.Join(sim.Roles, ", "))
		}
		id = u
	}
	m.actorName, m.actor = args[0], id
	return nil
}

func (m *model) behaviour(args []string) error {
	sc := m.sim.Scripted()
	if sc == nil {
		return errors.New("/behavior needs the stub agent: this REPL runs the live model (--stub selects the stub)")
	}
	if len(args) != 1 {
		return fmt.Errorf("usage: /behavior <name> (one of %s)", strings.Join(scripted.Behaviours, ", "))
	}
	return sc.SetBehaviour(args[0])
}

// stop clicks the stop button of the newest agent session that shows a
// turn at work, as the actor.
func (m *model) stop() tea.Cmd {
	user, s, ctx := m.actor, m.sim, m.ctx
	m.busy++
	return func() tea.Msg {
		in, err := s.Stop(user)
		if err != nil {
			return settledMsg{err: err}
		}
		return settledMsg{in: in, err: s.Settle(ctx, in)}
	}
}

// advance moves the scheduler's simulated clock, as a scenario's
// `advance:` step does, and waits for the runs it makes due.
func (m *model) advance(args []string) (tea.Cmd, error) {
	var d time.Duration
	var err error
	if len(args) == 1 {
		d, err = time.ParseDuration(args[0])
	}
	if len(args) != 1 || err != nil || d <= 0 {
		return nil, errors.New("usage: /advance <duration>, like 90s or 2h")
	}
	s, ctx := m.sim, m.ctx
	m.busy++
	return func() tea.Msg { return settledMsg{err: s.Advance(ctx, d)} }, nil
}

// restart stops the service and starts it again on the same database,
// the simulated clock moved on by the time down, as a scenario's
// `restart:` step does, and waits for what the start sets going (the
// runs it catches up on).
func (m *model) restart(args []string) (tea.Cmd, error) {
	var d time.Duration
	var err error
	if len(args) == 1 {
		d, err = time.ParseDuration(args[0])
	}
	if len(args) > 1 || err != nil || d < 0 {
		return nil, errors.New("usage: /restart [duration], the time down, like 2h (none: at once)")
	}
	s, ctx := m.sim, m.ctx
	m.note(fmt.Sprintf("  restarting: down %v, up at %s", d, s.Now().Add(d).UTC().Format("2006-01-02 15:04 MST")))
	m.busy++
	return func() tea.Msg { return settledMsg{err: s.Restart(ctx, d)} }, nil
}

func (m *model) click(args []string) (tea.Cmd, error) {
	if len(args) != 2 {
		return nil, errors.New("usage: /click <n> <action> (approve, deny or always)")
	}
	n, err := strconv.Atoi(args[0])
	if err != nil || n < 1 {
		return nil, errors.New("usage: /click <n> <action>: n is a card's number")
	}
	if n > len(m.cards) {
		return nil, fmt.Errorf("no card %d: %d card(s) posted", n, len(m.cards))
	}
	action, ts := args[1], m.cards[n-1]
	cards := m.sim.Platform().Cards()
	var card platform.Card
	for _, c := range cards {
		if c.TS == ts {
			card = c
		}
	}
	switch {
	case card.Resolved:
		return nil, fmt.Errorf("card %d is resolved: %s", n, card.Card.Outcome)
	case !card.Offers(action):
		return nil, fmt.Errorf("card %d offers %s", n, strings.Join(card.Card.Actions, ", "))
	}
	user, s, ctx := m.actor, m.sim, m.ctx
	m.busy++
	return func() tea.Msg {
		in, err := s.Click(user, card, action)
		if err != nil {
			return settledMsg{err: err}
		}
		return settledMsg{in: in, err: s.Settle(ctx, in)}
	}, nil
}
