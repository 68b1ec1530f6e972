package repl

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/persona-runtime/agent/internal/sim"
	"github.com/persona-runtime/agent/internal/sim/runner"
)

// scenarioPlay is a scenario being played into the transcript.
type scenarioPlay struct {
	player           *runner.Player
	passed, expected int
}

// scenario loads a scenario, applies its layer, actor and behaviour, and
// plays its steps one command at a time with the runner's player,
// reporting each expectation.
func (m *model) scenario(args []string) (tea.Cmd, error) {
	dir := m.o.ScenarioDir
	if len(args) == 0 {
		files, err := sim.Discover(dir, nil)
		names := make([]string, len(files))
		for i, f := range files {
			names[i] = strings.TrimSuffix(filepath.Base(f), ".yaml")
		}
		m.note(fmt.Sprintf("  scenarios in %s: %s", dir, cmp.Or(strings.Join(names, ", "), "none")))
		return nil, err
	}
	file := args[0]
	if !strings.HasSuffix(file, ".yaml") && !strings.ContainsRune(file, os.PathSeparator) {
		file = filepath.Join(dir, file+".yaml")
	}
	sc, err := runner.Load(file)
	if err != nil {
		return nil, err
	}
	if len(sc.Personas) > 0 {
		return nil, fmt.Errorf("%s runs a team of personas (personas:): the REPL runs one; play it with agent sim run", file)
	}
	scripted := m.sim.Scripted()
	if scripted != nil {
		if err := scripted.SetBehaviour(sc.AgentBehavior); err != nil {
			return nil, err
		}
	}
	if err := m.as([]string{sc.As}); err != nil {
		return nil, err
	}
	m.setChannel(m.layers[sc.Layer])
	m.note(fmt.Sprintf("  playing %q: layer %s, as %s, behaviour %s", sc.Name, sc.Layer, sc.As, sc.AgentBehavior))
	if sc.Soul != nil {
		m.note("  its soul overrides are not applied: the REPL keeps its persona")
	}
	if scripted == nil {
		m.note("  the live model ignores agent_behavior")
	}
	return m.step(&scenarioPlay{player: runner.NewPlayer(m.sim, sc)}, 0), nil
}

func (m *model) step(p *scenarioPlay, i int) tea.Cmd {
	ctx := m.ctx
	m.busy++
	return func() tea.Msg { return stepMsg{play: p, i: i, err: p.player.Play(ctx, p.player.Scenario().Steps[i])} }
}

func (m *model) stepDone(msg stepMsg) tea.Cmd {
	p := msg.play
	steps := p.player.Scenario().Steps
	st := steps[msg.i]
	label := fmt.Sprintf("step %d %s", msg.i+1, st.Kind)
	switch st.Kind {
	case sim.StepSend, sim.StepClick:
		if msg.err != nil {
			m.add(badStyle.Render(fmt.Sprintf("  ✗ %s: %v; the scenario stops", label, msg.err)))
			return nil
		}
		if st.Kind == sim.StepSend {
			m.drop(p.player.LastSend())
		}
	default:
		p.expected++
		if msg.err != nil {
			m.add(badStyle.Render(fmt.Sprintf("  ✗ %s: %v", label, msg.err)))
		} else {
			p.passed++
			m.add(goodStyle.Render(fmt.Sprintf("  ✓ %s %s", label, strings.TrimSpace(st.Contains+" "+st.Reason))))
		}
	}
	if msg.i+1 < len(steps) {
		return m.step(p, msg.i+1)
	}
	m.note(fmt.Sprintf("  scenario %q: %d/%d expectations passed", p.player.Scenario().Name, p.passed, p.expected))
	return nil
}
