package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/persona-runtime/agent/internal/sim"
)

// scenarioPlay is a scenario being played into the transcript.
type scenarioPlay struct {
	run              *scenarioRun
	passed, expected int
}

// scenario loads a scenario, applies its layer, actor and behaviour, and
// plays its steps one command at a time, reporting each expectation.
func (m *replModel) scenario(args []string) (tea.Cmd, error) {
	if len(args) == 0 {
		files, err := sim.Discover(m.scenarioDir, nil)
		names := make([]string, len(files))
		for i, f := range files {
			names[i] = strings.TrimSuffix(filepath.Base(f), ".yaml")
		}
		m.note(fmt.Sprintf("  scenarios in %s: %s", m.scenarioDir, orDefault(strings.Join(names, ", "), "none")))
		return nil, err
	}
	file := args[0]
	if !strings.HasSuffix(file, ".yaml") && !strings.ContainsRune(file, os.PathSeparator) {
		file = filepath.Join(m.scenarioDir, file+".yaml")
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	sc, err := sim.ParseScenario(file, data)
	if err != nil {
		return nil, err
	}
	if m.w.stub != nil {
		if err := m.w.stub.SetBehaviour(sc.AgentBehavior); err != nil {
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
	if m.w.stub == nil {
		m.note("  the live model ignores agent_behavior")
	}
	return m.step(&scenarioPlay{run: &scenarioRun{w: m.w, sc: sc, threads: map[string]string{}}}, 0), nil
}

func (m *replModel) step(p *scenarioPlay, i int) tea.Cmd {
	ctx := m.ctx
	m.busy++
	return func() tea.Msg { return stepMsg{play: p, i: i, err: p.play(ctx, p.run.sc.Steps[i])} }
}

// play runs one step: sends and clicks as runScenario does, but settling on
// their own events (settleEvents); expectations with runScenario's checks.
func (p *scenarioPlay) play(ctx context.Context, st sim.Step) error {
	r := p.run
	switch st.Kind {
	case "send":
		user, err := r.actor(st.As)
		if err != nil {
			return err
		}
		channel, thread := sim.LayerChannel(r.sc.Layer), ""
		if st.Channel != "" {
			channel = st.Channel
		}
		if st.DM {
			channel = sim.LayerChannel("dm")
		}
		if at, ok := r.threads[st.Thread]; ok && st.Thread != "" {
			channel, thread, _ = strings.Cut(at, "/")
		}
		before := unresolvedCards(r.w.mem.Cards())
		ts, ids, err := injectMessage(r.w, user, channel, thread, st.Text)
		if err != nil {
			return err
		}
		r.lastSent, r.lastTwin = ids[0], ""
		if len(ids) > 1 {
			r.lastTwin = ids[1]
		}
		if st.Thread != "" && thread == "" {
			r.threads[st.Thread] = channel + "/" + ts
		}
		return settleEvents(ctx, r.w, before, ids)
	case "click":
		user, err := r.actor(st.As)
		if err != nil {
			return err
		}
		cards := r.w.mem.Cards()
		for i := len(cards) - 1; i >= 0; i-- {
			if cards[i].Offers(st.Action) {
				id, err := injectClick(r.w, user, cards[i], st.Action)
				if err != nil {
					return err
				}
				return settleEvents(ctx, r.w, unresolvedCards(cards)-1, []string{id})
			}
		}
		return fmt.Errorf("expected an unresolved card offering %q; saw %d card(s), none offering it", st.Action, len(cards))
	}
	return r.step(ctx, st)
}

func (m *replModel) stepDone(msg stepMsg) tea.Cmd {
	p, st := msg.play, msg.play.run.sc.Steps[msg.i]
	label := fmt.Sprintf("step %d %s", msg.i+1, st.Kind)
	switch st.Kind {
	case "send", "click":
		if msg.err != nil {
			m.add(replBadStyle.Render(fmt.Sprintf("  ✗ %s: %v; the scenario stops", label, msg.err)))
			return nil
		}
		if st.Kind == "send" {
			if p.run.lastTwin != "" {
				m.drop([]string{p.run.lastSent, p.run.lastTwin})
			} else {
				m.drop([]string{p.run.lastSent})
			}
		}
	default:
		p.expected++
		if msg.err != nil {
			m.add(replBadStyle.Render(fmt.Sprintf("  ✗ %s: %v", label, msg.err)))
		} else {
			p.passed++
			m.add(replGoodStyle.Render(fmt.Sprintf("  ✓ %s %s", label, strings.TrimSpace(st.Contains+" "+st.Reason))))
		}
	}
	if msg.i+1 < len(p.run.sc.Steps) {
		return m.step(p, msg.i+1)
	}
	m.note(fmt.Sprintf("  scenario %q: %d/%d expectations passed", p.run.sc.Name, p.passed, p.expected))
	return nil
}
