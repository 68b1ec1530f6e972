package repl

import (
	tea "github.com/charmbracelet/bubbletea"

	"github.com/persona-runtime/agent/internal/sim/runner"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// send injects a message from the actor in the current conversation: the
// runner's send step, settled by the next command once its ts is known.
func (m *model) send(text string) tea.Cmd {
	user, channel, thread, s := m.actor, m.channel, m.thread, m.sim
	m.rooting = thread == ""
	m.busy++
	return func() tea.Msg {
		in, err := s.Send(user, channel, thread, text)
		return injectedMsg{root: thread == "", channel: channel, in: in, err: err}
	}
}

func (m *model) injected(msg injectedMsg) tea.Cmd {
	if msg.root {
		m.rooting = false
		if msg.err == nil && m.channel == msg.channel && m.thread == "" {
			m.thread = msg.in.TS
		}
	}
	var cmds []tea.Cmd
	if msg.err != nil {
		m.busy--
		m.fail(msg.err)
	} else {
		ctx, s := m.ctx, m.sim
		cmds = append(cmds, func() tea.Msg { return settledMsg{in: msg.in, err: s.Settle(ctx, msg.in)} })
	}
	held := m.held
	m.held = nil
	for _, l := range held {
		cmds = append(cmds, m.handle(l)) // held again behind a new root
	}
	return tea.Batch(cmds...)
}

// drop shows why a send or click was dropped. A channel root arrives twice
// and one copy is dropped as a duplicate of the other: that is no drop.
func (m *model) drop(in runner.Injected) {
	reason := ""
	for i, r := range m.sim.Drops(in) {
		if r == "" {
			reason = ""
			break
		}
		if i == 0 || reason == pipeline.DropDuplicate {
			reason = r
		}
	}
	if reason != "" {
		m.add(badStyle.Render("  dropped: " + reason))
	}
}
