package repl

import (
	"context"
	"strings"

	"github.com/charmbracelet/bubbles/textinput"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/persona-runtime/agent/internal/sim"
	"github.com/persona-runtime/agent/internal/sim/platform"
	"github.com/persona-runtime/agent/internal/sim/runner"
)

// model is the REPL. Only Update touches it; the commands it returns
// touch the simulation, never the model (the observer's Send would
// deadlock an Update that injects).
type model struct {
	ctx    context.Context
	sim    *runner.Sim
	o      Options
	roles  map[string]string // role → user id
	who    map[string]string // user id → role
	layers map[string]string // layer → channel id

	actor, actorName string // user id; the role or id typed
	channel, layer   string
	thread           string   // root ts of the current conversation; "" starts one
	rooting          bool     // a root is on its way: its ts decides the thread
	held             []string // lines typed meanwhile, handled once it is known

	lines   []string        // the transcript, rendered
	cards   []string        // card ts by number - 1
	threads map[string]int  // channel/root ts → conversation number
	shown   map[string]bool // channel/ts of the inbound messages shown
	busy    int
	history []string
	histPos int

	width, height int
	vp            viewport.Model
	in            textinput.Model
}

var (
	headerStyle = lipgloss.NewStyle().Bold(true).Reverse(true).Inline(true)
	noteStyle   = lipgloss.NewStyle().Faint(true)
	badStyle    = lipgloss.NewStyle().Foreground(lipgloss.Color("9"))
	goodStyle   = lipgloss.NewStyle().Foreground(lipgloss.Color("10"))
	cardStyle   = lipgloss.NewStyle().Foreground(lipgloss.Color("11"))
)

func newModel(ctx context.Context, s *runner.Sim, o Options) *model {
	m := &model{ctx: ctx, sim: s, o: o, threads: map[string]int{}, shown: map[string]bool{},
		width: 80, height: 24, who: map[string]string{}}
	// Roles and layers follow the running persona where it names them
	// (shared config, --soul), the sim world's otherwise.
	m.roles = map[string]string{"manager": sim.Manager, "backup": sim.Backup, "approver": sim.Approver,
		"member": sim.Member, "outsider": sim.Outsider}
	m.layers = map[string]string{"trusted": sim.TrustedChannel, "allowed": sim.AllowedChannel,
		"restricted": sim.RestrictedChannel, "dm": sim.DMChannel}
	if p := s.Service().Persona(); p != nil {
		set := func(m map[string]string, k, v string) {
			if v != "" {
				m[k] = v
			}
		}
		set(m.roles, "manager", p.Manager.UserID)
		set(m.roles, "backup", p.BackupManager.UserID)
		if len(p.Approvers) > 0 {
			set(m.roles, "approver", p.Approvers[0].UserID)
		}
		if len(p.Trusted) > 0 {
			set(m.layers, "trusted", p.Trusted[0].ID)
		}
		if len(p.Allowed) > 0 {
			set(m.layers, "allowed", p.Allowed[0].ID)
		}
	}
	for i := len(sim.Roles) - 1; i >= 0; i-- { // the first role wins an id named twice
		m.who[m.roles[sim.Roles[i]]] = sim.Roles[i]
	}
	m.actorName, m.actor = "manager", m.roles["manager"]
	m.setChannel(m.layers["dm"])
	m.vp = viewport.New(m.width, m.height-2)
	m.in = textinput.New()
	m.in.Placeholder = "a message, or /help"
	m.in.Focus()
	return m
}

func (m *model) Init() tea.Cmd { return textinput.Blink }

func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.vp.Width, m.vp.Height = msg.Width, max(1, msg.Height-2)
		m.in.Width = max(1, msg.Width-len(m.in.Prompt)-1)
		m.refresh()
		return m, nil
	case tea.KeyMsg:
		switch msg.Type {
		case tea.KeyCtrlC, tea.KeyEsc:
			return m, tea.Quit
		case tea.KeyEnter:
			line := strings.TrimSpace(m.in.Value())
			m.in.Reset()
			if line == "" {
				return m, nil
			}
			m.history, m.histPos = append(m.history, line), len(m.history)+1
			return m, m.handle(line)
		case tea.KeyPgUp:
			m.vp.PageUp()
			return m, nil
		case tea.KeyPgDown:
			m.vp.PageDown()
			return m, nil
		case tea.KeyUp, tea.KeyDown:
			m.recall(msg.Type == tea.KeyUp)
			return m, nil
		}
	case entryMsg:
		m.entry(platform.Entry(msg))
		return m, nil
	case injectedMsg:
		return m, m.injected(msg)
	case settledMsg:
		m.busy--
		if msg.err != nil && m.ctx.Err() == nil {
			m.note("  " + msg.err.Error())
		}
		m.drop(msg.in)
		return m, nil
	case stepMsg:
		m.busy--
		return m, m.stepDone(msg)
	}
	var cmd tea.Cmd
	m.in, cmd = m.in.Update(msg)
	return m, cmd
}

func (m *model) recall(up bool) {
	switch {
	case up && m.histPos > 0:
		m.histPos--
	case !up && m.histPos < len(m.history):
		m.histPos++
	}
	m.in.Reset()
	if m.histPos < len(m.history) {
		m.in.SetValue(m.history[m.histPos])
	}
}

func (m *model) View() string {
	return m.header() + "\n" + m.vp.View() + "\n" + m.in.View()
}

// header is one line: version, agent, actor, channel and layer.
func (m *model) header() string {
	parts := []string{m.o.Title, m.agentMode(), m.actorName + " " + m.actor, m.channel + " " + m.layer}
	if m.actorName == m.actor {
		parts[2] = m.actor
	}
	if m.busy > 0 {
		parts = append(parts, "working…")
	}
	h := strings.Join(parts, " │ ")
	if pad := m.width - lipgloss.Width(h); pad > 0 {
		h += strings.Repeat(" ", pad)
	}
	return headerStyle.MaxWidth(m.width).Render(h)
}

// agentMode is "stub (<behaviour>)", or "live" and the model's name.
func (m *model) agentMode() string {
	if sc := m.sim.Scripted(); sc != nil {
		return "stub (" + sc.Behaviour() + ")"
	}
	if name := m.sim.Model().Model(); name != "" {
		return "live · " + name
	}
	return "live"
}

// add appends a transcript line, following the end unless the reader
// scrolled up.
func (m *model) add(line string) {
	follow := m.vp.AtBottom()
	m.lines = append(m.lines, line)
	m.refresh()
	if follow {
		m.vp.GotoBottom()
	}
}

func (m *model) note(s string)  { m.add(noteStyle.Render(s)) }
func (m *model) fail(err error) { m.add(badStyle.Render("  " + err.Error())) }

func (m *model) refresh() {
	wrap := lipgloss.NewStyle().Width(max(1, m.width))
	out := make([]string, len(m.lines))
	for i, l := range m.lines {
		out[i] = wrap.Render(l)
	}
	m.vp.SetContent(strings.Join(out, "\n"))
}
