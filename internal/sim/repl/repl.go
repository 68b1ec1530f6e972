package repl

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/persona-runtime/agent/internal/sim/platform"
	"github.com/persona-runtime/agent/internal/sim/runner"
)

// liveSettle bounds the wait for a live model's turn: a turn with tools
// takes minutes, and the transcript shows its progress meanwhile.
const liveSettle = 3 * time.Minute

// Options configure the REPL's screen.
type Options struct {
	// Title opens the header: the binary's name and version.
	Title string
	// Where says where the simulation runs, in the first note.
	Where string
	// ScenarioDir is where /scenario finds scenarios by name.
	ScenarioDir string
	In          io.Reader
	Out         io.Writer
}

// Run starts the simulation of so and runs the REPL full screen until the
// person quits or ctx is done; it then closes the simulation. Steps settle
// on their own events (runner.Own): an earlier turn may wait on a card for
// as long as nobody clicks.
func Run(ctx context.Context, so runner.Options, o Options) error {
	// The observer feeds the program; nothing is posted before the first
	// injection, which only a running program makes.
	var prog atomic.Pointer[tea.Program]
	so.Observer = func(e platform.Entry) {
		if p := prog.Load(); p != nil {
			p.Send(entryMsg(e))
		}
	}
	so.Scope = runner.Own
	// A person at the REPL sees the platform as it is now: agent sessions
	// and their stop button (/stop).
	so.AgentView = true
	if so.Model != nil {
		so.SettleTimeout = liveSettle
	}
	s, err := runner.Start(ctx, so)
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	replCtx, cancel := context.WithCancel(ctx)
	m := newModel(replCtx, s, o)
	m.note(fmt.Sprintf("%s · %s · /help lists the commands, Esc or Ctrl+C quits", o.Where, m.agentMode()))
	p := tea.NewProgram(m, tea.WithAltScreen(), tea.WithInput(o.In), tea.WithOutput(o.Out),
		tea.WithContext(ctx), tea.WithoutSignalHandler())
	prog.Store(p)
	_, runErr := p.Run()
	cancel() // ends the settles still waiting
	closeErr := s.Close()
	if runErr != nil && ctx.Err() == nil {
		return fmt.Errorf("sim: %w", runErr)
	}
	return closeErr
}

// The REPL's messages: a transcript entry, an injected message, a settled
// send or click, a played scenario step.
type (
	entryMsg    platform.Entry
	injectedMsg struct {
		root    bool
		channel string
		in      runner.Injected
		err     error
	}
	settledMsg struct {
		in  runner.Injected
		err error
	}
	stepMsg struct {
		play *scenarioPlay
		i    int
		err  error
	}
)
